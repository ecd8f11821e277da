// The one table of the Kubernetes kinds the agent touches: per kind, where its API is and what the
// agent does with it. The resource table (kube/resources.ts), the watched kinds
// (reconcile/policy/watchedKinds.ts) and the permissions `check` asks for (cli/requiredAccess.ts)
// are derived from it; the chart's Role and the kustomize Role are held to it by tests.

/** The render settings that turn optional kinds on (a RenderConfig is one). */
export interface KindSettings {
  readonly ingress: { readonly className?: string | undefined };
  readonly networkPolicy: { readonly enabled: boolean };
  readonly gateway: { readonly parentRefs: readonly unknown[] };
  readonly autoscaling: { readonly queue: string };
}

/** An RBAC verb the agent uses. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export interface KindRow {
  readonly kind: string;
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
  /**
   * What the agent writes of it by server-side apply (so it needs get, create, patch and delete):
   * `rendered`, what render makes (recorded in the inventory, applied, pruned); `inventory`, the
   * inventory ConfigMaps themselves.
   */
  readonly written?: 'rendered' | 'inventory';
  /**
   * Watched into the cache: `wakes`, a hand edit or deletion wakes its deployment at once;
   * `cached`, read for rollout status without a request, waking nothing.
   */
  readonly watched?: 'wakes' | 'cached';
  /** A workload: its pod template is rolled out by a changed render. */
  readonly workload?: boolean;
  /** Carries a pod template (the workloads, and the executors' PodTemplate). */
  readonly podTemplate?: boolean;
  /**
   * Its status counts in a deployment's rollout health (kstatus's checks, and the Gateway's word
   * on an HTTPRoute, KEDA's on a ScaledObject).
   */
  readonly rollout?: boolean;
  /** The render setting that makes render write it; absent: always written. */
  readonly enabledBy?: {
    readonly setting: string;
    readonly enabled: (render: KindSettings) => boolean;
  };
  /** A custom resource: what installs its CRD (a cluster without it does not serve the kind). */
  readonly crd?: string;
  /** A route of custom_url: a host is judged against the routes of every route kind. */
  readonly route?: boolean;
  /**
   * What else the agent does with it, and which command needs it: `run` (what `check` asks for),
   * or `status` alone (run in the agent's pod with its account).
   */
  readonly uses?: { readonly verbs: readonly Verb[]; readonly by: 'run' | 'status' };
  /** Subresources the agent reads (`pods/log`), with why. */
  readonly subresources?: readonly {
    readonly name: string;
    readonly verbs: readonly Verb[];
    readonly why: string;
  }[];
  /** Why the agent needs it, for the operator reading a failed check; a function where pruning decides it. */
  readonly why?: string | ((prune: { readonly keepDatabaseVolumes: boolean }) => string);
}

const INGRESS = {
  setting: 'render.ingress.className',
  enabled: (render: KindSettings) => render.ingress.className !== undefined,
};
const GATEWAY = {
  setting: 'render.gateway.parentRefs',
  enabled: (render: KindSettings) => render.gateway.parentRefs.length > 0,
};
const KEDA = {
  setting: 'render.autoscaling.queue: keda',
  enabled: (render: KindSettings) => render.autoscaling.queue === 'keda',
};
const NETWORK_POLICY = {
  setting: 'render.networkPolicy.enabled',
  enabled: (render: KindSettings) => render.networkPolicy.enabled,
};

/**
 * Every kind, in the order `check` asks for them. `Event` appears twice: core/v1 (reachable by an
 * explicit apiVersion) before events.k8s.io/v1, which the kind name alone means.
 */
export const KINDS = [
  {
    kind: 'Deployment',
    group: 'apps',
    version: 'v1',
    plural: 'deployments',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    workload: true,
    podTemplate: true,
    rollout: true,
    why: 'the workloads of every deployment',
  },
  {
    kind: 'StatefulSet',
    group: 'apps',
    version: 'v1',
    plural: 'statefulsets',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    workload: true,
    podTemplate: true,
    rollout: true,
    why: 'databases and key-value stores',
  },
  {
    kind: 'Service',
    group: '',
    version: 'v1',
    plural: 'services',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    why: 'the Service of each workload',
  },
  {
    kind: 'Secret',
    group: '',
    version: 'v1',
    plural: 'secrets',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    why: "a deployment's secrets and generated database credentials",
  },
  {
    kind: 'PodTemplate',
    group: '',
    version: 'v1',
    plural: 'podtemplates',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    podTemplate: true,
    why: 'the executor PodTemplate',
  },
  {
    kind: 'HorizontalPodAutoscaler',
    group: 'autoscaling',
    version: 'v2',
    plural: 'horizontalpodautoscalers',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    rollout: true,
    why: 'autoscaling when max_scale > min_scale',
  },
  {
    kind: 'PodDisruptionBudget',
    group: 'policy',
    version: 'v1',
    plural: 'poddisruptionbudgets',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    why: 'the PodDisruptionBudget of prod deployments',
  },
  {
    kind: 'ConfigMap',
    group: '',
    version: 'v1',
    plural: 'configmaps',
    namespaced: true,
    // The inventory is loaded by listing, written by apply, removed with its deployment; a
    // ConfigMap a pod names is read to judge whose it is.
    written: 'inventory',
    watched: 'wakes',
    why: 'the inventory of each deployment and its status annotation, and whose a ConfigMap a pod names is',
  },
  {
    kind: 'PersistentVolumeClaim',
    group: '',
    version: 'v1',
    plural: 'persistentvolumeclaims',
    namespaced: true,
    watched: 'wakes',
    // get: whose a claim is that a pod names or a StatefulSet would bind (a kept volume). delete:
    // a renamed deployment keeps reconcile.prune.keptVolumesPerDeployment earlier names' volumes.
    uses: { verbs: ['get', 'list', 'delete'], by: 'run' },
    why: (prune) =>
      prune.keepDatabaseVolumes
        ? "database volume status, whose an existing claim is before a StatefulSet binds it, and removing the volumes of a renamed deployment's earlier names past reconcile.prune.keptVolumesPerDeployment"
        : "database volume status, whose an existing claim is before a StatefulSet binds it, and removing the volumes of deleted deployments (prune.keepDatabaseVolumes: false) and of a renamed deployment's earlier names",
  },
  {
    kind: 'Pod',
    group: '',
    version: 'v1',
    plural: 'pods',
    namespaced: true,
    watched: 'cached',
    uses: { verbs: ['list'], by: 'run' },
    subresources: [
      {
        name: 'log',
        verbs: ['get'],
        why: "the last lines of a crashed container's log, the evidence of a failure sent to its tenant (report.containerLogLines)",
      },
    ],
    why: 'rollout status: pods in a crash loop, an image pull failure or unschedulable (watched)',
  },
  { kind: 'Event', group: '', version: 'v1', plural: 'events', namespaced: true },
  {
    kind: 'Event',
    group: 'events.k8s.io',
    version: 'v1',
    plural: 'events',
    namespaced: true,
    // A repeated Event is one object whose series is patched; a failing pod's are listed.
    uses: { verbs: ['create', 'patch', 'list'], by: 'run' },
    why: "rollout Events on each Deployment, and a failing pod's warning Events (the evidence of a failure)",
  },
  {
    kind: 'Ingress',
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'ingresses',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    route: true,
    enabledBy: INGRESS,
    why: 'the Ingress of custom_url (render.ingress.className is set)',
  },
  {
    kind: 'NetworkPolicy',
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'networkpolicies',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    enabledBy: NETWORK_POLICY,
    why: "each deployment's network fence (render.networkPolicy.enabled)",
  },
  {
    kind: 'HTTPRoute',
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    plural: 'httproutes',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    rollout: true,
    route: true,
    enabledBy: GATEWAY,
    crd: "the Gateway API's standard CRDs",
    why: 'the HTTPRoute of custom_url (render.gateway.parentRefs is set)',
  },
  {
    kind: 'ScaledObject',
    group: 'keda.sh',
    version: 'v1alpha1',
    plural: 'scaledobjects',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    rollout: true,
    enabledBy: KEDA,
    crd: 'KEDA',
    why: 'queue workers scaled on runs (render.autoscaling.queue: keda)',
  },
  {
    kind: 'TriggerAuthentication',
    group: 'keda.sh',
    version: 'v1alpha1',
    plural: 'triggerauthentications',
    namespaced: true,
    written: 'rendered',
    watched: 'wakes',
    enabledBy: KEDA,
    crd: 'KEDA',
    why: "where KEDA reads each deployment's database connection from",
  },
  {
    kind: 'ReplicaSet',
    group: 'apps',
    version: 'v1',
    plural: 'replicasets',
    namespaced: true,
    // `k8s-listener status` lists each workload's ReplicaSets; `run` does not.
    uses: { verbs: ['list'], by: 'status' },
    why: "each workload's ReplicaSets, for `k8s-listener status`",
  },
  { kind: 'Namespace', group: '', version: 'v1', plural: 'namespaces', namespaced: false },
  // Leader election's Lease: its access is asked by name (cli/requiredAccess.ts, leaseAccess).
  { kind: 'Lease', group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespaced: true },
] as const satisfies readonly KindRow[];

/** A kind name of the table. */
export type TableKind = (typeof KINDS)[number]['kind'];

/** The rows as the general shape (the literal types of `KINDS` narrowed away). */
export const KIND_ROWS: readonly KindRow[] = KINDS;

/** Whether render writes this kind under this render configuration (always, unless a setting turns it on). */
export function isEnabled(row: KindRow, render: KindSettings): boolean {
  return row.enabledBy === undefined || row.enabledBy.enabled(render);
}

/** Whether render writes a kind of the table under this render configuration (a kind it never writes: false). */
export function kindEnabled(kind: TableKind, render: KindSettings): boolean {
  return KIND_ROWS.some((row) => row.kind === kind && row.written === 'rendered' && isEnabled(row, render));
}

/** The kinds of the rows that pass `test`, in table order (a kind twice when two rows pass). */
export function kindsWhere(test: (row: KindRow) => boolean): TableKind[] {
  return KINDS.filter((row: KindRow) => test(row)).map((row) => row.kind);
}

/** The kinds whose pod template a changed render rolls out: the workloads. */
export const WORKLOAD_KINDS: ReadonlySet<string> = new Set(kindsWhere((row) => row.workload === true));

/** The kinds that carry a pod template: the workloads, and the executors' PodTemplate. */
export const POD_TEMPLATE_KINDS: ReadonlySet<string> = new Set(kindsWhere((row) => row.podTemplate === true));

/** The kinds whose status counts in a deployment's rollout health. */
export const ROLLOUT_KINDS: ReadonlySet<string> = new Set(kindsWhere((row) => row.rollout === true));
