// The LangGraph path on the real node, timed: from `langgraph deploy` (the official CLI, through
// the emulator and the agent) to the first run the new server answers through its Service, and
// from a new revision's `langgraph deploy --deployment-id` to the first run answered by that
// revision's pods; the median of --runs each. Then the node's own daemons at rest: CPU and RSS
// of containerd (with its shims), the kubelet, kube-proxy, kube-router and CoreDNS, read from
// /proc over --rest-s seconds with nothing deployed.
//
// npm run bench:node [-- --runs 5 --rest-s 60]. Needs what the real node needs (root; see
// docs/development.md). Writes bench/results/<time>-real-node.json.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { startEmulator } from '../src/emulator/server.ts';
import { Agent } from '../src/manager/agent.ts';
import { ReconcileConfig } from '../src/reconcile/policy/reconcileConfig.ts';
import { RenderConfig } from '../src/render/index.ts';
import { createMetrics } from '../src/report/metrics.ts';
import { sleep } from '../src/sleep.ts';
import {
  ensureClusterBinaries,
  ensureNodeBinaries,
  startLocalCluster,
} from '../test/cluster/localCluster.ts';
import { REAL_NODE_NAMESPACE_ANNOTATIONS, realNodeMissing } from '../test/cluster/realNodeLauncher.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../test/support/adminKube.ts';
import { ControlPlaneTestClient } from '../test/support/controlPlaneTestClient.ts';
import { cliEnv, installLanggraphCli, runCommand } from '../test/support/langgraphCli.ts';
import {
  type DeployPhases,
  deployPhases,
  medianPhases,
  PodTimeline,
  pullSeconds,
  watchControlPlane,
} from './deployTimeline.ts';
import { CLOCK_TICKS, readProcStat, readProcStatus } from './procfs.ts';
import { loadAverage, machine, writeRecord } from './record.ts';
import { median } from './statistics.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, 'rest-s': { type: 'string', default: '60' } },
});
const RUNS = Number(values.runs);
const REST_S = Number(values['rest-s']);
const API_KEY = 'bench-real-node';

const missing = await realNodeMissing();
if (missing) {
  console.error(`bench:node needs a real node: ${missing}`);
  process.exit(2);
}

const startedAt = new Date();
const loadAtStart = loadAverage();
const cluster = await startLocalCluster({
  binDir: await ensureClusterBinaries(),
  realNodeBinDir: await ensureNodeBinaries(),
  log: (line) => console.error(`[cluster] ${line}`),
});
const node = cluster.realNode;
if (!node) throw new Error(`no real node: ${cluster.realNodeMissing}`);
const image = (name: string) => {
  const reference = node.images[name];
  if (!reference) throw new Error(`no image ${name}`);
  return reference;
};
const kube = adminKube(cluster.kubeconfigPath);
const emulator = await startEmulator({ apiKey: API_KEY });
const controlPlaneMarks = watchControlPlane(emulator);
const client = new ControlPlaneTestClient({
  baseUrl: emulator.url,
  apiKey: API_KEY,
  logger: pino({ level: 'silent' }),
});
const namespace = uniqueNamespace('bench-node');
await createNamespace(kube, namespace, REAL_NODE_NAMESPACE_ANNOTATIONS);
const listener = await client.createListener({
  compute_type: 'k8s',
  compute_id: 'bench-real-node',
  compute_config: { k8s_namespaces: [namespace] },
});
const agent = new Agent({
  listenerId: listener.id,
  controlPlane: { baseUrl: emulator.url, apiKey: API_KEY },
  kubeconfigPath: cluster.kubeconfigPath,
  allowedNamespaces: [namespace],
  identity: 'bench-real-node',
  agentNamespace: 'default',
  render: RenderConfig.parse({
    database: { image: image('postgres'), runAsUser: 999, provision: 'always' },
    kvstore: { image: image('redis'), runAsUser: 998, provision: 'always' },
  }),
  // The control plane is polled every second: the figures are the cluster's and the server's.
  reconcile: ReconcileConfig.parse({
    pollIntervalMs: 1_000,
    rolloutRecheckMs: 1_000,
    failureGraceMs: 300_000,
  }),
  metrics: createMetrics({ defaultMetrics: false }),
  logger: pino({ level: 'silent' }),
});
await agent.start();
const bin = await installLanggraphCli();
const dir = await mkdtemp(join(tmpdir(), 'bench-real-node-'));
await writeFile(
  join(dir, 'langgraph.json'),
  JSON.stringify({ dependencies: ['.'], graphs: { counter: './c.py:graph' } }),
);

async function clusterIp(name: string): Promise<string> {
  const service = await kube.core.readNamespacedService({ name, namespace });
  return service.spec?.clusterIP ?? '';
}

/** Polls a run of the counter graph through the Service until one is answered by `image`'s pods. */
async function firstAnsweredRun(name: string, started: number, imageWanted: string): Promise<number> {
  for (;;) {
    try {
      const main = await kube.apps.readNamespacedDeployment({ name, namespace });
      // The status of the generation asked for: the one before the new revision's still counts
      // the old pods as updated and available, and they would answer.
      const rolled =
        main.spec?.template.spec?.containers[0]?.image === imageWanted &&
        (main.status?.observedGeneration ?? 0) >= (main.metadata?.generation ?? 1) &&
        main.status?.updatedReplicas === main.status?.replicas &&
        main.status?.availableReplicas === main.status?.replicas &&
        (main.status?.replicas ?? 0) > 0;
      if (rolled) {
        const base = `http://${await clusterIp(name)}`;
        const thread = await fetch(`${base}/threads`, {
          method: 'POST',
          body: '{}',
          signal: AbortSignal.timeout(5_000),
        });
        const { thread_id } = (await thread.json()) as { thread_id: string };
        const run = await fetch(`${base}/threads/${thread_id}/runs/wait`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ assistant_id: 'counter', input: {} }),
          signal: AbortSignal.timeout(10_000),
        });
        if (run.ok && ((await run.json()) as { count?: number }).count === 1)
          return (Date.now() - started) / 1000;
      }
    } catch {
      // Not there yet.
    }
    await sleep(200);
  }
}

function cli(command: string, deploymentId = '') {
  return runCommand('bash', ['-c', command], {
    cwd: dir,
    env: cliEnv(bin, dir, emulator.url, API_KEY, {
      LISTENER_ID: listener.id,
      NAMESPACE: namespace,
      DEPLOYMENT_ID: deploymentId,
    }),
    timeoutMs: 600_000,
  });
}

const firstRunS: number[] = [];
const newRevisionS: number[] = [];
const phases: DeployPhases[] = [];
for (let i = 0; i < RUNS; i++) {
  const name = `counter-${i}`;
  const pods = new PodTimeline(kube, namespace);
  const started = Date.now();
  const created = cli(
    `langgraph deploy --image-uri ${image('langgraph-server')} --listener-id "$LISTENER_ID" --k8s-namespace "$NAMESPACE" --name ${name} --no-input`,
  );
  firstRunS.push(await firstAnsweredRun(name, started, image('langgraph-server')));
  const answered = started + (firstRunS.at(-1) ?? 0) * 1000;
  const done = await created;
  const deploymentId = /Deployment ID: (\S+)/.exec(done.stdout)?.[1] ?? '';
  if (done.code !== 0 || !deploymentId)
    throw new Error(`langgraph deploy failed: ${done.stdout}\n${done.stderr}`);
  // DEPLOYED is reported at the agent's next poll after the pods are ready.
  await sleep(3_000);
  await pods.stop();
  const [server] = pods.of(deploymentId, 'main');
  if (!server) throw new Error(`no server pod seen for ${deploymentId}`);
  const events = await kube.core.listNamespacedEvent({ namespace });
  phases.push(
    deployPhases({
      started,
      answered,
      controlPlane: controlPlaneMarks(deploymentId),
      server,
      stores: [...pods.of(deploymentId, 'database'), ...pods.of(deploymentId, 'kvstore')],
      imagePull: pullSeconds(events.items, server.name),
    }),
  );
  console.error(`run ${i + 1}/${RUNS} phases: ${JSON.stringify(phases.at(-1))}`);
  const revised = Date.now();
  const updated = cli(
    `langgraph deploy --deployment-id "$DEPLOYMENT_ID" --image-uri ${image('langgraph-server-2')} --no-input`,
    deploymentId,
  );
  newRevisionS.push(await firstAnsweredRun(name, revised, image('langgraph-server-2')));
  await updated;
  const deleted = await cli(`langgraph deploy delete "$DEPLOYMENT_ID" --force`, deploymentId);
  if (deleted.code !== 0) throw new Error(`langgraph deploy delete failed: ${deleted.stderr}`);
  console.error(
    `run ${i + 1}/${RUNS}: first run ${firstRunS.at(-1)} s, new revision ${newRevisionS.at(-1)} s`,
  );
  // Nothing of the run left running before the next.
  for (;;) {
    const pods = await kube.core.listNamespacedPod({ namespace });
    if (pods.items.length === 0) break;
    await sleep(500);
  }
}

// --- The node's daemons at rest: every process of the node's mount namespace (containerd, its
// shims, the kubelet) and the node's other daemons and CoreDNS's container, by name.
const DAEMONS = [
  'containerd',
  'containerd-shim-runc-v2',
  'kubelet',
  'kube-proxy',
  'kube-router',
  'coredns',
] as const;
async function daemonStats(): Promise<Map<string, { cpuTicks: number; rssKiB: number }>> {
  const stats = new Map<string, { cpuTicks: number; rssKiB: number }>();
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    // Undefined: gone meanwhile.
    const stat = await readProcStat(pid);
    if (!stat) continue;
    const { comm } = stat;
    const daemon = DAEMONS.find((d) => d.startsWith(comm) && comm.length >= Math.min(d.length, 15));
    if (!daemon) continue;
    const status = await readProcStatus(pid);
    if (!status) continue;
    // A zombie has no resident memory.
    const rss = Number.isNaN(status.rssKiB) ? 0 : status.rssKiB;
    const sum = stats.get(daemon) ?? { cpuTicks: 0, rssKiB: 0 };
    stats.set(daemon, { cpuTicks: sum.cpuTicks + stat.cpuTicks, rssKiB: sum.rssKiB + rss });
  }
  return stats;
}
await agent.stop();
await sleep(10_000);
const before = await daemonStats();
await sleep(REST_S * 1000);
const after = await daemonStats();
const atRest = Object.fromEntries(
  DAEMONS.map((daemon) => {
    const a = after.get(daemon);
    const b = before.get(daemon);
    const cpuPercent = a && b ? ((a.cpuTicks - b.cpuTicks) / CLOCK_TICKS / REST_S) * 100 : 0;
    return [
      daemon,
      { cpuPercent: Number(cpuPercent.toFixed(2)), rssMiB: Number(((a?.rssKiB ?? 0) / 1024).toFixed(1)) },
    ];
  }),
);

const record = {
  kind: 'real-node',
  startedAt: startedAt.toISOString(),
  machine: machine(loadAtStart),
  runs: RUNS,
  restSeconds: REST_S,
  firstAnsweredRunS: firstRunS,
  newRevisionAnsweredRunS: newRevisionS,
  medianFirstAnsweredRunS: median(firstRunS),
  medianNewRevisionAnsweredRunS: median(newRevisionS),
  deployPhases: phases,
  medianDeployPhasesS: medianPhases(phases, median),
  nodeAtRest: atRest,
};
const path = await writeRecord(startedAt, 'real-node', record);
console.log(JSON.stringify(record, null, 2));
console.error(`wrote ${path}`);
await client.close();
await emulator.close();
await rm(dir, { recursive: true, force: true });
await cluster.stop();
