// `k8s-listener run`: the agent's main job. Exits 0 after a graceful shutdown on SIGTERM/SIGINT.
import { parseArgs } from 'node:util';
import { loadAgentConfig } from '../config/agentConfig.ts';
import { Agent } from '../reconcile/agent.ts';
import { createMetrics } from '../report/metrics.ts';
import { AGENT_VERSION } from '../version.ts';
import { createLogger } from './logger.ts';
import { startProbeServer } from './probeServer.ts';

export const RUN_USAGE = `Usage: k8s-listener run [--config FILE] [--listener-id ID] [--control-plane URL]
                        [--kubeconfig FILE] [--namespaces a,b] [--metrics-port 9090]

Registers with the control plane as the given listener and keeps its deployments converged.
Environment: K8S_LISTENER_API_KEY (the API key), K8S_LISTENER_LISTENER_ID,
K8S_LISTENER_CONTROL_PLANE_URL, K8S_LISTENER_TENANT_ID, K8S_LISTENER_NAMESPACES,
K8S_LISTENER_KUBECONFIG, POD_NAME, POD_NAMESPACE, LOG_LEVEL.
`;

export async function runAgentCommand(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      config: { type: 'string' },
      'listener-id': { type: 'string' },
      'control-plane': { type: 'string' },
      kubeconfig: { type: 'string' },
      namespaces: { type: 'string' },
      'metrics-port': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(RUN_USAGE);
    return 0;
  }
  const config = await loadAgentConfig({
    file: values.config,
    overrides: {
      listenerId: values['listener-id'],
      'controlPlane.baseUrl': values['control-plane'],
      kubeconfig: values.kubeconfig,
      namespaces: values.namespaces
        ?.split(',')
        .map((n) => n.trim())
        .filter(Boolean),
      'probes.port': values['metrics-port'] === undefined ? undefined : Number(values['metrics-port']),
    },
  });
  const logger = createLogger(config.log.level);
  const metrics = createMetrics();
  const agent = new Agent({
    listenerId: config.listenerId,
    controlPlane: {
      baseUrl: config.controlPlane.baseUrl,
      timeoutMs: config.controlPlane.timeoutMs,
      ...optional(config.controlPlane),
    },
    kubeconfigPath: config.kubeconfig,
    allowedNamespaces: config.namespaces,
    identity: config.identity,
    agentNamespace: config.agentNamespace,
    render: config.render,
    reconcile: config.reconcile,
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

  const stopped = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  try {
    await agent.start();
  } catch (error) {
    await probes.close();
    await agent.stop();
    throw error;
  }
  const signal = await stopped;
  logger.info({ signal }, 'signal received');
  await agent.stop();
  await probes.close();
  return 0;
}

function optional(controlPlane: { apiKey?: string | undefined; tenantId?: string | undefined }) {
  return {
    ...(controlPlane.apiKey ? { apiKey: controlPlane.apiKey } : {}),
    ...(controlPlane.tenantId ? { tenantId: controlPlane.tenantId } : {}),
  };
}
