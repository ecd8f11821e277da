// A host routed to a deployment is that deployment's alone, whether an Ingress or an HTTPRoute
// routes it. Two Ingresses naming one host leave the choice of backend to the ingress controller
// (ingress-nginx: the oldest), and two HTTPRoutes on one Gateway merge their rules, so a tenant
// could claim a host first — a neighbour's, or the platform's own — or take one over. The first
// holder keeps it; a later one is refused, naming the holder, whichever kind each routes by. Pure:
// the candidates are listed by hostRegistry.ts.
import type { LiveKubeObject } from '../../kube/decode.ts';
import { fieldAt } from '../../objects/fields.ts';
import type { KubeObject } from '../../objects/kubeObject.ts';
import { agentHolder, isThisDeployments } from '../../objects/ownership.ts';

/** Every kind whose objects route a host: a host's holder is looked for among all of them. */
export const ROUTE_KINDS = ['Ingress', 'HTTPRoute'] as const;
export type RouteKind = (typeof ROUTE_KINDS)[number];

export function isRouteKind(kind: string): boolean {
  return (ROUTE_KINDS as readonly string[]).includes(kind);
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
  const order = (route: LiveKubeObject) =>
    `${route.metadata.creationTimestamp ?? ''}\u0000${route.metadata.namespace ?? ''}\u0000${route.metadata.name}`;
  const [first] = [...naming].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  if (!first || isThisDeployments(first, listenerId, deploymentId)) return undefined;
  const holder = agentHolder(first);
  if (holder)
    return `deployment ${holder.deploymentId}${holder.listenerId === listenerId ? '' : ' (of another listener)'}`;
  return `${first.kind} ${first.metadata.namespace}/${first.metadata.name}, which this agent does not manage`;
}
