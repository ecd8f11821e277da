// The agent's version, recorded on its listener at registration.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const pkg = require('../package.json') as { version: string };

export const AGENT_VERSION: string = pkg.version;
