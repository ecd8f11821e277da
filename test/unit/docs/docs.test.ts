// The README and docs/ against the code: generated reference tables are current, every command
// block names the test that runs it (and that test reads the page and that block), the
// configuration examples load with the agent's own loader, and the README's two set-up commands
// and docs/development.md's commands are scripts of package.json and the ones CI runs; no paragraph
// of docs/architecture.md runs past 200 words.
import { access, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../../src/config/agentConfig.ts';
import {
  benchTableMarkdown,
  fluxTableMarkdown,
  microTableMarkdown,
  parseBenchResult,
  realNodePhasesTableMarkdown,
  realNodeTableMarkdown,
  renderSizeTableMarkdown,
} from '../../docs/benchTables.ts';
import { chartValues, UndocumentedValueError } from '../../docs/chartValues.ts';
import { configKeys } from '../../docs/configReference.ts';
import { generatedPages } from '../../docs/generate.ts';
import { MissingRegionError, replaceRegion } from '../../docs/regions.ts';
import {
  docBlock,
  docBlockCalls,
  docBlocks,
  findDocBlock,
  isShellBlock,
  parseDocBlocks,
  shellCommands,
} from '../../support/docBlocks.ts';

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

describe('bench:node records', () => {
  it('are read by their file name and tabled with their medians and the node at rest', () => {
    const record = {
      kind: 'real-node',
      startedAt: '2026-11-26T14:00:00.000Z',
      runs: 2,
      restSeconds: 60,
      firstAnsweredRunS: [30, 40],
      newRevisionAnsweredRunS: [12, 14],
      medianFirstAnsweredRunS: 35,
      medianNewRevisionAnsweredRunS: 13,
      nodeAtRest: { kubelet: { cpuPercent: 1.5, rssMiB: 90 }, containerd: { cpuPercent: 0.25, rssMiB: 47 } },
    };
    const parsed = parseBenchResult('2026-11-26T14-00-00-000Z-real-node.json', JSON.stringify(record));
    expect(parsed.kind).toBe('real-node');
    if (parsed.kind !== 'real-node') return;
    expect(realNodeTableMarkdown([parsed.result]).split('\n')[2]).toBe(
      '| 2026-11-26 14:00 | 2 | 35.0 s | 13.0 s | 1.8 % / 137 MiB | kubelet 1.5 % / 90 MiB; containerd 0.25 % / 47 MiB |',
    );
    expect(() => parseBenchResult('x-real-node.json', JSON.stringify({ ...record, runs: 'two' }))).toThrow(
      /x-real-node.json/,
    );
  });

  it('table the phases of a deploy where the record has them, newest first, and leave out a record without', () => {
    const base = {
      kind: 'real-node',
      runs: 5,
      restSeconds: 60,
      firstAnsweredRunS: [9],
      newRevisionAnsweredRunS: [4],
      medianFirstAnsweredRunS: 9,
      medianNewRevisionAnsweredRunS: 4,
      nodeAtRest: {},
    };
    const phases = {
      controlPlaneToPoll: 0.8,
      agentRenderApply: 0.3,
      scheduling: 0.1,
      podStart: 0.9,
      imagePull: 0,
      storesReadyAfterApply: 4,
      serverWaitedForStores: 3.2,
      serverReady: 2.5,
      firstRun: 0.1,
      deployedReceivedAfterReady: 0.4,
      serverRestarts: 0,
    };
    const parse = (startedAt: string, extra: object) => {
      const parsed = parseBenchResult(
        `${startedAt}-real-node.json`,
        JSON.stringify({ ...base, startedAt, ...extra }),
      );
      if (parsed.kind !== 'real-node') throw new Error('not a real-node record');
      return parsed.result;
    };
    const table = realNodePhasesTableMarkdown([
      parse('2026-11-26T14:00:00.000Z', {}),
      parse('2026-11-27T10:00:00.000Z', { medianDeployPhasesS: phases }),
      parse('2026-11-27T11:00:00.000Z', { medianDeployPhasesS: { ...phases, serverRestarts: 3 } }),
    ]).split('\n');
    expect(table).toHaveLength(4);
    expect(table[2]).toBe(
      '| 2026-11-27 11:00 | 9.0 s | 0.8 s | 0.3 s | 0.1 s | 0.9 s | 0.0 s | 4.0 s | 3.2 s | 2.5 s | 0.1 s | 0.4 s | 3 |',
    );
    expect(table[3]).toContain('| 2026-11-27 10:00 |');
  });
});

describe('bench:render-size records', () => {
  it('are tabled as the newest run, a row per shape and size, with the time per KiB', () => {
    const record = (startedAt: string, renderMs: number) => ({
      benchmark: 'render-size',
      startedAt,
      rows: [{ shape: 'label keys', size: 64, inputKiB: 2, parseMs: 0.5, renderMs, outcome: 'rendered' }],
      machine: { loadAverageAtStart: [0.5] },
    });
    const parse = (startedAt: string, renderMs: number) => {
      const parsed = parseBenchResult(
        `${startedAt}-render-size.json`,
        JSON.stringify(record(startedAt, renderMs)),
      );
      if (parsed.kind !== 'render-size') throw new Error(`read as ${parsed.kind}`);
      return parsed.result;
    };
    const lines = renderSizeTableMarkdown([
      parse('2026-11-27T17:00:00.000Z', 1.5),
      parse('2026-11-27T16:00:00.000Z', 9),
    ]).split('\n');
    expect(lines[0]).toBe('Run 2026-11-27 17:00 UTC, load at start 0.50.');
    expect(lines[4]).toBe('| label keys | 64 | 2 | 0.50 | 1.50 | 1000.0 | rendered |');
    expect(lines).toHaveLength(6);
  });
});

describe('bench:resync records', () => {
  it('are tabled as the newest run of each N, apart from render and poll', () => {
    const record = (startedAt: string, deployments: number, medianMs: number) => {
      const parsed = parseBenchResult(
        `${startedAt}-resync.json`,
        JSON.stringify({
          benchmark: 'resync',
          startedAt,
          deployments,
          medianMs,
          maxMs: medianMs * 2,
          machine: { loadAverageAtStart: [0.5] },
        }),
      );
      if (parsed.kind !== 'micro') throw new Error(`read as ${parsed.kind}`);
      return parsed.result;
    };
    const rows = microTableMarkdown([
      record('2026-11-27T04:00:00.000Z', 1000, 0.2),
      record('2026-11-27T04:10:00.000Z', 10000, 0.25),
      record('2026-11-27T03:00:00.000Z', 10000, 0.9),
    ]).split('\n');
    expect(rows.slice(2, 4)).toEqual([
      '| 2026-11-27 04:10 | resync | median 0.250 ms, max 0.500 ms of CPU per deployment, a full resync of 10,000 converged deployments | 0.50 |',
      '| 2026-11-27 04:00 | resync | median 0.200 ms, max 0.400 ms of CPU per deployment, a full resync of 1,000 converged deployments | 0.50 |',
    ]);
    expect(rows[4]).toBe('');
  });
});

describe('bench:sync records', () => {
  it('are tabled as the newest unprofiled run of each kind for each N and controller rate; the older stay in bench/results', () => {
    const run = (startedAt: string, extra: Record<string, unknown> = {}) => {
      const parsed = parseBenchResult(
        `${startedAt}-1000.json`,
        JSON.stringify({
          startedAt,
          deployments: 1000,
          coldSync: { appliedS: 100 },
          memory: { peakRssMiB: 170 },
          ...extra,
        }),
      );
      if (parsed.kind !== 'sync') throw new Error('not a sync record');
      return parsed.result;
    };
    const rows = benchTableMarkdown([
      run('2026-11-20T10:00:00Z'),
      run('2026-11-21T10:00:00Z', { floorS: 80, kubectlS: 160 }),
      run('2026-11-22T10:00:00Z'),
      run('2026-11-23T10:00:00Z', { clusterControllerManagerQps: 100 }),
      run('2026-11-19T10:00:00Z', { deployments: 3000 }),
      // A profiled run is no figure: the profiler's overhead is in its times.
      run('2026-11-24T10:00:00Z', { cpuProfileDir: '/tmp/prof' }),
      run('2026-11-25T10:00:00Z', { cpuProfile: 'profiles/2026-11-25T10-00-00-000Z-1000.md' }),
    ])
      .split('\n')
      .slice(2)
      .filter((line) => line !== '');
    expect(rows.map((row) => row.split(' | ').slice(0, 3).join(' | '))).toEqual([
      '| 3,000 | 2026-11-19 10:00 | agent floor kubectl, 20',
      '| 1,000 | 2026-11-23 10:00 | agent floor kubectl, 100',
      '| 1,000 | 2026-11-22 10:00 | agent floor kubectl, 20',
      '| 1,000 | 2026-11-21 10:00 | agent floor kubectl, 20',
    ]);
    expect(rows[3]).toContain('| 80.0 / 160.0 | 1.25 | 1.60 |');
  });
});

describe('bench/README.md', () => {
  it('stays within 10 KB, current figures only: no dated narrative (git keeps the history)', async () => {
    const text = await read('bench/README.md');
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(10 * 1024);
    expect(text).not.toMatch(/\b(Until|Before|Since|Runs before) 20\d\d-|the earlier series/);
  });
});

describe('bench:sync records with Flux', () => {
  it('are tabled as the newest of each N and Flux setting, each cell Flux / agent', () => {
    const flux = {
      version: 'v1.9.6',
      settingsFrom: 'agent',
      appliedS: 60,
      healthyS: 90,
      cpuAtAppliedS: 40,
      coldRequestsPerDeployment: { GET: 20, PATCH: 30 },
      steady: { writes: 0 },
      changeToApplied: { p99Ms: 8000 },
      resync: { cpuMsPerDeployment: 150 },
      peakRssMiB: { sourceController: 90, kustomizeController: 160, both: 250 },
    };
    const run = (startedAt: string, extra: Record<string, unknown>) => {
      const parsed = parseBenchResult(
        `${startedAt}-100.json`,
        JSON.stringify({
          startedAt,
          deployments: 100,
          coldSync: { appliedS: 20, agentCpuAtAppliedS: 2, deployedS: 30 },
          coldRequestsPerDeployment: { patch: 9, get: 2 },
          steady: { writesExceptLease: 0 },
          changeToApplied: { p99Ms: 2500 },
          resync: { cpuMsPerDeployment: 0.5 },
          memory: { peakRssMiB: 150 },
          ...extra,
        }),
      );
      if (parsed.kind !== 'sync') throw new Error('not a sync record');
      return parsed.result;
    };
    const rows = fluxTableMarkdown([
      run('2026-11-27T10:00:00Z', { flux }),
      run('2026-11-27T11:00:00Z', { flux: { ...flux, healthyS: 120 } }),
      run('2026-11-27T12:00:00Z', { flux: { ...flux, settingsFrom: 'defaults' } }),
      run('2026-11-27T13:00:00Z', {}),
    ])
      .split('\n')
      .slice(2)
      .filter((line) => line !== '');
    expect(rows).toEqual([
      '| 100 | 2026-11-27 12:00 | v1.9.6, defaults | 60.0 / 20.0 | 90.0 / 30.0 | 3.00 | 400.0 / 20.0 | 50.0 / 11.0 | 0 / 0 | 8.0 / 2.5 | 150.00 / 0.50 | 90 + 160 / 150 |',
      "| 100 | 2026-11-27 11:00 | v1.9.6, agent's | 60.0 / 20.0 | 120.0 / 30.0 | 4.00 | 400.0 / 20.0 | 50.0 / 11.0 | 0 / 0 | 8.0 / 2.5 | 150.00 / 0.50 | 90 + 160 / 150 |",
    ]);
  });
});

describe('command blocks of the README and docs/', () => {
  it('each name a test that exists and reads that page and the heading the block sits under', async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const page of await pages()) {
      const blocks = await docBlocks(page);
      for (const block of blocks) {
        if (!isShellBlock(block) && block.lang !== 'yaml') continue;
        checked++;
        const where = `${page} (${block.heading}): ${block.text.split('\n')[0]}`;
        if (block.testedBy.length === 0) problems.push(`${where}: no <!-- tested-by: FILE --> line`);
        for (const file of block.testedBy) {
          const text = await read(file).catch(() => undefined);
          if (text === undefined) problems.push(`${where}: ${file} does not exist`);
          else if (!text.includes(page)) problems.push(`${where}: ${file} does not read ${page}`);
          // The page alone would let a test of one block vouch for every block of its page: the
          // test names the block's heading, or reads this very block with docBlock(page, heading).
          else if (
            !text.includes(block.heading) &&
            !docBlockCalls(text).some(
              (call) => call.page === page && findDocBlock(blocks, call.heading, call.lang) === block,
            )
          )
            problems.push(`${where}: ${file} neither names the heading nor reads the block with docBlock()`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(10);
  });

  it('count a docBlock() call only for the block it picks: the first under a heading with that prefix', () => {
    const page =
      '# A\n## Run it\n```bash\none\n```\n## Run it again\n```console\ntwo\n```\n```yaml\nthree\n```\n';
    const blocks = parseDocBlocks('p.md', page);
    const calls = docBlockCalls(
      "await docBlock('p.md', 'Run it');\nawait docBlock(\n  \"p.md\",\n  `Run it again`,\n  'yaml',\n);",
    );
    expect(calls).toEqual([
      { page: 'p.md', heading: 'Run it', lang: 'sh' },
      { page: 'p.md', heading: 'Run it again', lang: 'yaml' },
    ]);
    expect(calls.map((call) => findDocBlock(blocks, call.heading, call.lang)?.text)).toEqual([
      'one',
      'three',
    ]);
    expect(blocks.filter(isShellBlock).map((b) => b.text)).toEqual(['one', 'two']);
  });
});

// The two blocks under the README's title, "k8s-listener".
describe("the README's two commands", () => {
  it('are the demo, which demo.test.ts runs, and the test command, which .ci/run runs', async () => {
    const [demo, test] = (await docBlocks('README.md')).filter(isShellBlock);
    expect(shellCommands(demo?.text ?? '')).toEqual(['npm ci && npm run demo']);
    expect(shellCommands(test?.text ?? '')).toEqual(['npm ci && npm test']);
    const scripts = JSON.parse(await read('package.json')).scripts as Record<string, string>;
    expect(scripts.demo).toBe('node test/cluster/demo.ts');
    expect(await read('test/integration/packaging/demo.test.ts')).toContain(
      "new URL('../../cluster/demo.ts', import.meta.url)",
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

/** A command as it runs, whatever flags CI adds: `--silent`, `-- <vitest args>`, `|| status=$?` cut. */
function plainCommand(command: string): string {
  return (
    command
      .split(/ -- | \|\| /)[0]
      ?.replace(/\s--silent\b/g, '')
      .replace(/^npm ci\b.*/, 'npm ci')
      .trim() ?? ''
  );
}

describe('development commands (docs/development.md)', () => {
  it('are scripts of package.json whose files exist, and the lint, type check and test CI and the README run', async () => {
    const scripts = JSON.parse(await read('package.json')).scripts as Record<string, string>;
    const vitest = await read('vitest.config.ts');
    const parts = shellCommands(await docBlock('docs/development.md', 'Development')).flatMap((command) =>
      command.split('&&').map((part) => part.trim()),
    );
    expect(parts.length).toBeGreaterThan(5);
    for (const part of parts) {
      const name = /^npm (?:run (\S+)|(test))$/.exec(part);
      const script = scripts[name?.[1] ?? name?.[2] ?? ''];
      if (script === undefined) expect.fail(`docs/development.md: ${part} is not a script of package.json`);
      // What the script runs is there: its files, and the vitest project it names.
      for (const file of script.match(/[\w./-]+\.(?:ts|sh)\b/g) ?? []) await access(join(ROOT, file));
      const project = /--project (\S+)/.exec(script)?.[1];
      if (project) expect(vitest, part).toContain(`name: '${project}'`);
    }
    // CI's commands after `npm ci` are the block's; so is the README's test command.
    const ci = [...(await read('.ci/run')).matchAll(/^npm .*$/gm)].map((m) => plainCommand(m[0]));
    expect(ci).toEqual(['npm ci', 'npm run lint', 'npm run typecheck', 'npm test']);
    for (const command of ci.slice(1)) expect(parts).toContain(command);
    const readmeTest = (await docBlocks('README.md')).filter(isShellBlock)[1]?.text ?? '';
    expect(shellCommands(readmeTest)[0]?.split('&&').map(plainCommand)).toEqual(['npm ci', 'npm test']);
    expect(parts).toContain('npm test');
  });
});

/** The prose paragraphs of a page: list items apart, without code blocks, headings and tables. */
function paragraphs(markdown: string): string[] {
  const found: string[] = [];
  let current: string[] = [];
  const end = () => {
    if (current.length > 0) found.push(current.join(' '));
    current = [];
  };
  for (const line of markdown.replace(/^```[\s\S]*?^```/gm, '').split('\n')) {
    if (line.trim() === '' || /^(#|\||<!--)/.test(line)) end();
    else {
      if (/^\s*([-*]|\d+\.) /.test(line)) end();
      current.push(line.trim());
    }
  }
  end();
  return found;
}

describe('docs/architecture.md', () => {
  it('opens with the folder tree of src: every folder, and only folders that exist', async () => {
    const page = await read('docs/architecture.md');
    const tree = page.slice(
      page.indexOf('```\nsrc/\n'),
      page.indexOf('```', page.indexOf('```\nsrc/\n') + 3),
    );
    const drawn = new Set<string>();
    const path: string[] = [];
    for (const line of tree.split('\n').slice(2)) {
      const match = /^((?:│ {3}| {4})*)[├└]── ([\w-]+)\//.exec(line);
      if (!match) continue;
      const depth = (match[1]?.length ?? 0) / 4;
      path.length = depth;
      path.push(match[2] ?? '');
      drawn.add(path.join('/'));
    }
    const folders = async (dir: string): Promise<string[]> => {
      const entries = await readdir(join('src', dir), { withFileTypes: true });
      const here = entries.filter((e) => e.isDirectory() && e.name !== 'fixtures' && e.name !== 'schemas');
      const nested = await Promise.all(here.map((e) => folders(join(dir, e.name))));
      return [...here.map((e) => join(dir, e.name)), ...nested.flat()];
    };
    expect([...drawn].sort()).toEqual((await folders('')).sort());
  });

  it('has no paragraph over 200 words', async () => {
    const long = paragraphs(await read('docs/architecture.md'))
      .map((text) => ({ words: text.split(/\s+/).length, starts: text.slice(0, 60) }))
      .filter(({ words }) => words > 200);
    expect(long).toEqual([]);
  });

  it('counts a list item as a paragraph of its own', () => {
    const text = `- ${'word '.repeat(150)}\n  more\n- ${'word '.repeat(150)}\n`;
    expect(paragraphs(text).map((p) => p.split(/\s+/).length)).toEqual([152, 151]);
  });
});
