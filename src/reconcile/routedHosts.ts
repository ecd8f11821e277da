// A host routed to a deployment is that deployment's alone, whether an Ingress or an HTTPRoute
// routes it. Two Ingresses naming one host leave the choice of backend to the ingress controller
// (ingress-nginx: the oldest), and two HTTPRoutes on one Gateway merge their rules, so a tenant
// could claim a host first — a neighbour's, or the platform's own — or take one over. The first
// holder keeps it; a later one is refused, naming the holder. Pure: the reconciler lists the
// candidates.
import type { LiveKubeObject } from '../kube/decode.ts';
import { fieldAt } from '../objects/fields.ts';
import type { KubeObject } from '../objects/kubeObject.ts';
import {
  AGENT_NAME,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../objects/ownership.ts';
import type { RenderConfig } from '../render/renderConfig.ts';

/** Every kind whose objects route a host to a Service. */
const ALL_ROUTE_KINDS: readonly string[] = ['Ingress', 'HTTPRoute'];

export function isRouteKind(kind: string): boolean {
  return ALL_ROUTE_KINDS.includes(kind);
}

/**
 * The kinds to list for the holders of a host under this configuration: those the agent renders
 * (and holds permissions for). HTTPRoute only with a Gateway configured: its CRD may be absent
 * elsewhere, and listing a kind the API server does not serve fails.
 */
export function routeKinds(render: Pick<RenderConfig, 'ingress' | 'gateway'>): ('Ingress' | 'HTTPRoute')[] {
  return [
    ...(render.ingress.className !== undefined ? (['Ingress'] as const) : []),
    ...(render.gateway.parentRefs.length > 0 ? (['HTTPRoute'] as const) : []),
  ];
}

/** The hosts an object routes (an Ingress's rules, an HTTPRoute's hostnames), lower-cased; none for other kinds. */
export function hostsOf(object: KubeObject): string[] {
  let hosts: unknown[] = [];
  if (object.kind === 'Ingress') {
    const rules = fieldAt(object, 'spec', 'rules');
    hosts = (Array.isArray(rules) ? rules : []).map((rule) => fieldAt(rule, 'host'));
  } else if (object.kind === 'HTTPRoute') {
    const hostnames = fieldAt(object, 'spec', 'hostnames');
    hosts = Array.isArray(hostnames) ? hostnames : [];
  }
  const named = hosts
    .filter((host): host is string => typeof host === 'string' && host !== '')
    .map((host) => host.toLowerCase());
  return [...new Set(named)];
}

/** The hosts the rendered objects route. */
export function routedHosts(objects: readonly KubeObject[]): string[] {
  return [...new Set(objects.flatMap(hostsOf))];
}

/** The name-lock key of a host: held from the look at its holders to the write of the route. */
export function hostLockKey(host: string): string {
  return `host ${host}`;
}

/**
 * Who holds a host, when not this deployment: among the live routes that name it (this
 * deployment's own included, if live), the oldest — ties broken by namespace and name, so every
 * reconcile agrees. Undefined when this deployment holds it or nobody does.
 */
export function hostHolder(
  host: string,
  routes: readonly LiveKubeObject[],
  deploymentId: string,
  listenerId: string,
): string | undefined {
  const naming = routes.filter((route) => hostsOf(route).includes(host));
  const ours = (route: LiveKubeObject) =>
    route.metadata.labels[LABEL_LISTENER_ID] === listenerId &&
    route.metadata.labels[LABEL_DEPLOYMENT_ID] === deploymentId;
  const order = (route: LiveKubeObject) =>
    `${route.metadata.creationTimestamp ?? ''}\u0000${route.metadata.namespace ?? ''}\u0000${route.metadata.name}`;
  const [first] = [...naming].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  if (!first || ours(first)) return undefined;
  const { labels } = first.metadata;
  const owner = labels[LABEL_DEPLOYMENT_ID];
  if (
    owner !== undefined &&
    (labels[LABEL_MANAGED_BY] === AGENT_NAME || labels[LABEL_LISTENER_ID] !== undefined)
  )
    return `deployment ${owner}${labels[LABEL_LISTENER_ID] === listenerId ? '' : ' (of another listener)'}`;
  return `${first.kind} ${first.metadata.namespace}/${first.metadata.name}, which this agent does not manage`;
}
