// Takes a workload off a reference whose target changed owner since it was judged (docs/design.md,
// "What a pod may name") — a platform object, or one the render makes, now another's: a workload
// of this deployment whose live pod template names the object is deleted, by uid, so that no pod
// of it starts again on another's object. Deleted, not scaled to zero: under an autoscaler the
// agent does not own `replicas` and an autoscaler never scales up from zero, so a workload scaled
// down would stay down after the fix; deleted, the next good apply makes it whole. Its inventory
// entry stays, and a StatefulSet's claims stay with their data.
import type { Logger } from 'pino';
import type { EventRecorder, LiveKubeObject, ObjectRef } from '../kube/index.ts';
import { formatLocalRef } from '../objects/objectRef.ts';
import { isThisDeployments } from '../objects/ownership.ts';
import { podReferences } from '../render/references.ts';
import { entryId } from './inventory.ts';
import type { KubeReader, KubeWriter } from './kubeAccess.ts';

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
