// The candidates for a host's holder: every route of both kinds in the namespaces the agent reads,
// whichever kind this configuration renders — an HTTPRoute takes a host an Ingress serves as
// surely as another Ingress does (docs/design.md, "What a pod may name"). A kind the API server
// does not serve (no Gateway API CRDs) has no holders; one it serves but the agent may not list
// fails closed: no host is judged free on a listing that could not be read.
import { isForbidden, isNotFound, KubeUnsupportedKindError, type LiveKubeObject } from '../../kube/index.ts';
import { ReconcileReason } from '../../report/reconcileReason.ts';
import type { KubeReader } from '../kubeAccess.ts';
import { WaitingError } from '../outcome.ts';
import { ROUTE_KINDS, type RouteKind } from './routedHosts.ts';

/**
 * The routes of every kind in these namespaces, read from the API server. A 403 is a WaitingError
 * (`HostsUnreadable`) naming the kind and namespace, and nothing is written while it lasts.
 */
export async function listRoutes(
  kube: KubeReader,
  namespaces: readonly string[],
  deploymentId: string,
  signal: AbortSignal | undefined,
): Promise<LiveKubeObject[]> {
  const listed = await Promise.all(
    namespaces.flatMap((namespace) =>
      ROUTE_KINDS.map((kind) => routesOf(kube, kind, namespace, deploymentId, signal)),
    ),
  );
  return listed.flat();
}

async function routesOf(
  kube: KubeReader,
  kind: RouteKind,
  namespace: string,
  deploymentId: string,
  signal: AbortSignal | undefined,
): Promise<LiveKubeObject[]> {
  try {
    return await kube.list(kind, { namespace, signal });
  } catch (error) {
    // Not served (its CRD absent: a listing answers 404), or not a kind this client knows: no
    // object of it exists, so none holds a host. Asked again each time: a CRD installed later is
    // seen at once, and only a route's write asks.
    if (error instanceof KubeUnsupportedKindError || isNotFound(error)) return [];
    if (isForbidden(error))
      throw new WaitingError(
        ReconcileReason.HostsUnreadable,
        deploymentId,
        `source_config.custom_url: the agent may not list ${kind} objects in namespace ${namespace}, ` +
          'so whether another route serves the host cannot be told: grant it list on them there; ' +
          'nothing is applied until then',
        { cause: error },
      );
    throw error;
  }
}
