// Render benchmark: time per deployment and memory for a fleet of random valid deployments.
// Targets: median under 1 ms and p99 under 5 ms per deployment; under 64 MiB of heap for the
// rendered objects of 2,000 deployments held at once (what the agent keeps between polls).
// Run: npm run bench
import fc from 'fast-check';
import { renderDeployment } from '../src/render/index.ts';
import { AGENT_VERSION } from '../src/version.ts';
import { goldenConfig, listener } from '../test/support/renderFixtures.ts';
import { validDeployment } from '../test/support/specArbitraries.ts';
import { loadAverage, machine, writeRecord } from './record.ts';
import { quantile } from './statistics.ts';

const COUNT = 2_000;
const startedAt = new Date();
const loadAtStart = loadAverage();
const deployments = fc.sample(validDeployment, { numRuns: COUNT, seed: 42 });
for (const deployment of deployments.slice(0, 100))
  renderDeployment({ deployment, revision: undefined, listener, allowedNamespaces: undefined }, goldenConfig);

global.gc?.();
const heapBefore = process.memoryUsage().heapUsed;
const times: number[] = [];
const kept: unknown[] = [];
let objects = 0;
for (const deployment of deployments) {
  const started = performance.now();
  const result = renderDeployment(
    { deployment, revision: undefined, listener, allowedNamespaces: undefined },
    goldenConfig,
  );
  times.push(performance.now() - started);
  if (!result.ok) throw result.error;
  objects += result.value.objects.length;
  kept.push(result.value);
}
global.gc?.();
const heapMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
times.sort((a, b) => a - b);
const report = {
  deployments: COUNT,
  objects,
  medianMs: Number(quantile(times, 0.5).toFixed(3)),
  p99Ms: Number(quantile(times, 0.99).toFixed(3)),
  heldHeapMiB: Number(heapMiB.toFixed(1)),
};
console.log(JSON.stringify(report));
await writeRecord(startedAt, 'render', {
  benchmark: 'render',
  startedAt: startedAt.toISOString(),
  ...report,
  machine: machine(loadAtStart),
  versions: { agent: AGENT_VERSION, node: process.version },
});
const failures = [
  report.medianMs < 1 ? '' : `median ${report.medianMs} ms ≥ 1 ms`,
  report.p99Ms < 5 ? '' : `p99 ${report.p99Ms} ms ≥ 5 ms`,
  report.heldHeapMiB < 64 ? '' : `heap ${report.heldHeapMiB} MiB ≥ 64 MiB`,
].filter(Boolean);
if (kept.length !== COUNT || failures.length > 0) {
  console.error(`render benchmark over target: ${failures.join('; ')}`);
  process.exit(1);
}
