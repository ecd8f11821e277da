// `k8s-listener run`: the agent's main job. Exits 0 after a graceful shutdown on SIGTERM/SIGINT, and
// 1 at once when leadership is lost, so that the pod restarts clean (as controller-runtime does).
import { parseArgs } from 'node:util';
import { Agent } from '../manager/agent.ts';
import { createMetrics } from '../report/metrics.ts';
import { AGENT_VERSION } from '../version.ts';
import { controlPlaneClientOptions } from './commandSetup.ts';
import { CONFIG_FLAGS, CONFIG_FLAGS_USAGE, loadConfigFromFlags } from './configFlags.ts';
import { createLogger } from './logger.ts';
import { startProbeServer } from './probeServer.ts';

export const RUN_USAGE = `Usage: k8s-listener run [options] [--metrics-port 9090]

Registers with the control plane as the given listener and keeps its deployments converged.
${CONFIG_FLAGS_USAGE}
Environment also: K8S_LISTENER_TENANT_ID, K8S_LISTENER_API_KEY_FILE, POD_NAME, POD_NAMESPACE.
`;

export async function runAgentCommand(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      ...CONFIG_FLAGS,
      'metrics-port': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(RUN_USAGE);
    return 0;
  }
  const config = await loadConfigFromFlags(values, {
    'probes.port': values['metrics-port'] === undefined ? undefined : Number(values['metrics-port']),
  });
  const logger = createLogger(config.log.level, { format: config.log.format });
  const metrics = createMetrics();
  const agent = new Agent({
    listenerId: config.listenerId,
    controlPlane: controlPlaneClientOptions(config.controlPlane),
    kubeconfigPath: config.kubeconfig,
    kubeApi: config.kubeApi,
    allowedNamespaces: config.namespaces,
    identity: config.identity,
    agentNamespace: config.agentNamespace,
    render: config.render,
    reconcile: config.reconcile,
    report: config.report,
    metrics,
    logger,
  });
  const probes = await startProbeServer({
    host: config.probes.host,
    port: config.probes.port,
    registry: metrics.registry,
    isLive: () => agent.isLive(),
    isReady: () => agent.isReady(),
    logger,
  });
  logger.info(
    { version: AGENT_VERSION, listenerId: config.listenerId, probes: probes.url, identity: config.identity },
    'k8s-listener starting',
  );

  // Wired before registration, which retries while the control plane is unreachable: a SIGTERM
  // then ends it (and every wait) at once.
  const shutdown = new AbortController();
  const stopped = new Promise<string>((resolve) => {
    const on = (name: string) => () => {
      shutdown.abort(new Error(`${name} received`));
      resolve(name);
    };
    process.once('SIGTERM', on('SIGTERM'));
    process.once('SIGINT', on('SIGINT'));
  });
  try {
    await agent.start(shutdown.signal);
  } catch (error) {
    await probes.close();
    await agent.stop();
    if (!shutdown.signal.aborted) throw error;
    logger.info({ signal: await stopped }, 'signal received while registering; stopped');
    return 0;
  }
  const ended = await Promise.race([stopped, agent.failed]);
  if (ended instanceof Error) {
    // The agent has already stopped, without waiting for anything: another replica may lead.
    logger.error({ err: ended }, 'exiting');
    await probes.close();
    return 1;
  }
  logger.info({ signal: ended }, 'signal received');
  await agent.stop();
  await probes.close();
  return 0;
}
