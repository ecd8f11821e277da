// The README and docs/ against the code: generated reference tables are current, every command
// block names the test that runs it (and that test reads the page), the configuration examples
// load with the agent's own loader, and the README's two set-up commands are the ones CI runs.
import { access, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../../src/config/agentConfig.ts';
import { chartValues, UndocumentedValueError } from '../../docs/chartValues.ts';
import { configKeys } from '../../docs/configReference.ts';
import { generatedPages } from '../../docs/generate.ts';
import { MissingRegionError, replaceRegion } from '../../docs/regions.ts';
import { docBlock, docBlocks, shellCommands } from '../../support/docBlocks.ts';

const ROOT = new URL('../../..', import.meta.url).pathname;
const read = (path: string) => readFile(join(ROOT, path), 'utf8');

async function pages(): Promise<string[]> {
  const docs = (await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  return ['README.md', ...docs.sort(), 'bench/README.md', 'charts/k8s-listener/README.md'];
}

describe('generated reference tables', () => {
  it('are current: `npm run docs` would change nothing', async () => {
    const stale = (await generatedPages()).filter((p) => p.current !== p.generated).map((p) => p.file);
    expect(stale, 'run npm run docs').toEqual([]);
  });

  it('document every configuration key, with the environment variables the loader reads', () => {
    const keys = configKeys();
    expect(keys.find((k) => k.path === 'listenerId')).toMatchObject({
      default: '**required**',
      env: 'K8S_LISTENER_LISTENER_ID',
    });
    expect(keys.find((k) => k.path === 'reconcile.prune.keepDatabaseVolumes')).toMatchObject({
      type: 'boolean',
      default: '`true`',
    });
    expect(keys.every((k) => k.description.length > 0)).toBe(true);
  });

  it('refuse a chart value without a description, naming it', () => {
    const values = 'a: 1\n# -- documented\nb: 2\nc:\n  d: 3\n';
    expect(() => chartValues(values, {})).toThrow(UndocumentedValueError);
    expect(() => chartValues(values, {})).toThrow('a, c.d');
    expect(chartValues('# -- the answer\na: 42\n', { properties: { a: { type: 'integer' } } })).toEqual([
      { key: 'a', type: 'integer', default: '42', description: 'the answer' },
    ]);
  });

  it('live between markers, and a page without them is an error', () => {
    const page = 'intro\n<!-- generated:x -->\nold\n<!-- end:x -->\nafter\n';
    expect(replaceRegion(page, 'p.md', 'x', 'new')).toBe(
      'intro\n<!-- generated:x -->\nnew\n<!-- end:x -->\nafter\n',
    );
    expect(() => replaceRegion('no markers', 'p.md', 'x', 'new')).toThrow(MissingRegionError);
  });
});

describe('command blocks of the README and docs/', () => {
  it('each name a test that exists and reads that page', async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const page of await pages()) {
      for (const block of await docBlocks(page)) {
        if (block.lang !== 'sh' && block.lang !== 'yaml') continue;
        checked++;
        const where = `${page} (${block.heading}): ${block.text.split('\n')[0]}`;
        if (block.testedBy.length === 0) problems.push(`${where}: no <!-- tested-by: FILE --> line`);
        for (const file of block.testedBy) {
          const text = await read(file).catch(() => undefined);
          if (text === undefined) problems.push(`${where}: ${file} does not exist`);
          else if (!text.includes(page)) problems.push(`${where}: ${file} does not read ${page}`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(10);
  });
});

describe("the README's two commands", () => {
  it('are the demo, which demo.test.ts runs, and the test command, which .ci/run runs', async () => {
    const [demo, test] = (await docBlocks('README.md')).filter((b) => b.lang === 'sh');
    expect(shellCommands(demo?.text ?? '')).toEqual(['npm ci && npm run demo']);
    expect(shellCommands(test?.text ?? '')).toEqual(['npm ci && npm test']);
    const scripts = JSON.parse(await read('package.json')).scripts as Record<string, string>;
    expect(scripts.demo).toBe('node test/cluster/demo.ts');
    expect(await read('test/integration/demo.test.ts')).toContain(
      "new URL('../cluster/demo.ts', import.meta.url)",
    );
    const ci = await read('.ci/run');
    expect(ci).toMatch(/^npm ci\b/m);
    expect(ci).toMatch(/^npm test\b/m);
  });
});

describe('configuration examples', () => {
  it.each([
    ['README.md', 'Configure'],
    ['docs/configuration.md', 'Configuration'],
  ])('%s (%s) loads with the agent’s own loader', async (page, heading) => {
    const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-docs-'));
    const file = join(dir, 'config.yaml');
    await writeFile(file, await docBlock(page, heading, 'yaml'));
    const config = await loadAgentConfig({ file, env: {} });
    expect(config.namespaces).toEqual(['apps', 'apps-staging']);
    expect(config.controlPlane.apiKeyFile).toBe('/var/run/secrets/k8s-listener/api-key');
  });
});

describe('development commands (docs/development.md)', () => {
  it('name scripts of package.json and projects of the vitest configuration', async () => {
    const scripts = JSON.parse(await read('package.json')).scripts as Record<string, string>;
    const vitest = await read('vitest.config.ts');
    const commands = shellCommands(await docBlock('docs/development.md', 'Development'));
    expect(commands.length).toBeGreaterThan(3);
    for (const command of commands) {
      for (const part of command.split('&&').map((p) => p.trim())) {
        const script = /^npm (?:run (\S+)|(test))/.exec(part);
        const project = /^npx vitest run --project (\S+)/.exec(part);
        if (script) expect(scripts, part).toHaveProperty(script[1] ?? script[2] ?? '');
        else if (project) expect(vitest, part).toContain(`name: '${project[1]}'`);
        else expect.fail(`unrecognised command in docs/development.md: ${part}`);
      }
    }
    await access(join(ROOT, 'test/docs/generate.ts'));
  });
});
