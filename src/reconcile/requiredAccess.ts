// The Kubernetes permissions the agent needs, derived from what it does: the kinds render writes
// (read back, applied, pruned), the kinds the agent watches, the inventory, rollout status, Events
// and leader election. `k8s-listener check` asks the API server about each; keep it in step.
import { KubeUnsupportedKindError } from '../kube/errors.ts';
import { resourceTypeOf } from '../kube/resources.ts';
import { DIGEST_KEY_SECRET } from '../objects/ownership.ts';
import type { RenderConfig } from '../render/renderConfig.ts';
import type { ReconcileConfig } from './reconcileConfig.ts';
import { SUSPENSIONS_CONFIGMAP } from './suspensions.ts';
import { OBSERVED_KINDS, WATCHED_KINDS } from './watchedKinds.ts';

export interface RequiredAccess {
  /** '' for the core group. */
  readonly group: string;
  readonly resource: string;
  /** Only this object (RBAC `resourceNames`); absent: any object of the resource. */
  readonly name?: string | undefined;
  readonly verbs: readonly string[];
  /** Why the agent needs it, for the operator reading a failed check. */
  readonly why: string;
}

type WrittenKind =
  | 'Deployment'
  | 'StatefulSet'
  | 'Service'
  | 'Secret'
  | 'PodTemplate'
  | 'HorizontalPodAutoscaler'
  | 'PodDisruptionBudget'
  | 'Ingress'
  | 'NetworkPolicy'
  | 'HTTPRoute'
  | 'ScaledObject'
  | 'TriggerAuthentication';

const WATCHED: ReadonlySet<string> = new Set([...WATCHED_KINDS, ...OBSERVED_KINDS]);

function resourceOf(kind: WrittenKind | 'ConfigMap' | 'PersistentVolumeClaim' | 'Pod'): {
  group: string;
  resource: string;
} {
  const type = resourceTypeOf(kind);
  if (type === undefined) throw new KubeUnsupportedKindError('', kind);
  return { group: type.group, resource: type.plural };
}

/** What a watched kind adds: the watcher lists, then watches. */
function watchVerbs(kind: string): string[] {
  return WATCHED.has(kind) ? ['list', 'watch'] : [];
}

/**
 * A kind render writes: read back before a write (get), applied (patch: server-side apply), pruned
 * (delete), and listed and watched when the agent watches it.
 */
function written(kind: WrittenKind, why: string, extra: readonly string[] = []): RequiredAccess {
  return { ...resourceOf(kind), verbs: ['get', ...watchVerbs(kind), ...extra, 'patch', 'delete'], why };
}

/** What the agent needs in every namespace it manages. */
export function namespaceAccess(config: {
  readonly render: Pick<RenderConfig, 'ingress' | 'networkPolicy' | 'gateway' | 'autoscaling'>;
  readonly reconcile: Pick<ReconcileConfig, 'prune'>;
}): RequiredAccess[] {
  const access: RequiredAccess[] = [
    written('Deployment', 'the workloads of every deployment'),
    written('StatefulSet', 'databases and key-value stores'),
    written('Service', 'the Service of each workload'),
    // create: a database's credentials Secret is created once, never overwritten.
    written('Secret', "a deployment's secrets and generated database credentials", ['create']),
    written('PodTemplate', 'the executor PodTemplate'),
    written('HorizontalPodAutoscaler', 'autoscaling when max_scale > min_scale'),
    written('PodDisruptionBudget', 'the PodDisruptionBudget of prod deployments'),
    {
      ...resourceOf('ConfigMap'),
      // The inventory is loaded by listing, written by apply, removed with its deployment; a
      // ConfigMap a pod names is read to judge whose it is.
      verbs: [...new Set(['get', 'list', ...watchVerbs('ConfigMap'), 'patch', 'delete'])],
      why: 'the inventory of each deployment and its status annotation, and whose a ConfigMap a pod names is',
    },
    {
      ...resourceOf('PersistentVolumeClaim'),
      // get: whose a claim is that a pod names or a StatefulSet would bind (a kept volume). delete:
      // a renamed deployment keeps reconcile.prune.keptVolumesPerDeployment earlier names' volumes.
      verbs: [...new Set(['get', 'list', ...watchVerbs('PersistentVolumeClaim'), 'delete'])],
      why: config.reconcile.prune.keepDatabaseVolumes
        ? "database volume status, whose an existing claim is before a StatefulSet binds it, and removing the volumes of a renamed deployment's earlier names past reconcile.prune.keptVolumesPerDeployment"
        : "database volume status, whose an existing claim is before a StatefulSet binds it, and removing the volumes of deleted deployments (prune.keepDatabaseVolumes: false) and of a renamed deployment's earlier names",
    },
    {
      ...resourceOf('Pod'),
      verbs: [...new Set(['list', ...watchVerbs('Pod')])],
      why: 'rollout status: pods in a crash loop, an image pull failure or unschedulable (watched)',
    },
    {
      group: '',
      resource: 'pods/log',
      verbs: ['get'],
      why: "the last lines of a crashed container's log, the evidence of a failure sent to its tenant (report.containerLogLines)",
    },
    {
      group: 'events.k8s.io',
      resource: 'events',
      // A repeated Event is one object whose series is patched; a failing pod's are listed.
      verbs: ['create', 'patch', 'list'],
      why: "rollout Events on each Deployment, and a failing pod's warning Events (the evidence of a failure)",
    },
  ];
  if (config.render.ingress.className !== undefined) {
    access.push(written('Ingress', 'the Ingress of custom_url (render.ingress.className is set)'));
  }
  if (config.render.networkPolicy.enabled) {
    access.push(written('NetworkPolicy', "each deployment's network fence (render.networkPolicy.enabled)"));
  }
  if (config.render.gateway.parentRefs.length > 0) {
    access.push(written('HTTPRoute', 'the HTTPRoute of custom_url (render.gateway.parentRefs is set)'));
  }
  // One registry of hosts: a custom_url host is judged against the routes of both kinds, so the
  // kind not rendered is listed too (read only).
  const ingress = config.render.ingress.className !== undefined;
  const gateway = config.render.gateway.parentRefs.length > 0;
  if (gateway && !ingress)
    access.push({
      ...resourceOf('Ingress'),
      verbs: ['list'],
      why: 'whether an Ingress already routes a custom_url host (one holder across both route kinds)',
    });
  if (ingress && !gateway)
    access.push({
      ...resourceOf('HTTPRoute'),
      verbs: ['list'],
      why: 'whether an HTTPRoute already routes a custom_url host (one holder across both route kinds)',
    });
  if (config.render.autoscaling.queue === 'keda') {
    access.push(
      written('ScaledObject', 'queue workers scaled on runs (render.autoscaling.queue: keda)'),
      written('TriggerAuthentication', "where KEDA reads each deployment's database connection from"),
    );
  }
  return access;
}

/**
 * What leader election needs in the Lease's namespace (leaseNamespace, else agentNamespace); none
 * when it is off. RBAC cannot name an object before it exists, so create is for any Lease.
 */
export function leaseAccess(config: {
  readonly reconcile: Pick<ReconcileConfig, 'leaderElection'>;
}): RequiredAccess[] {
  const election = config.reconcile.leaderElection;
  if (!election.enabled) return [];
  return [
    {
      group: 'coordination.k8s.io',
      resource: 'leases',
      verbs: ['create'],
      why: 'leader election: the first replica creates the Lease',
    },
    {
      group: 'coordination.k8s.io',
      resource: 'leases',
      name: election.leaseName,
      verbs: ['get', 'update'],
      why: 'leader election: only the holder of the Lease writes, and renews it',
    },
  ];
}

/** `deployments.apps`, `secrets`, `leases.coordination.k8s.io/k8s-listener`: as RBAC and kubectl name them. */
export function qualifiedResource(access: Pick<RequiredAccess, 'group' | 'resource' | 'name'>): string {
  const resource = access.group === '' ? access.resource : `${access.resource}.${access.group}`;
  return access.name === undefined ? resource : `${resource}/${access.name}`;
}

/**
 * What the agent needs in its own namespace: its digest key Secret, read by name and made on the
 * first start (RBAC cannot name an object before it exists, so create is for any Secret there), and
 * the suspensions ConfigMap by name (the chart makes it).
 */
export function agentNamespaceAccess(): RequiredAccess[] {
  return [
    { group: '', resource: 'secrets', verbs: ['create'], why: 'the digest key, made on the first start' },
    {
      group: '',
      resource: 'secrets',
      name: DIGEST_KEY_SECRET,
      verbs: ['get'],
      why: 'the digest key of spec hashes and config checksums',
    },
    {
      group: '',
      resource: 'configmaps',
      name: SUSPENSIONS_CONFIGMAP,
      verbs: ['get', 'patch'],
      why: 'suspensions: read at each poll and acknowledged by the leader',
    },
  ];
}
