// `npm run demo`: the agent end to end on the embedded default. A local Kubernetes control plane,
// the control-plane emulator seeded with a listener and three deployments, and the agent itself.
// Runs until Ctrl-C; `--exit-when-converged` exits 0 once every seeded deployment is DEPLOYED.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createLogger } from '../../src/cli/logger.ts';
import { startProbeServer } from '../../src/cli/probeServer.ts';
import { ControlPlaneClient } from '../../src/controlplane/client.ts';
import { startEmulator } from '../../src/emulator/server.ts';
import { EmulatorState } from '../../src/emulator/state.ts';
import { Agent } from '../../src/reconcile/agent.ts';
import { ReconcileConfig } from '../../src/reconcile/reconcileConfig.ts';
import { RenderConfig } from '../../src/render/index.ts';
import { createMetrics } from '../../src/report/metrics.ts';
import { adminKube } from '../support/adminKube.ts';
import { ensureClusterBinaries, startLocalCluster } from './localCluster.ts';

const { values } = parseArgs({
  options: {
    'exit-when-converged': { type: 'boolean', default: false },
    'emulator-port': { type: 'string', default: '8080' },
    'metrics-port': { type: 'string', default: '9090' },
    'log-level': { type: 'string', default: 'info' },
  },
});
const say = (line: string) => process.stderr.write(`[demo] ${line}\n`);
const seedPath = new URL('../../src/emulator/fixtures/seed.json', import.meta.url).pathname;
const seed = EmulatorState.parse(JSON.parse(await readFile(seedPath, 'utf8')));
const listener = seed.listeners[0];
if (!listener) throw new Error('the seed has no listener');

say('building or reusing the Kubernetes binaries (the first build takes several minutes)');
const binDir = await ensureClusterBinaries();
const cluster = await startLocalCluster({ binDir, log: say });
const emulator = await startEmulator({ port: Number(values['emulator-port']), seed });
const logger = createLogger(values['log-level']);
const metrics = createMetrics();
let agent: Agent | undefined;
let probes: Awaited<ReturnType<typeof startProbeServer>> | undefined;

const shutdown = async (code: number) => {
  say('stopping');
  await agent?.stop();
  await probes?.close();
  await emulator.close();
  await cluster.stop();
  process.exit(code);
};
process.once('SIGINT', () => void shutdown(0));
process.once('SIGTERM', () => void shutdown(0));

try {
  // What a platform team prepares before installing the agent: its namespaces, and the service
  // account one seeded deployment names.
  const kube = adminKube(cluster.kubeconfigPath);
  for (const name of listener.compute_config?.k8s_namespaces ?? []) {
    await kube.core.createNamespace({ body: { metadata: { name } } });
    await kube.core.createNamespacedServiceAccount({
      namespace: name,
      body: { metadata: { name: 'agent-platform' } },
    });
  }
  agent = new Agent({
    listenerId: listener.id,
    controlPlane: { baseUrl: emulator.url },
    kubeconfigPath: cluster.kubeconfigPath,
    allowedNamespaces: undefined,
    identity: 'demo-agent',
    agentNamespace: 'default',
    render: RenderConfig.parse({}),
    reconcile: ReconcileConfig.parse({ pollIntervalMs: 2_000, rolloutRecheckMs: 1_000 }),
    metrics,
    logger,
  });
  probes = await startProbeServer({
    host: '127.0.0.1',
    port: Number(values['metrics-port']),
    registry: metrics.registry,
    isLive: () => agent?.isLive() ?? false,
    isReady: () => agent?.isReady() ?? false,
    logger,
  });
  await agent.start();
  say(`control-plane emulator: ${emulator.url}   (try: curl ${emulator.url}/v2/deployments)`);
  say(`agent metrics:          ${probes.url}/metrics`);
  say(`cluster:                export KUBECONFIG=${cluster.kubeconfigPath}`);
  say(
    `kubectl:                ${binDir}/kubectl get deploy,sts,svc -A -l k8s-listener.io/listener-id=${listener.id}`,
  );

  const client = new ControlPlaneClient({ baseUrl: emulator.url, logger: pino({ level: 'silent' }) });
  const reported = new Map<string, string>();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const { items } = await client.listAllDeployments({ remote_reconciled: true });
    let converged = items.length > 0;
    for (const deployment of items) {
      const revision = (await client.listAllRevisions(deployment.id)).items.find(
        (r) => r.id === deployment.latest_revision_id,
      );
      const line = `${deployment.name}: revision ${revision?.status ?? 'unknown'}, deployment ${deployment.status}`;
      if (reported.get(deployment.id) !== line) say(line);
      reported.set(deployment.id, line);
      converged &&= revision?.status === 'DEPLOYED';
    }
    if (converged && values['exit-when-converged']) {
      say('every deployment is DEPLOYED');
      await client.close();
      await shutdown(0);
    }
  }
} catch (error) {
  say(`failed: ${error instanceof Error ? error.message : String(error)}`);
  await shutdown(1);
}
