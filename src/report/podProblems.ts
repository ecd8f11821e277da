// What is wrong with a pod, read from the few status fields that say so: a container waiting with
// a reason (back-offs, config errors) or the scheduler's PodScheduled=False condition.
import { z } from 'zod';
import { type LiveKubeObject, skeleton } from '../kube/index.ts';
import { ANNOTATION_REVISION_ID } from '../objects/ownership.ts';
import type { PodProblem } from './rolloutHealth.ts';

const ContainerStatus = z.looseObject({
  name: z.string().optional(),
  state: z.looseObject({ waiting: z.looseObject({ reason: z.string().optional() }).optional() }).optional(),
});

const PodCondition = z.looseObject({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
  message: z.string().optional(),
});

/**
 * The scheduler's words for a pod whose claim is not bound yet: a provisioner at work, which the
 * claim's own status tells (ClaimPending). Not the pod's failure: counted as Unschedulable, a
 * database whose volume takes longer than the failure grace to bind failed its rollout.
 */
const WAITS_FOR_CLAIM = 'unbound immediate PersistentVolumeClaims';
/** Of the scheduler's message, what a summary keeps: enough to find WAITS_FOR_CLAIM in it. */
const KEPT_MESSAGE_CHARS = 200;

/** The pod status fields this module reads; anything else in the status is left alone. */
export const PodStatusFields = z.looseObject({
  status: z
    .looseObject({
      phase: z.string().optional(),
      conditions: z.array(PodCondition).optional().catch(undefined),
      initContainerStatuses: z.array(ContainerStatus).optional().catch(undefined),
      containerStatuses: z.array(ContainerStatus).optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
});
export type PodStatusFields = z.infer<typeof PodStatusFields>;

/** A problem of one pod: its reason, and the containers waiting with it (none for Unschedulable). */
export interface PodProblemReason {
  readonly reason: string;
  readonly containers: readonly string[];
}

/**
 * The problems of one pod: each waiting container's reason, with the containers it names, and
 * `Unschedulable` while the scheduler finds no node for it. A pod whose status does not parse has
 * no known problem.
 */
export function podProblemsOf(pod: unknown): PodProblemReason[] {
  const parsed = PodStatusFields.safeParse(pod);
  if (!parsed.success) return [];
  const status = parsed.data.status;
  const problems = new Map<string, string[]>();
  const unschedulable = status?.conditions?.some(
    (c) =>
      c.type === 'PodScheduled' &&
      c.status === 'False' &&
      c.reason === 'Unschedulable' &&
      !c.message?.includes(WAITS_FOR_CLAIM),
  );
  if (unschedulable && (status?.phase ?? 'Pending') === 'Pending') problems.set('Unschedulable', []);
  for (const container of [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])]) {
    const reason = container.state?.waiting?.reason;
    if (!reason) continue;
    const containers = problems.get(reason) ?? [];
    if (container.name && !containers.includes(container.name)) containers.push(container.name);
    problems.set(reason, containers);
  }
  return [...problems].map(([reason, containers]) => ({ reason, containers }));
}

/** The problem reasons of one pod (`podProblemsOf` without the containers). */
export function podProblemReasons(pod: unknown): string[] {
  return podProblemsOf(pod).map((problem) => problem.reason);
}

/**
 * A pod cut to what can give `podProblemReasons` a reason, what the cache indexes and what tells a
 * stalled rollout: identity, labels, phase, a PodScheduled or Ready condition that is not True (the
 * scheduler's message cut short), and the containers that wait with a reason. The watch cache
 * holds every pod of the listener, most of them healthy: such a pod is held as its identity and
 * phase alone (a whole pod is some thirty times the size; keeping every condition and container
 * cost some 400 bytes a pod more).
 */
export function podSummary(pod: LiveKubeObject, keptLabels?: readonly string[]): LiveKubeObject {
  const parsed = PodStatusFields.safeParse(pod);
  const status = parsed.success ? parsed.data.status : undefined;
  const waiting = (statuses: z.infer<typeof ContainerStatus>[] | undefined) => {
    const kept = statuses?.flatMap((c) =>
      c.state?.waiting?.reason
        ? [{ name: c.name, state: { waiting: { reason: c.state.waiting.reason } } }]
        : [],
    );
    return kept?.length ? kept : undefined;
  };
  const conditions = status?.conditions
    ?.filter((c) => (c.type === 'PodScheduled' || c.type === 'Ready') && c.status !== 'True')
    .map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      ...(c.type === 'PodScheduled' && c.message ? { message: c.message.slice(0, KEPT_MESSAGE_CHARS) } : {}),
    }));
  const summary: Record<string, unknown> = { phase: status?.phase };
  if (conditions?.length) summary.conditions = conditions;
  const initContainerStatuses = waiting(status?.initContainerStatuses);
  if (initContainerStatuses) summary.initContainerStatuses = initContainerStatuses;
  const containerStatuses = waiting(status?.containerStatuses);
  if (containerStatuses) summary.containerStatuses = containerStatuses;
  const kept = skeleton(pod, keptLabels);
  // The revision an application pod runs: an older revision's pod in a back-off during a rollout
  // is not the new revision's problem.
  const revisionId = pod.metadata.annotations?.[ANNOTATION_REVISION_ID];
  const metadata = revisionId
    ? { ...kept.metadata, annotations: { [ANNOTATION_REVISION_ID]: revisionId } }
    : kept.metadata;
  return { ...kept, metadata, status: summary };
}

/**
 * A pod running and not ready (a failing readiness probe, a server that hangs at start), from the
 * pod or from its summary: a Ready condition that is not True. Absent, the pod counts as ready —
 * its summary keeps that condition only when it is not True.
 */
export function isRunningUnready(pod: unknown): boolean {
  const status = PodStatusFields.safeParse(pod).data?.status;
  return (
    status?.phase === 'Running' &&
    (status.conditions ?? []).some((c) => c.type === 'Ready' && c.status !== 'True')
  );
}

/**
 * The pods whose problems can fail `revisionId`'s rollout: those of that revision, and those of
 * no revision (the database's, the key-value store's). A pod of an older revision still in a
 * back-off while the new one rolls out is the old revision's, and goes with its ReplicaSet.
 */
export function podsOfRevision<T extends PodRef>(pods: readonly T[], revisionId: string | undefined): T[] {
  if (revisionId === undefined) return [...pods];
  return pods.filter((pod) => {
    const ran = pod.metadata.annotations?.[ANNOTATION_REVISION_ID];
    return ran === undefined || ran === revisionId;
  });
}

/** The identity of a pod as the tracker needs it. */
export interface PodRef {
  readonly metadata: {
    readonly name: string;
    readonly uid?: string | undefined;
    readonly annotations?: Readonly<Record<string, string>> | undefined;
  };
}

/**
 * When each pod of each deployment was first seen with each problem, for the grace period before
 * a back-off fails the rollout. A problem not seen in a listing is forgotten, one pod and one
 * deployment at a time: a pod that recovers restarts only its own clock, never another pod's.
 */
export class PodProblemClock {
  /** deploymentId → `uid/reason` → first seen (ms since epoch). */
  readonly #since = new Map<string, Map<string, number>>();

  /** The problems of a deployment's current pods, each with the time it was first seen. */
  observe(deploymentId: string, pods: readonly PodRef[], now: number): PodProblem[] {
    const previous = this.#since.get(deploymentId);
    const current = new Map<string, number>();
    const problems: PodProblem[] = [];
    for (const pod of pods) {
      for (const { reason, containers } of podProblemsOf(pod)) {
        const key = `${pod.metadata.uid ?? pod.metadata.name}/${reason}`;
        const since = previous?.get(key) ?? now;
        current.set(key, since);
        problems.push({ pod: pod.metadata.name, containers, reason, since });
      }
    }
    if (current.size > 0) this.#since.set(deploymentId, current);
    else this.#since.delete(deploymentId);
    return problems;
  }

  /** Drops a deployment's clocks (rolled out, or deleted). */
  forget(deploymentId: string): void {
    this.#since.delete(deploymentId);
  }

  /** How many pod problems are timed, over every deployment (bounded by the live problems). */
  get size(): number {
    let total = 0;
    for (const clocks of this.#since.values()) total += clocks.size;
    return total;
  }
}
