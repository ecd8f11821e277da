// Which namespaces a listener's deployments may use: the agent, `status`, `diff` and `check` all
// ask this one function, so what they look at is what the agent manages.
import type { Listener } from '../controlplane/schemas/index.ts';

/**
 * The listener's namespaces, kept by the agent's allow-list when it has one, never the agent's
 * own (a deployment there could name the agent's ServiceAccount or mount its Secrets).
 */
export function managedNamespaces(
  listener: Listener,
  allowed: readonly string[] | undefined,
  agentNamespace: string,
): string[] {
  const listed = [...new Set(listener.compute_config?.k8s_namespaces ?? [])].filter(
    (n) => n !== agentNamespace,
  );
  return allowed ? listed.filter((n) => allowed.includes(n)) : listed;
}
