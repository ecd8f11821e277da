// The agent's version, recorded on its listener at registration. Imported rather than read at run
// time, so that the bundle in dist/ carries it wherever it is installed.
import pkg from '../package.json' with { type: 'json' };

export const AGENT_VERSION: string = pkg.version;
