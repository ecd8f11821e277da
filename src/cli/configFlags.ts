// The flags every command that acts as the agent takes (run, status, diff, check), and how they
// land in the agent configuration: a file, then environment variables, then these flags.
import type { ParseArgsConfig } from 'node:util';
import { type AgentConfig, loadAgentConfig } from '../config/agentConfig.ts';

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
