// Why a reconcile itself failed or waits — its render, its apply, the rules on what a pod may name
// and which host a route may take, a namespace not there — apart from rollout health (the kstatus
// reasons of rolloutHealth.ts). Raised where they arise (reconcile/outcome.ts), told as a report's
// reason like any other.
export const ReconcileReason = {
  ApplyRejected: 'ApplyRejected',
  RenderInvalid: 'RenderInvalid',
  ForeignReference: 'ForeignReference',
  ReferenceMissing: 'ReferenceMissing',
  ClaimTaken: 'ClaimTaken',
  HostTaken: 'HostTaken',
  HostsUnreadable: 'HostsUnreadable',
  NamespaceMissing: 'NamespaceMissing',
} as const;
export type ReconcileReason = (typeof ReconcileReason)[keyof typeof ReconcileReason];
