// `npm run docs`: writes the generated regions of the docs (configuration reference, chart values, alerts,
// benchmark tables). `--check` writes nothing and exits 1 when a page is stale.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { alertsTableMarkdown } from './alertsTable.ts';
import {
  type BenchResult,
  benchMediansMarkdown,
  benchTableMarkdown,
  fluxTableMarkdown,
  microTableMarkdown,
  parseBenchResult,
  realNodePhasesTableMarkdown,
  realNodeTableMarkdown,
  renderSizeTableMarkdown,
  transportTableMarkdown,
} from './benchTables.ts';
import { chartValuesMarkdown } from './chartValues.ts';
import { configReferenceMarkdown } from './configReference.ts';
import { replaceRegion } from './regions.ts';

const root = new URL('../..', import.meta.url).pathname;

export interface GeneratedPage {
  readonly file: string;
  readonly current: string;
  readonly generated: string;
}

async function benchResults(): Promise<BenchResult[]> {
  const dir = join(root, 'bench/results');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(files.map(async (f) => parseBenchResult(f, await readFile(join(dir, f), 'utf8'))));
}

/** Each page as it is and as the generators would write it. */
export async function generatedPages(): Promise<GeneratedPage[]> {
  const read = (file: string) => readFile(join(root, file), 'utf8');
  const values = await read('charts/k8s-listener/values.yaml');
  const schema = JSON.parse(await read('charts/k8s-listener/values.schema.json'));
  const results = await benchResults();
  const sync = results.flatMap((r) => (r.kind === 'sync' ? [r.result] : []));
  const micro = results.flatMap((r) => (r.kind === 'micro' ? [r.result] : []));
  const realNode = results.flatMap((r) => (r.kind === 'real-node' ? [r.result] : []));
  const renderSize = results.flatMap((r) => (r.kind === 'render-size' ? [r.result] : []));
  const transport = results.flatMap((r) => (r.kind === 'transport' ? [r.result] : []));
  const regions: [string, string, string][] = [
    ['docs/configuration.md', 'configuration-reference', configReferenceMarkdown()],
    ['charts/k8s-listener/README.md', 'values', chartValuesMarkdown(values, schema)],
    [
      'docs/operating.md',
      'alerts',
      alertsTableMarkdown(await read('deploy/monitoring/prometheus-rule.yaml')),
    ],
    [
      'bench/README.md',
      'render-poll-results',
      microTableMarkdown(micro.filter((r) => r.benchmark !== 'resync')),
    ],
    ['bench/README.md', 'render-size-results', renderSizeTableMarkdown(renderSize)],
    ['bench/README.md', 'resync-results', microTableMarkdown(micro.filter((r) => r.benchmark === 'resync'))],
    ['bench/README.md', 'transport-results', transportTableMarkdown(transport)],
    ['bench/README.md', 'real-node-results', realNodeTableMarkdown(realNode)],
    ['bench/README.md', 'real-node-phases', realNodePhasesTableMarkdown(realNode)],
    ['bench/README.md', 'sync-medians', benchMediansMarkdown(sync)],
    ['bench/README.md', 'sync-results', benchTableMarkdown(sync)],
    ['bench/README.md', 'sync-flux', fluxTableMarkdown(sync)],
  ];
  const pages = new Map<string, GeneratedPage>();
  for (const [file, region, content] of regions) {
    const current = pages.get(file)?.current ?? (await read(file));
    const base = pages.get(file)?.generated ?? current;
    pages.set(file, { file, current, generated: replaceRegion(base, file, region, content) });
  }
  return [...pages.values()];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const page of await generatedPages()) {
    if (page.current === page.generated) continue;
    stale++;
    if (check) console.error(`${page.file} is stale: run npm run docs`);
    else {
      await writeFile(join(root, page.file), page.generated);
      console.error(`wrote ${page.file}`);
    }
  }
  process.exitCode = check && stale > 0 ? 1 : 0;
}
