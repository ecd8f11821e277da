// Render time against input size: one deployment grown along each shape a tenant controls (label
// keys, one long key, annotation bytes, env entries, everything at once) from a few entries to
// past its cap, up to the control plane's 16 MiB body limit. For each size, the median of five
// runs of what the agent does with one listed item: JSON.parse and the schema (the poller's
// parse, which refuses a list or map past its count cap) and render (which refuses the rest past
// a cap, or renders). Both grow at most linearly with the input, and render stays flat past a cap.
// Run: npm run bench:render-size
import { safeParseResource } from '../src/controlplane/parse.ts';
import { Deployment } from '../src/controlplane/schemas/index.ts';
import { RenderConfig, renderDeployment } from '../src/render/index.ts';
import { AGENT_VERSION } from '../src/version.ts';
import { listener, minimalDeployment } from '../test/support/renderFixtures.ts';
import { loadAverage, machine, writeRecord } from './record.ts';
import { quantile } from './statistics.ts';

type Json = Record<string, unknown>;
const RUNS = 5;
const config = RenderConfig.parse({});
const many = <T>(count: number, make: (i: number) => T): T[] =>
  Array.from({ length: count }, (_, i) => make(i));

function withSpec(spec: Json, top: Json = {}): Json {
  const base = JSON.parse(JSON.stringify(minimalDeployment)) as Json;
  return { ...base, ...top, source_config: { ...(base.source_config as Json), resource_spec: spec } };
}

/** Each shape: the sizes it is grown to, and the deployment of each size. */
const SHAPES: [string, readonly number[], (n: number) => Json][] = [
  [
    'label keys',
    [8, 64, 1_000, 10_000, 100_000, 400_000],
    (n) => withSpec({ labels: Object.fromEntries(many(n, (i) => [`example.test/k${i}`, 'v'])) }),
  ],
  [
    'characters of one label key (`.cilium.io/` repeated)',
    [1_000, 10_000, 100_000, 430_000, 4_000_000, 15_000_000],
    (n) => withSpec({ labels: { [`${'.cilium.io/'.repeat(Math.ceil(n / 11))}\n`]: 'v' } }),
  ],
  [
    'bytes of annotations',
    [1_024, 64 * 1_024, 255 * 1_024, 1_048_576, 4_194_304, 15_728_640],
    (n) => withSpec({ annotations: { 'example.test/note': 'x'.repeat(n) } }),
  ],
  [
    'env entries of each of 8 sidecars',
    [8, 64, 512, 1_000, 10_000, 50_000],
    (n) =>
      withSpec({
        sidecars: many(8, (s) => ({
          name: `side${s}`,
          image: 'busybox:1.36',
          env: many(n, (i) => ({ name: `V${i}`, value: 'v' })),
        })),
      }),
  ],
  [
    'percent of every cap at once',
    [12.5, 25, 50, 100],
    (percent) => {
      const part = (cap: number) => Math.max(1, Math.floor((cap * percent) / 100));
      const container = (name: string) => ({
        name,
        image: 'busybox:1.36',
        env: many(part(128), (i) => ({ name: `V${i}`, value: 'v' })),
        volumeMounts: many(part(64), (i) => ({ name: `v${i}`, mountPath: `/mnt/${name}/${i}` })),
      });
      return withSpec(
        {
          queue_cpu: 0.5,
          orchestrator_cpu: 0.5,
          executor_cpu: 0.5,
          labels: Object.fromEntries(many(part(64), (i) => [`example.test/l${i}`, 'v'])),
          annotations: Object.fromEntries(
            many(part(128), (i) => [`example.test/a${i}`, 'x'.repeat(Math.floor((250 * 1024) / 128))]),
          ),
          volumes: many(part(64), (i) => ({ name: `v${i}`, emptyDir: {} })),
          volume_mounts: many(part(64), (i) => ({ name: `v${i}`, mountPath: `/mnt/v${i}` })),
          sidecars: many(part(8), (s) => container(`side${s}`)),
          init_containers: many(part(8), (s) => container(`init${s}`)),
        },
        {
          // With the containers' env, the 4,096 environment variables of a pod.
          secrets: many(part(2048), (i) => ({
            name: `S${i}`,
            value: 's'.repeat(Math.floor((1000 * 1024) / 2048)),
          })),
        },
      );
    },
  ],
];

interface Row {
  readonly shape: string;
  readonly size: number;
  readonly inputKiB: number;
  readonly parseMs: number;
  readonly renderMs: number;
  /** rendered, or where it was refused: `parse` (a count cap) or `render` (any other cap). */
  readonly outcome: 'rendered' | 'parse' | 'render';
}

function median(times: number[]): number {
  return Number(
    quantile(
      [...times].sort((a, b) => a - b),
      0.5,
    ).toFixed(3),
  );
}

function measure(shape: string, size: number, deployment: Json): Row {
  const text = JSON.stringify(deployment);
  const parseTimes: number[] = [];
  const renderTimes: number[] = [];
  let outcome: Row['outcome'] = 'rendered';
  for (let run = 0; run < RUNS; run++) {
    const parsing = performance.now();
    const parsed = safeParseResource(Deployment, JSON.parse(text), 'deployment');
    parseTimes.push(performance.now() - parsing);
    if (!parsed.ok) {
      outcome = 'parse';
      renderTimes.push(0);
      continue;
    }
    const rendering = performance.now();
    const result = renderDeployment(
      { deployment: parsed.value, revision: undefined, listener, allowedNamespaces: undefined },
      config,
    );
    renderTimes.push(performance.now() - rendering);
    outcome = result.ok ? 'rendered' : 'render';
  }
  return {
    shape,
    size,
    inputKiB: Number((Buffer.byteLength(text) / 1024).toFixed(1)),
    parseMs: median(parseTimes),
    renderMs: median(renderTimes),
    outcome,
  };
}

const startedAt = new Date();
const loadAtStart = loadAverage();
// Warm: the first renders compile what the later ones run.
for (let i = 0; i < 50; i++)
  renderDeployment(
    { deployment: minimalDeployment, revision: undefined, listener, allowedNamespaces: undefined },
    config,
  );
const rows: Row[] = [];
for (const [shape, sizes, make] of SHAPES)
  for (const size of sizes) {
    const row = measure(shape, size, make(size));
    rows.push(row);
    console.log(JSON.stringify(row));
  }
const slowest = Math.max(...rows.map((row) => row.renderMs));
const report = { deployments: 1, medianMs: median(rows.map((row) => row.renderMs)), maxMs: slowest };
await writeRecord(startedAt, 'render-size', {
  benchmark: 'render-size',
  startedAt: startedAt.toISOString(),
  ...report,
  rows,
  machine: machine(loadAtStart),
  versions: { agent: AGENT_VERSION, node: process.version },
});
// The target: no render of any input up to the body limit holds the event loop 100 ms.
if (slowest >= 100) {
  console.error(`render-size benchmark over target: a render took ${slowest} ms (target < 100 ms)`);
  process.exit(1);
}
