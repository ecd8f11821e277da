// The kinds render writes, by what they do once written. `run`, `diff` and `status` read these
// sets alone, so a kind added to render counts the same way everywhere.

/** The kinds whose pod template a changed render rolls out: the workloads. */
export const WORKLOAD_KINDS: ReadonlySet<string> = new Set(['Deployment', 'StatefulSet']);

/** The kinds that carry a pod template: the workloads, and the executors' PodTemplate. */
export const POD_TEMPLATE_KINDS: ReadonlySet<string> = new Set([...WORKLOAD_KINDS, 'PodTemplate']);

/**
 * The kinds whose status counts in a deployment's rollout health (kstatus's checks, and the
 * Gateway's word on an HTTPRoute, KEDA's on a ScaledObject).
 */
export const ROLLOUT_KINDS: ReadonlySet<string> = new Set([
  ...WORKLOAD_KINDS,
  'HorizontalPodAutoscaler',
  'HTTPRoute',
  'ScaledObject',
]);
