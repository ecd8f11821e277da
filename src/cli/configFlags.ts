// The flags every command that acts as the agent takes (run, status, diff, check), and how they
// land in the agent configuration: a file, then environment variables, then these flags.
import type { ParseArgsConfig } from 'node:util';
import type { Logger } from 'pino';
import { type AgentConfig, loadAgentConfig } from '../config/agentConfig.ts';
import { ControlPlaneClient } from '../controlplane/client.ts';
import type { KubeClient } from '../kube/index.ts';
import { loadDigestKey } from '../manager/digestKey.ts';
import { AGENT_NAME } from '../objects/ownership.ts';
import { terminalLine } from '../report/terminalText.ts';
import { AGENT_VERSION } from '../version.ts';

export const CONFIG_FLAGS = {
  config: { type: 'string' },
  'listener-id': { type: 'string' },
  'control-plane': { type: 'string' },
  kubeconfig: { type: 'string' },
  namespaces: { type: 'string' },
  'log-level': { type: 'string' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export const CONFIG_FLAGS_USAGE = `Configuration (a file, then environment variables, then these flags):
  --config FILE          agent configuration (YAML; the Helm chart's ConfigMap)
  --listener-id ID       K8S_LISTENER_LISTENER_ID
  --control-plane URL    K8S_LISTENER_CONTROL_PLANE_URL (API key: K8S_LISTENER_API_KEY,
                         or a file: K8S_LISTENER_API_KEY_FILE)
  --kubeconfig FILE      K8S_LISTENER_KUBECONFIG (default: in-cluster)
  --namespaces a,b       K8S_LISTENER_NAMESPACES (the agent's namespace allow-list)
  --log-level LEVEL      LOG_LEVEL (trace, debug, info, warn, error, fatal, silent)`;

export interface ConfigFlagValues {
  readonly config?: string | undefined;
  readonly 'listener-id'?: string | undefined;
  readonly 'control-plane'?: string | undefined;
  readonly kubeconfig?: string | undefined;
  readonly namespaces?: string | undefined;
  readonly 'log-level'?: string | undefined;
}

/** Loads the configuration with the flags applied over the file and the environment. */
export async function loadConfigFromFlags(
  values: ConfigFlagValues,
  extra: Record<string, unknown> = {},
): Promise<AgentConfig> {
  return loadAgentConfig({
    file: values.config,
    overrides: {
      listenerId: values['listener-id'],
      'controlPlane.baseUrl': values['control-plane'],
      kubeconfig: values.kubeconfig,
      namespaces: values.namespaces
        ?.split(',')
        .map((n) => n.trim())
        .filter(Boolean),
      'log.level': values['log-level'],
      ...extra,
    },
  });
}

/**
 * The agent's digest key for a command that renders as the agent does (status, diff): without it
 * the digests differ from the agent's, so it says, in one line, what the command does instead.
 */
export async function commandDigestKey(
  kube: Pick<KubeClient, 'get' | 'create'>,
  config: AgentConfig,
  stderr: { write(text: string): unknown },
  without: string,
): Promise<Uint8Array | undefined> {
  const where = `namespace ${config.agentNamespace} (agentNamespace)`;
  try {
    const key = await loadDigestKey(kube, config.agentNamespace, { create: false });
    if (!key) stderr.write(`warning: no digest key in ${where}: ${without}\n`);
    return key;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    stderr.write(
      terminalLine(`warning: the digest key in ${where} could not be read (${reason}): ${without}`),
    );
    return undefined;
  }
}

/**
 * The control-plane client of a one-shot command (status, diff, check): the agent's credentials,
 * and a short retry — a command answers in seconds; it does not wait out an outage.
 */
export function commandControlPlaneClient(
  config: AgentConfig,
  logger: Logger,
  command: string,
): ControlPlaneClient {
  const { baseUrl, apiKey, apiKeyFile, tenantId, timeoutMs, maxResponseBytes, maxPages, maxListingBytes } =
    config.controlPlane;
  return new ControlPlaneClient({
    baseUrl,
    timeoutMs,
    maxResponseBytes,
    maxPages,
    maxListingBytes,
    ...(apiKey ? { apiKey } : {}),
    ...(apiKeyFile ? { apiKeyFile } : {}),
    ...(tenantId ? { tenantId } : {}),
    retry: { retries: 1, minDelayMs: 200, maxDelayMs: 1_000, maxElapsedMs: 5_000 },
    logger,
    userAgent: `${AGENT_NAME}/${AGENT_VERSION} ${command}`,
  });
}
