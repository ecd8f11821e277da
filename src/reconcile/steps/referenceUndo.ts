// Takes a workload off a reference whose target changed owner since it was judged (docs/design.md,
// "What a pod may name") — a platform object, or one the render makes, now another's: a workload
// of this deployment whose live pod template names the object is deleted, by uid, so that no pod
// of it starts again on another's object. Deleted, not scaled to zero: under an autoscaler the
// agent does not own `replicas` and an autoscaler never scales up from zero, so a workload scaled
// down would stay down after the fix; deleted, the next good apply makes it whole. Its inventory
// entry stays, and a StatefulSet's claims stay with their data.
import type { Logger } from 'pino';
import type { EventRecorder, LiveKubeObject, ObjectRef } from '../../kube/index.ts';
import { POD_TEMPLATE_KINDS } from '../../objects/kinds.ts';
import { formatLocalRef } from '../../objects/objectRef.ts';
import { isThisDeployments } from '../../objects/ownership.ts';
import { podReferences, REFERENCE_KINDS } from '../../render/references.ts';
import type { KubeReader, KubeWriter } from '../kubeAccess.ts';
import { TerminalError, WaitingError } from '../outcome.ts';
import { entryId } from './inventory.ts';

export interface ReferenceUndoOptions {
  readonly kube: Pick<KubeReader, 'get'> & Pick<KubeWriter, 'delete'>;
  readonly events: Pick<EventRecorder, 'record'>;
  readonly listenerId: () => string;
}

/**
 * Deletes each of the `workloads` (this deployment's objects with a pod template) whose live
 * template names one of the `targets`, and says what it did, one line per workload and field. The
 * workloads are read whole (the watch cache may hold them without their template): a request each,
 * only on this rare path.
 */
export async function undoReferences(
  options: ReferenceUndoOptions,
  deploymentId: string,
  workloads: readonly ObjectRef[],
  targets: readonly (ObjectRef & { readonly namespace: string })[],
  log: Logger,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  const named = new Set(targets.map(entryId));
  const undone: string[] = [];
  for (const ref of workloads) {
    const live = await options.kube.get(ref, { signal });
    if (!live || !isThisDeployments(live, options.listenerId(), deploymentId)) continue;
    const fields = podReferences([live])
      .filter((r) =>
        named.has(entryId({ apiVersion: 'v1', kind: r.kind, namespace: r.namespace, name: r.name })),
      )
      .map((r) => `${r.path} names ${formatLocalRef(r)}`);
    if (fields.length === 0) continue;
    await options.kube.delete(ref, {
      propagationPolicy: 'Background',
      preconditionUid: live.metadata.uid,
      signal,
    });
    const note = `${fields.join('; ')}, which changed owner since it was judged: ${describe(live)} deleted so that no pod of it starts on it`;
    log.warn({ object: describe(live), fields }, 'workload deleted: a reference changed owner');
    await options.events.record(live, {
      type: 'Warning',
      reason: 'ReferenceChangedOwner',
      note,
      action: 'Delete',
    });
    undone.push(note);
  }
  return undone;
}

function describe(live: LiveKubeObject): string {
  return formatLocalRef(live);
}

/**
 * Takes the deployment's workloads (those with a pod template among `workloads`) off the objects
 * a failure refused (its `refused`); the failure then says what was undone. Any other error is
 * returned as it is.
 */
export async function undoRefused(
  options: ReferenceUndoOptions,
  deploymentId: string,
  workloads: readonly ObjectRef[],
  error: unknown,
  log: Logger,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  if (!(error instanceof TerminalError || error instanceof WaitingError)) return error;
  // Only what a pod can name runs a workload on it (a taken Service does not): no read otherwise.
  const named = error.refused.filter((ref) => REFERENCE_KINDS.has(ref.kind));
  if (named.length === 0) return error;
  const templated = new Map(
    workloads
      .filter((ref) => POD_TEMPLATE_KINDS.has(ref.kind))
      .map((ref) => [entryId({ ...ref, namespace: ref.namespace ?? '' }), ref]),
  );
  const undone = await undoReferences(options, deploymentId, [...templated.values()], named, log, signal);
  if (undone.length === 0) return error;
  const message = `${error.message}; ${undone.join('; ')}`;
  const failure = { cause: error.cause, refused: error.refused };
  return error instanceof WaitingError
    ? new WaitingError(error.reason, error.deploymentId, message, failure)
    : new TerminalError(error.reason, message, failure);
}
