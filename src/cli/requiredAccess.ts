// The Kubernetes permissions the agent needs, derived from the kind table (objects/kinds.ts): the
// kinds it writes (read back, applied — created or patched — and pruned), the kinds it watches, the
// inventory, rollout status and Events; and, by name, its Lease, digest key and suspensions.
// `k8s-listener check` asks the API server about each.
import { isEnabled, KIND_ROWS, type KindRow, type KindSettings, type Verb } from '../objects/kinds.ts';
import { DIGEST_KEY_SECRET } from '../objects/ownership.ts';
import type { ReconcileConfig } from '../reconcile/policy/reconcileConfig.ts';
import { SUSPENSIONS_CONFIGMAP } from '../reconcile/policy/suspensions.ts';

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

/** The verbs a kind of the table needs in a managed namespace (none: it is asked for elsewhere). */
function kindVerbs(row: KindRow): Verb[] {
  const watch: Verb[] = row.watched === undefined ? [] : ['list', 'watch'];
  // Server-side apply that creates an object is authorized as create, one that changes it as
  // patch; a written object is read back before a write (get) and pruned (delete).
  if (row.written !== undefined) return ['get', ...watch, 'create', 'patch', 'delete'];
  const used = row.uses?.verbs ?? [];
  if (watch.length === 0) return [...used];
  // The watcher lists, then watches: watch goes beside list.
  const at = used.includes('list') ? used.indexOf('list') + 1 : 0;
  return [...new Set([...used.slice(0, at), ...watch, ...used.slice(at)])];
}

function whyOf(row: KindRow, prune: { readonly keepDatabaseVolumes: boolean }): string {
  return typeof row.why === 'function' ? row.why(prune) : (row.why ?? row.plural);
}

/**
 * What the agent needs in every namespace it manages, read off the kind table: each kind it writes
 * under this render configuration, watches or otherwise uses for `run`. A custom_url host is
 * judged against the routes of every route kind, so a route kind not rendered is listed when
 * another is.
 */
export function namespaceAccess(config: {
  readonly render: KindSettings;
  readonly reconcile: Pick<ReconcileConfig, 'prune'>;
}): RequiredAccess[] {
  return accessOf(config, 'run');
}

/**
 * What `k8s-listener status` needs beyond `run` in a managed namespace (it runs in the agent's
 * pod, with the agent's account): not asked by `check`, granted by the chart.
 */
export function statusAccess(config: {
  readonly render: KindSettings;
  readonly reconcile: Pick<ReconcileConfig, 'prune'>;
}): RequiredAccess[] {
  return accessOf(config, 'status');
}

function accessOf(
  config: { readonly render: KindSettings; readonly reconcile: Pick<ReconcileConfig, 'prune'> },
  by: 'run' | 'status',
): RequiredAccess[] {
  const { render } = config;
  const routes = KIND_ROWS.filter((row) => row.route === true);
  const routed = routes.some((row) => isEnabled(row, render));
  const access: RequiredAccess[] = [];
  // Listed only, after the rendered routes: the route kinds not rendered when another is.
  const listedRoutes: RequiredAccess[] = [];
  for (const row of KIND_ROWS) {
    if (!row.namespaced || (row.uses?.by ?? 'run') !== by) continue;
    if (isEnabled(row, render)) {
      const verbs = kindVerbs(row);
      if (verbs.length > 0) {
        access.push({
          group: row.group,
          resource: row.plural,
          verbs,
          why: whyOf(row, config.reconcile.prune),
        });
        for (const sub of row.subresources ?? [])
          access.push({
            group: row.group,
            resource: `${row.plural}/${sub.name}`,
            verbs: [...sub.verbs],
            why: sub.why,
          });
      }
    } else if (row.route === true && routed && by === 'run')
      listedRoutes.push({
        group: row.group,
        resource: row.plural,
        verbs: ['list'],
        why: `whether an ${row.kind} already routes a custom_url host (one holder across both route kinds)`,
      });
    if (row === routes.at(-1)) access.push(...listedRoutes);
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
