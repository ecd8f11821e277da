// The last step of a reconcile: tells everyone where a deployment stands — the control plane (a
// status report), the cluster (an Event on the main workload, the status annotation that
// `k8s-listener status` reads) and the metrics (deployments by status, the oldest rollout).
import type { Logger } from 'pino';
import type { EventRecorder, LiveKubeObject, ObjectRef } from '../kube/index.ts';
import { ANNOTATION_STATUS } from '../objects/ownership.ts';
import type { ControlPlaneReporter } from './controlPlaneReporter.ts';
import { boundedEvidence } from './failureEvidence.ts';
import type { AgentMetrics } from './metrics.ts';
import type { ReconcileReason } from './reconcileReason.ts';
import { isRoutineProgress, type RolloutStatus } from './rolloutHealth.ts';
import { nextStatusAnnotation, parseStatusAnnotation } from './statusAnnotation.ts';

/** Where the status annotation lives, read and written through the reconciler's own client. */
export interface AnnotatedObjects {
  read(ref: ObjectRef): Promise<LiveKubeObject | undefined>;
  mergePatch(ref: ObjectRef, patch: unknown): Promise<LiveKubeObject>;
}

export interface DeploymentReportOptions {
  readonly reporter: Pick<ControlPlaneReporter, 'record'>;
  readonly events: Pick<EventRecorder, 'record'>;
  readonly objects: AnnotatedObjects;
  readonly metrics: AgentMetrics;
}

/** One status of a deployment's target revision, and what it is said about. */
export interface DeploymentStatus {
  readonly deploymentId: string;
  readonly revisionId: string | undefined;
  readonly status: RolloutStatus;
  /** The main workload as live, for the Event; absent when nothing was applied. */
  readonly main?: LiveKubeObject | undefined;
  /** The object that carries the status annotation (the deployment's inventory ConfigMap). */
  readonly annotated?: ObjectRef | undefined;
  /** This reconcile wrote the deployment's objects (its rollout has only just started). */
  readonly justApplied?: boolean | undefined;
}

export class DeploymentReport {
  readonly #o: DeploymentReportOptions;
  /** Last rollout status per deployment, for the by-status gauge. */
  readonly #statuses = new Map<string, string>();
  /** deploymentId/revisionId pairs that reached DEPLOYED. */
  readonly #deployed = new Set<string>();
  /** The revision each DEPLOYING deployment is rolling out, to keep its start across messages. */
  readonly #deployingRevision = new Map<string, string>();
  /** The last transition told in the cluster (Event, annotation), per deployment. */
  readonly #told = new Map<string, string>();

  constructor(options: DeploymentReportOptions) {
    this.#o = options;
    // A new leader session starts from what it observes itself.
    options.metrics.deployingSince.clear();
  }

  /** A failure of the deployment itself (its render, its apply): nothing rolls out. */
  async failed(
    deploymentId: string,
    revisionId: string | undefined,
    failure: { readonly reason: ReconcileReason; readonly message: string },
    log: Logger,
  ): Promise<void> {
    await this.status(
      {
        deploymentId,
        revisionId,
        // Named, not spread: an Error's message is not an enumerable own property.
        status: {
          revisionStatus: 'DEPLOY_FAILED',
          deploymentStatus: undefined,
          reason: failure.reason,
          message: failure.message,
        },
      },
      log,
    );
  }

  /**
   * A reconcile that waits (a namespace not there, a reference not made yet): in progress with its
   * reason while it is retried, failed once it has waited `pastGrace` — as a rollout is.
   */
  async waiting(
    deploymentId: string,
    revisionId: string | undefined,
    failure: { readonly reason: ReconcileReason; readonly message: string },
    pastGrace: boolean,
    log: Logger,
  ): Promise<void> {
    const { reason, message } = failure;
    const revisionStatus = pastGrace ? 'DEPLOY_FAILED' : 'DEPLOYING';
    await this.status(
      { deploymentId, revisionId, status: { revisionStatus, deploymentStatus: undefined, reason, message } },
      log,
    );
  }

  /**
   * Reports a status: to the control plane each change, to the cluster each transition (see
   * below); a revision once DEPLOYED stays so.
   */
  async status(report: DeploymentStatus, log: Logger): Promise<void> {
    const { deploymentId, revisionId, status, main } = report;
    // Through scaling (an HPA adding replicas) a deployed revision looks as if rolling out again;
    // only a failure or a new revision changes what is reported.
    const deployedKey = `${deploymentId}/${revisionId ?? ''}`;
    if (status.revisionStatus === 'DEPLOYED') this.#deployed.add(deployedKey);
    else if (status.revisionStatus === 'DEPLOYING' && this.#deployed.has(deployedKey)) return;
    const changed = this.#o.reporter.record({
      deployment_id: deploymentId,
      revision_id: revisionId ?? null,
      revision_status: status.revisionStatus,
      deployment_status: status.deploymentStatus ?? null,
      message: withEvidence(status),
    });
    const transition = transitionKey(revisionId, status.revisionStatus, status.reason, status.message);
    if (changed) {
      this.#statuses.set(deploymentId, status.revisionStatus);
      this.#updateStatusGauge();
      this.#trackDeploying(deploymentId, revisionId, status.revisionStatus);
      // Transitions at info, as in the cluster; each step of progress at debug.
      const level = this.#told.get(deploymentId) === transition ? 'debug' : 'info';
      log[level](
        { status: status.revisionStatus, reason: status.reason, message: status.message },
        'rollout status',
      );
    }
    if (!main) return;
    // A warning sign of a rollout just started is told by the next look at it, if it is still
    // there: while many deployments are being applied, the applies go first.
    if (report.justApplied && status.revisionStatus === 'DEPLOYING') return;
    // The cluster hears of transitions (revision, status, a warning sign's reason), not of each
    // step of progress (`CreatingReplicas`, `1 of 3 replicas ready`, `WaitingForAvailable`): the
    // control plane has those, `status` computes them live, and an Event and an annotation write
    // per step would cost a rollout of many deployments most of its API requests. A failure's
    // message is its explanation: each one is told.
    if (this.#told.get(deploymentId) === transition) return;
    // A rollout's routine start is no Event: its workloads' controllers tell it (ScalingReplicaSet),
    // the control plane and `status` have it, and at a cold sync it would be one write more per
    // deployment. Its outcome and each warning sign are told.
    if (status.revisionStatus === 'DEPLOYING' && isRoutine(status.reason)) {
      this.#told.set(deploymentId, transition);
      return;
    }
    // The annotation records the outcomes the cluster was told (DEPLOYED, DEPLOY_FAILED): after a
    // restart, one it already holds is not told again (no Event per deployment at each start). A
    // rollout's warning signs are told by Events alone — a write per rollout fewer; a restart in
    // the middle of a rollout tells its warning sign once more.
    const kept = status.revisionStatus !== 'DEPLOYING' ? report.annotated : undefined;
    const annotated = kept && (await this.#o.objects.read(kept).catch(() => undefined));
    const previous = annotated ? annotated.metadata.annotations[ANNOTATION_STATUS] : undefined;
    const before = parseStatusAnnotation(previous);
    if (
      before &&
      transitionKey(before.revisionId, before.status, before.reason, before.message) === transition
    ) {
      this.#told.set(deploymentId, transition);
      return;
    }
    await this.#o.events.record(main, {
      // Only a warning sign tells a rollout in progress (above).
      type: status.revisionStatus === 'DEPLOYED' ? 'Normal' : 'Warning',
      reason:
        status.revisionStatus === 'DEPLOY_FAILED'
          ? 'RolloutFailed'
          : status.revisionStatus === 'DEPLOYED'
            ? 'RolloutComplete'
            : 'RollingOut',
      // Within the recorder's 1 KiB: the headline first, then as much evidence as fits.
      note: `revision ${revisionId ?? 'unknown'}: ${withEvidence(status, MAX_EVENT_MESSAGE)}`,
    });
    // Told once the annotation holds it: a write that failed is tried again at the next look.
    if (!kept || (await this.#annotate(kept, previous, report, log)))
      this.#told.set(deploymentId, transition);
  }

  /** The deployment and its objects are gone: say so, and forget it. */
  deleted(deploymentId: string): void {
    this.#o.reporter.record({ deployment_id: deploymentId, deleted: true, message: 'resources removed' });
    this.#statuses.delete(deploymentId);
    this.#told.delete(deploymentId);
    this.#trackDeploying(deploymentId, undefined, undefined);
    for (const key of this.#deployed) if (key.startsWith(`${deploymentId}/`)) this.#deployed.delete(key);
    this.#updateStatusGauge();
  }

  /**
   * On the inventory ConfigMap, not the Deployment: the API server bumps a Deployment's generation
   * on any annotation change, which would restart the very rollout reported on. A failure to
   * write it is logged, not fatal (the control plane has the status already), and says false.
   */
  async #annotate(
    ref: ObjectRef,
    previous: string | undefined,
    report: DeploymentStatus,
    log: Logger,
  ): Promise<boolean> {
    const { status, revisionId } = report;
    try {
      // `since` (the last transition, for `k8s-listener status`) survives restarts: it is kept
      // from the previous annotation unless the revision or its status changed.
      const annotation = nextStatusAnnotation(
        previous,
        { revisionId, status: status.revisionStatus, reason: status.reason, message: status.message },
        new Date(),
      );
      await this.#o.objects.mergePatch(ref, {
        metadata: { annotations: { [ANNOTATION_STATUS]: annotation } },
      });
      return true;
    } catch (error) {
      log.warn({ err: error }, 'could not write the status annotation');
      return false;
    }
  }

  /** Keeps when the current revision started DEPLOYING, for the age of the oldest rollout. */
  #trackDeploying(deploymentId: string, revisionId: string | undefined, status: string | undefined): void {
    const since = this.#o.metrics.deployingSince;
    if (status !== 'DEPLOYING') {
      since.delete(deploymentId);
      this.#deployingRevision.delete(deploymentId);
      return;
    }
    if (since.has(deploymentId) && this.#deployingRevision.get(deploymentId) === (revisionId ?? '')) return;
    this.#deployingRevision.set(deploymentId, revisionId ?? '');
    since.set(deploymentId, Date.now());
  }

  #updateStatusGauge(): void {
    const counts: Record<string, number> = { DEPLOYING: 0, DEPLOYED: 0, DEPLOY_FAILED: 0 };
    for (const status of this.#statuses.values()) counts[status] = (counts[status] ?? 0) + 1;
    for (const [status, count] of Object.entries(counts))
      this.#o.metrics.deploymentsByStatus.set({ status }, count);
  }
}

/** The room a status report's message has (the extension's bound). */
export const MAX_REPORT_MESSAGE = 4096;
/** An Event's message with evidence: under the recorder's 1 KiB with its `revision …: ` prefix. */
const MAX_EVENT_MESSAGE = 960;

/** A status's message, and under it the evidence of why, line by line, within the report's bound. */
export function withEvidence(
  status: Pick<RolloutStatus, 'message' | 'evidence'>,
  maxChars = MAX_REPORT_MESSAGE,
): string {
  if (!status.evidence?.length) return status.message;
  const room = maxChars - status.message.length - 1;
  const lines = room > 0 ? boundedEvidence(status.evidence, room) : [];
  return [status.message, ...lines].join('\n');
}

/** What the cluster is told of a status: its revision, status and reason, and a failure's message. */
function transitionKey(
  revisionId: string | undefined,
  status: string,
  reason: string | undefined,
  message: string | undefined,
): string {
  const told = isRoutine(reason) ? '' : reason;
  return JSON.stringify([revisionId ?? '', status, told, status === 'DEPLOY_FAILED' ? message : '']);
}

function isRoutine(reason: string | undefined): boolean {
  return reason === undefined || isRoutineProgress(reason);
}
