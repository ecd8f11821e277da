// Rollout status as a pure function of live objects, in the manner of kstatus
// (sigs.k8s.io/cli-utils pkg/kstatus/status): generic checks first (deletion, observed
// generation), then kstatus's check per kind, in its order; reasons are named constants.

import { type Condition, fieldAt, statusConditions } from '../objects/fields.ts';
import type { ReconcileReason } from './reconcileReason.ts';

/** How long a pod may sit in a back-off before the rollout fails: `status` and `run` alike. */
export const DEFAULT_FAILURE_GRACE_MS = 120_000;

export type ObjectStatus = 'Current' | 'InProgress' | 'Failed' | 'Terminating' | 'NotFound';

export const Reason = {
  Terminating: 'Terminating',
  NotObserved: 'GenerationNotObserved',
  ProgressDeadlineExceeded: 'ProgressDeadlineExceeded',
  ReplicaFailure: 'ReplicaFailure',
  CreatingReplicas: 'CreatingReplicas',
  UpdatingReplicas: 'UpdatingReplicas',
  ExtraPods: 'ExtraPods',
  NotAvailable: 'NotAvailable',
  WaitingForAvailable: 'WaitingForAvailable',
  WaitingForReady: 'WaitingForReady',
  UpdateRevisionPending: 'UpdateRevisionPending',
  PartitionRollout: 'PartitionRollout',
  NoIpAssigned: 'NoIPAssigned',
  ClaimPending: 'ClaimPending',
  ClaimLost: 'ClaimLost',
  HpaUnable: 'ScalingUnable',
  Current: 'Current',
  Missing: 'Missing',
  PodImagePull: 'ImagePullBackOff',
  PodCrashLoop: 'CrashLoopBackOff',
  PodConfigError: 'CreateContainerConfigError',
  PodUnschedulable: 'Unschedulable',
  RoutePending: 'RoutePending',
  RouteRefused: 'RouteRefused',
  RouteRefsUnresolved: 'RouteRefsUnresolved',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];
/** Any reason a report carries: a rollout's, or the reconcile's own. */
export type ReportReason = Reason | ReconcileReason;

/**
 * The ordinary steps of a rollout (replicas created, updated, ready; a spec not yet observed; a
 * claim binding; a cluster IP coming): progress, not news. A reason outside this set while
 * DEPLOYING is a warning sign (pods that cannot be created, a scaler that cannot scale).
 */
const ROUTINE_PROGRESS: ReadonlySet<string> = new Set<string>([
  Reason.NotObserved,
  Reason.CreatingReplicas,
  Reason.UpdatingReplicas,
  Reason.ExtraPods,
  Reason.NotAvailable,
  Reason.WaitingForAvailable,
  Reason.WaitingForReady,
  Reason.UpdateRevisionPending,
  Reason.PartitionRollout,
  Reason.NoIpAssigned,
  Reason.ClaimPending,
  Reason.RoutePending,
]);

export function isRoutineProgress(reason: string): boolean {
  return ROUTINE_PROGRESS.has(reason);
}

export interface ObjectStatusResult {
  readonly status: ObjectStatus;
  readonly reason: Reason;
  readonly message: string;
}

export interface LiveObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly generation?: number;
    readonly deletionTimestamp?: string;
    readonly [k: string]: unknown;
  };
  readonly [key: string]: unknown;
}

const num = (value: unknown): number => (typeof value === 'number' ? value : 0);
const conditions = (object: LiveObject): readonly Condition[] => statusConditions(object);
const condition = (object: LiveObject, type: string): Condition | undefined =>
  conditions(object).find((c) => c.type === type);

const current = (message: string): ObjectStatusResult => ({
  status: 'Current',
  reason: Reason.Current,
  message,
});
const progressing = (reason: Reason, message: string): ObjectStatusResult => ({
  status: 'InProgress',
  reason,
  message,
});
const failed = (reason: Reason, message: string): ObjectStatusResult => ({
  status: 'Failed',
  reason,
  message,
});

/** What time-based checks need: a persistent failure fails only after the grace period. */
export interface StatusClock {
  readonly now: number;
  readonly failureGraceMs: number;
}

type KindCheck = (object: LiveObject, clock: StatusClock) => ObjectStatusResult;

const replicasOf = (object: LiveObject): number =>
  fieldAt(object, 'spec', 'replicas') === undefined ? 1 : num(fieldAt(object, 'spec', 'replicas'));

function deploymentStatus(object: LiveObject, clock: StatusClock): ObjectStatusResult {
  const name = object.metadata.name;
  const progressing_ = condition(object, 'Progressing');
  if (progressing_?.reason === 'ProgressDeadlineExceeded')
    return failed(Reason.ProgressDeadlineExceeded, `Deployment ${name} exceeded its progress deadline`);
  // Not in kstatus (it leaves this to the ReplicaSet): pods that cannot be created, past the grace.
  const replicaFailure = condition(object, 'ReplicaFailure');
  if (replicaFailure?.status === 'True') {
    const message = `Deployment ${name}: ${String(replicaFailure.message ?? 'pods cannot be created')}`;
    const since = Date.parse(String(replicaFailure.lastTransitionTime ?? ''));
    const persistent = Number.isFinite(since) && clock.now - since >= clock.failureGraceMs;
    return persistent ? failed(Reason.ReplicaFailure, message) : progressing(Reason.ReplicaFailure, message);
  }
  const desired = replicasOf(object);
  const replicas = num(fieldAt(object, 'status', 'replicas'));
  const updated = num(fieldAt(object, 'status', 'updatedReplicas'));
  const ready = num(fieldAt(object, 'status', 'readyReplicas'));
  const available = num(fieldAt(object, 'status', 'availableReplicas'));
  if (desired > replicas) return progressing(Reason.CreatingReplicas, `${replicas} of ${desired} replicas`);
  if (desired > updated)
    return progressing(Reason.UpdatingReplicas, `${updated} of ${desired} replicas updated`);
  if (replicas > desired)
    return progressing(Reason.ExtraPods, `${replicas - desired} old replicas pending termination`);
  if (updated > available)
    return progressing(Reason.WaitingForAvailable, `${available} of ${updated} updated replicas available`);
  if (desired > ready) return progressing(Reason.WaitingForReady, `${ready} of ${desired} replicas ready`);
  // With a progress deadline (the API server defaults one) the controller reports completion in
  // the Progressing condition; without one, the counts above are all there is.
  const hasDeadline = typeof fieldAt(object, 'spec', 'progressDeadlineSeconds') === 'number';
  const complete = progressing_?.status === 'True' && progressing_.reason === 'NewReplicaSetAvailable';
  if (hasDeadline && !complete)
    return progressing(
      Reason.UpdatingReplicas,
      `Deployment ${name}: the new ReplicaSet is not yet available`,
    );
  if (conditions(object).length > 0 && condition(object, 'Available')?.status !== 'True')
    return progressing(Reason.NotAvailable, `Deployment ${name} is not available`);
  return current(`${available} replicas available`);
}

function statefulSetStatus(object: LiveObject): ObjectStatusResult {
  // An OnDelete StatefulSet is rolled by whoever deletes its pods: nothing to wait for.
  if (fieldAt(object, 'spec', 'updateStrategy', 'type') === 'OnDelete')
    return current('StatefulSet uses the OnDelete update strategy');
  const desired = replicasOf(object);
  const replicas = num(fieldAt(object, 'status', 'replicas'));
  const ready = num(fieldAt(object, 'status', 'readyReplicas'));
  const currentReplicas = num(fieldAt(object, 'status', 'currentReplicas'));
  const updatedReplicas = num(fieldAt(object, 'status', 'updatedReplicas'));
  const partition = fieldAt(object, 'spec', 'updateStrategy', 'rollingUpdate', 'partition');
  if (desired > replicas) return progressing(Reason.CreatingReplicas, `${replicas} of ${desired} replicas`);
  if (desired > ready) return progressing(Reason.WaitingForReady, `${ready} of ${desired} replicas ready`);
  // Scaled down, or a pod of the old size still terminating: still rolling out.
  if (replicas > desired)
    return progressing(Reason.ExtraPods, `${replicas - desired} extra replicas pending termination`);
  if (typeof partition === 'number') {
    const expected = desired - partition;
    return updatedReplicas < expected
      ? progressing(Reason.PartitionRollout, `${updatedReplicas} of ${expected} replicas updated`)
      : current(`partitioned rollout complete: ${updatedReplicas} replicas updated`);
  }
  if (desired > currentReplicas)
    return progressing(Reason.UpdateRevisionPending, `${currentReplicas} of ${desired} replicas current`);
  const updateRevision = fieldAt(object, 'status', 'updateRevision') ?? '';
  const currentRevision = fieldAt(object, 'status', 'currentRevision') ?? '';
  if (updateRevision !== currentRevision) {
    return progressing(
      Reason.UpdateRevisionPending,
      `${updatedReplicas} of ${desired} replicas at the update revision`,
    );
  }
  return current(`${ready} replicas ready`);
}

function serviceStatus(object: LiveObject): ObjectStatusResult {
  const type = fieldAt(object, 'spec', 'type') ?? 'ClusterIP';
  if (type === 'LoadBalancer' && !fieldAt(object, 'spec', 'clusterIP'))
    return progressing(Reason.NoIpAssigned, `Service ${object.metadata.name} has no cluster IP yet`);
  return current('service ready');
}

function claimStatus(object: LiveObject): ObjectStatusResult {
  const phase = fieldAt(object, 'status', 'phase');
  if (phase === 'Bound') return current('claim bound');
  if (phase === 'Lost') return failed(Reason.ClaimLost, `claim ${object.metadata.name} lost its volume`);
  return progressing(Reason.ClaimPending, `claim ${object.metadata.name} is ${String(phase ?? 'pending')}`);
}

function autoscalerStatus(object: LiveObject): ObjectStatusResult {
  const able = condition(object, 'AbleToScale');
  if (able?.status === 'False')
    return progressing(
      Reason.HpaUnable,
      `autoscaler: ${String(able.message ?? able.reason ?? 'unable to scale')}`,
    );
  return current('autoscaler active');
}

/** KEDA's ScaledObject: like an HPA, progress while KEDA says it cannot scale (`Ready` False). */
function scaledObjectStatus(object: LiveObject): ObjectStatusResult {
  const ready = condition(object, 'Ready');
  if (ready?.status === 'False')
    return progressing(
      Reason.HpaUnable,
      `ScaledObject ${object.metadata.name}: ${String(ready.message ?? ready.reason ?? 'KEDA cannot scale it')}`,
    );
  return current('scaler active');
}

const text = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : fallback);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** A parent reference as the Gateway API compares them: group and kind defaulted, namespace the route's. */
function parentKey(ref: unknown, routeNamespace: string): string {
  return [
    text(fieldAt(ref, 'group'), 'gateway.networking.k8s.io'),
    text(fieldAt(ref, 'kind'), 'Gateway'),
    text(fieldAt(ref, 'namespace'), routeNamespace),
    text(fieldAt(ref, 'name')),
    text(fieldAt(ref, 'sectionName')),
    String(fieldAt(ref, 'port') ?? ''),
  ].join('/');
}

/**
 * An HTTPRoute: each Gateway it names reports in `status.parents` whether it took the route
 * (`Accepted`) and found its backends (`ResolvedRefs`). A Gateway that refuses the route fails the
 * rollout at once, with its reason (no listener for the host, a namespace it does not admit); a
 * backend not resolved fails after the grace period (the Service is applied with the route, and a
 * controller may look before it exists); a parent that has not yet reported is progress.
 */
function httpRouteStatus(object: LiveObject, clock: StatusClock): ObjectStatusResult {
  const namespace = text(object.metadata.namespace);
  const generation = object.metadata.generation;
  const statuses = list(fieldAt(object, 'status', 'parents'));
  for (const ref of list(fieldAt(object, 'spec', 'parentRefs'))) {
    const key = parentKey(ref, namespace);
    const gateway = `${text(fieldAt(ref, 'kind'), 'Gateway')} ${text(fieldAt(ref, 'namespace'), namespace)}/${text(fieldAt(ref, 'name'))}`;
    const reported = statuses
      .filter((entry) => parentKey(fieldAt(entry, 'parentRef'), namespace) === key)
      .flatMap((entry) => list(fieldAt(entry, 'conditions')));
    const named = (type: string) => {
      const found = reported.find((c) => fieldAt(c, 'type') === type);
      // A condition about an older spec says nothing of this one.
      const observed = fieldAt(found, 'observedGeneration');
      const stale = generation !== undefined && typeof observed === 'number' && observed < generation;
      return found === undefined || stale ? undefined : found;
    };
    const accepted = named('Accepted');
    const why = (c: unknown) =>
      [text(fieldAt(c, 'reason')), text(fieldAt(c, 'message'))].filter((part) => part !== '').join(': ');
    if (fieldAt(accepted, 'status') === 'False' && fieldAt(accepted, 'reason') !== 'Pending')
      return failed(
        Reason.RouteRefused,
        `HTTPRoute ${object.metadata.name}: ${gateway} refused the route (${why(accepted) || 'not accepted'})`,
      );
    const resolved = named('ResolvedRefs');
    if (fieldAt(resolved, 'status') === 'False') {
      const message = `HTTPRoute ${object.metadata.name}: ${gateway} cannot resolve its backend (${why(resolved) || 'unresolved'})`;
      const since = Date.parse(text(fieldAt(resolved, 'lastTransitionTime')));
      const persistent = Number.isFinite(since) && clock.now - since >= clock.failureGraceMs;
      return persistent
        ? failed(Reason.RouteRefsUnresolved, message)
        : progressing(Reason.RouteRefsUnresolved, message);
    }
    if (fieldAt(accepted, 'status') !== 'True')
      return progressing(
        Reason.RoutePending,
        `HTTPRoute ${object.metadata.name}: waiting for ${gateway} to accept the route`,
      );
  }
  return current('route accepted');
}

const alwaysCurrent: KindCheck = () => current('exists');

const CHECKS: Record<string, KindCheck> = {
  'apps/Deployment': deploymentStatus,
  'apps/StatefulSet': statefulSetStatus,
  '/PersistentVolumeClaim': claimStatus,
  'autoscaling/HorizontalPodAutoscaler': autoscalerStatus,
  '/Service': serviceStatus,
  '/Secret': alwaysCurrent,
  '/ConfigMap': alwaysCurrent,
  '/PodTemplate': alwaysCurrent,
  'policy/PodDisruptionBudget': alwaysCurrent,
  'networking.k8s.io/Ingress': alwaysCurrent,
  'gateway.networking.k8s.io/HTTPRoute': httpRouteStatus,
  'keda.sh/ScaledObject': scaledObjectStatus,
};

/**
 * The condition types whose message and transition time the checks above read; of the others
 * they read only type, status and reason.
 */
export const DETAILED_CONDITIONS = ['ReplicaFailure', 'AbleToScale'] as const;

/** The kinds whose `status` the checks above (and the pod problems) read: caches may drop the rest. */
export const STATUS_READ_KINDS = [
  'Deployment',
  'StatefulSet',
  'PersistentVolumeClaim',
  'HorizontalPodAutoscaler',
  'Pod',
  'HTTPRoute',
  'ScaledObject',
] as const;

export function computeObjectStatus(
  object: LiveObject | undefined,
  clock: StatusClock = { now: Date.now(), failureGraceMs: DEFAULT_FAILURE_GRACE_MS },
): ObjectStatusResult {
  if (!object) return { status: 'NotFound', reason: Reason.Missing, message: 'object not found' };
  if (object.metadata.deletionTimestamp)
    return {
      status: 'Terminating',
      reason: Reason.Terminating,
      message: `${object.kind} ${object.metadata.name} is being deleted`,
    };
  const generation = object.metadata.generation;
  const observed = fieldAt(object, 'status', 'observedGeneration');
  if (generation !== undefined && typeof observed === 'number' && observed < generation) {
    return progressing(
      Reason.NotObserved,
      `${object.kind} ${object.metadata.name}: the latest spec is not yet observed`,
    );
  }
  const group = object.apiVersion.includes('/') ? object.apiVersion.split('/')[0] : '';
  const check = CHECKS[`${group}/${object.kind}`] ?? alwaysCurrent;
  return check(object, clock);
}

// --- Per deployment

export type RevisionOutcome = 'DEPLOYING' | 'DEPLOYED' | 'DEPLOY_FAILED';
export type DeploymentOutcome = 'AWAITING_DATABASE' | 'READY' | undefined;

export interface PodProblem {
  readonly pod: string;
  /** The containers waiting with the reason (none for a pod that cannot be scheduled). */
  readonly containers?: readonly string[];
  readonly reason: string;
  /** When the pod was first seen with this problem (ms since epoch). */
  readonly since: number;
}

export interface RolloutInput {
  /** Live objects of the deployment, with the component label of each (main, database, …). */
  readonly objects: readonly { readonly component: string; readonly object: LiveObject | undefined }[];
  /** Waiting reasons of the deployment's pods, for back-offs past the grace period. */
  readonly podProblems: readonly PodProblem[];
  readonly now: number;
  readonly failureGraceMs: number;
}

export interface RolloutStatus {
  readonly revisionStatus: RevisionOutcome;
  readonly deploymentStatus: DeploymentOutcome;
  readonly reason: ReportReason;
  readonly message: string;
  /**
   * Why, in the words of those who saw it (src/report/failureEvidence.ts): container reasons,
   * exit codes, log lines, Events. Masked, terminal-safe, one line each.
   */
  readonly evidence?: readonly string[] | undefined;
}

/** A message with what the deployment's owner should know of how it was rendered. */
export function notedMessage(message: string, notes: readonly string[] = []): string {
  return notes.length === 0 ? message : `${message} (${notes.join('; ')})`;
}

/** A rollout with its notes (for example that dev_zero runs as dev); a failure stays the failure alone. */
export function withStatusNotes(status: RolloutStatus, notes: readonly string[]): RolloutStatus {
  if (notes.length === 0 || status.revisionStatus === 'DEPLOY_FAILED') return status;
  return { ...status, message: notedMessage(status.message, notes) };
}

const BACKOFF_REASONS: Record<string, Reason> = {
  ImagePullBackOff: Reason.PodImagePull,
  ErrImagePull: Reason.PodImagePull,
  CrashLoopBackOff: Reason.PodCrashLoop,
  CreateContainerConfigError: Reason.PodConfigError,
  // kstatus fails an unschedulable pod at once; here it gets the same grace as a crash loop.
  Unschedulable: Reason.PodUnschedulable,
};

function containersText(containers: readonly string[] | undefined): string {
  if (!containers?.length) return '';
  return containers.length === 1 ? ` (container ${containers[0]})` : ` (containers ${containers.join(', ')})`;
}

export function computeRollout(input: RolloutInput): RolloutStatus {
  const clock = { now: input.now, failureGraceMs: input.failureGraceMs };
  const results = input.objects.map(({ component, object }) => ({
    component,
    result: computeObjectStatus(object, clock),
  }));
  const dataStoresReady = results
    .filter((r) => r.component === 'database' || r.component === 'kvstore')
    .every((r) => r.result.status === 'Current');
  const deploymentStatus: DeploymentOutcome = dataStoresReady ? 'READY' : 'AWAITING_DATABASE';

  const failure = results.find((r) => r.result.status === 'Failed');
  if (failure)
    return {
      revisionStatus: 'DEPLOY_FAILED',
      deploymentStatus: dataStoresReady ? undefined : deploymentStatus,
      reason: failure.result.reason,
      message: failure.result.message,
    };
  const stuck = input.podProblems.find(
    (p) => BACKOFF_REASONS[p.reason] && input.now - p.since >= input.failureGraceMs,
  );
  if (stuck) {
    return {
      revisionStatus: 'DEPLOY_FAILED',
      deploymentStatus: dataStoresReady ? undefined : deploymentStatus,
      reason: BACKOFF_REASONS[stuck.reason] ?? Reason.PodCrashLoop,
      message: `pod ${stuck.pod}${containersText(stuck.containers)} is in ${stuck.reason} for more than ${Math.round(input.failureGraceMs / 1000)} s`,
    };
  }
  const pending = results.find((r) => r.result.status !== 'Current');
  if (pending) {
    return {
      revisionStatus: 'DEPLOYING',
      deploymentStatus: dataStoresReady ? undefined : deploymentStatus,
      reason: pending.result.reason,
      message: `${pending.component}: ${pending.result.message}`,
    };
  }
  return {
    revisionStatus: 'DEPLOYED',
    deploymentStatus: 'READY',
    reason: Reason.Current,
    message: 'all workloads are available',
  };
}
