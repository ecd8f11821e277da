// Which namespaces a listener's deployments may use: the agent, `status`, `diff` and `check` all
// ask this one function, so what they look at is what the agent manages.
import type { Listener } from '../../controlplane/schemas/index.ts';

/**
 * The listener's namespaces, kept by the agent's allow-list when it has one, never the agent's
 * own (a deployment there could name the agent's ServiceAccount or mount its Secrets); none for
 * a listener of another compute type.
 */
export function managedNamespaces(
  listener: Listener,
  allowed: readonly string[] | undefined,
  agentNamespace: string,
): string[] {
  if (listener.compute_type !== 'k8s') return [];
  const listed = [...new Set(listener.compute_config?.k8s_namespaces ?? [])].filter(
    (n) => n !== agentNamespace,
  );
  return allowed ? listed.filter((n) => allowed.includes(n)) : listed;
}
