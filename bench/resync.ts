// Resync benchmark, in process: the agent's full resync of N converged deployments, each a look by
// the reconciler's status path at objects held in the watch cache. bench:sync measures it end to
// end at N = 1,000 (with the polls and the benchmark's own reads); a cold sync of N = 10,000 takes
// hours on the local cluster, so here the same Reconciler, render and ObjectCache converge N
// deployments of bench:sync's fleet over an in-memory cluster, then resync them all, five times:
// the CPU a deployment, and whether it grows with N. A look sends no request: a pass that sends
// one, or takes the full path, fails the run. Target: 1 ms a deployment (bench/README.md).
// Run: npm run bench:resync [-- --deployments 1000,10000]
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { Deployment } from '../src/controlplane/schemas/index.ts';
import { ObjectCache } from '../src/kube/objectCache.ts';
import { LABEL_DEPLOYMENT_ID } from '../src/objects/ownership.ts';
import { DesiredState } from '../src/reconcile/loop/desiredState.ts';
import { ReconcileConfig } from '../src/reconcile/policy/reconcileConfig.ts';
import { WATCHED_KINDS } from '../src/reconcile/policy/watchedKinds.ts';
import { Reconciler } from '../src/reconcile/reconciler.ts';
import { InventoryStore } from '../src/reconcile/steps/inventoryStore.ts';
import { RenderConfig } from '../src/render/index.ts';
import { ControlPlaneReporter } from '../src/report/controlPlaneReporter.ts';
import { createMetrics } from '../src/report/metrics.ts';
import { AGENT_VERSION } from '../src/version.ts';
import { MemoryCluster } from '../test/support/memoryCluster.ts';
import { listener as fixtureListener, minimalDeployment } from '../test/support/renderFixtures.ts';
import { loadAverage, machine, writeRecord } from './record.ts';
import { median } from './statistics.ts';
import { fleetDeployment, NAMESPACES } from './sync/fleet.ts';

const PASSES = 5;
const TARGET_MS = 1;

const { values } = parseArgs({ options: { deployments: { type: 'string', default: '1000,10000' } } });
const sizes = values.deployments.split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--deployments takes N[,N…]');

const listener = { ...fixtureListener, compute_config: { k8s_namespaces: NAMESPACES } };
const logger = pino({ level: 'silent' });

/** The status path's CPU a deployment, one figure per pass, after every deployment converged. */
async function resyncPasses(n: number): Promise<number[]> {
  const cluster = new MemoryCluster(NAMESPACES);
  const cache = new ObjectCache({ indexLabel: LABEL_DEPLOYMENT_ID });
  for (const namespace of NAMESPACES) cache.markSynced([...WATCHED_KINDS, 'Pod'], namespace);
  const metrics = createMetrics({ defaultMetrics: false });
  const reporter = new ControlPlaneReporter({
    sink: { postStatusReports: async () => undefined },
    listenerId: listener.id,
    logger,
    metrics,
  });
  const desired = new DesiredState();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const deployment = Deployment.parse({
      ...minimalDeployment,
      ...fleetDeployment(i, listener.id),
      id: randomUUID(),
      latest_revision_id: randomUUID(),
    });
    desired.set(deployment.id, {
      kind: 'present',
      deployment,
      target: { revision: undefined, settled: undefined },
      fingerprint: deployment.id,
    });
    ids.push(deployment.id);
  }
  const reconciler = new Reconciler({
    kube: cluster,
    desired,
    inventories: new InventoryStore(cluster, listener.id),
    reporter,
    events: { record: async () => undefined },
    metrics,
    logger,
    renderConfig: RenderConfig.parse({}),
    config: ReconcileConfig.parse({}),
    listener: () => listener,
    allowedNamespaces: undefined,
    cache,
  });
  const paths = async () =>
    Object.fromEntries((await metrics.reconcilePaths.get()).values.map((v) => [v.labels.path, v.value]));

  for (const id of ids) await reconciler.reconcile(id);
  const converged = await paths();
  if (converged.full !== n)
    throw new Error(`${converged.full} of ${n} deployments converged by the full path`);

  const perDeploymentMs: number[] = [];
  for (let pass = 0; pass < PASSES; pass++) {
    global.gc?.();
    const requests = cluster.calls.length;
    const before = await paths();
    const cpu = process.cpuUsage();
    for (const id of ids) await reconciler.reconcile(id);
    const used = process.cpuUsage(cpu);
    const after = await paths();
    if (cluster.calls.length !== requests)
      throw new Error(`a resync pass sent ${cluster.calls.length - requests} requests`);
    if ((after.status ?? 0) - (before.status ?? 0) !== n || after.full !== before.full)
      throw new Error('a resync pass took the full path');
    perDeploymentMs.push((used.user + used.system) / 1000 / n);
  }
  return perDeploymentMs;
}

let missed = false;
for (const n of sizes) {
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  const passes = await resyncPasses(n);
  const medianMs = Number(median(passes).toFixed(3));
  const maxMs = Number(Math.max(...passes).toFixed(3));
  const path = await writeRecord(startedAt, 'resync', {
    benchmark: 'resync',
    startedAt: startedAt.toISOString(),
    deployments: n,
    passes: PASSES,
    medianMs,
    maxMs,
    perPassMs: passes.map((ms) => Number(ms.toFixed(3))),
    targetMs: TARGET_MS,
    agentVersion: AGENT_VERSION,
    node: process.version,
    machine: machine(loadAtStart),
  });
  const verdict = medianMs <= TARGET_MS ? 'PASS' : 'FAIL';
  if (verdict === 'FAIL') missed = true;
  console.log(
    `${verdict}  N=${n}: a full resync, ${medianMs} ms of CPU a deployment (median of ${PASSES}, max ${maxMs}); target ${TARGET_MS} ms — ${path}`,
  );
}
process.exitCode = missed ? 1 : 0;
