// The apply engine (as Flux's ssa package is to its controllers): reads a deployment's objects,
// plans each write with its reason, dry-runs a change before its first write, writes a first
// apply in its safe order and undoes it when refused (docs/design.md, "All or nothing"), and
// sends each write as a server-side apply or a create-only create.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import {
  type EventRecorder,
  isConflict,
  type LiveKubeObject,
  type ObjectRef,
  refOf,
} from '../../kube/index.ts';
import type { ObjectCache } from '../../kube/objectCache.ts';
import { withoutBody } from '../../objects/body.ts';
import { secretData } from '../../objects/fields.ts';
import { WORKLOAD_KINDS } from '../../objects/kinds.ts';
import { formatLocalRef } from '../../objects/objectRef.ts';
import {
  ANNOTATION_GENERATED_KEYS,
  ANNOTATION_SPEC_HASH,
  describeHolder,
  isCreateOnly,
  isDatabaseCredentials,
  KEPT_VOLUME_DECISION,
  sameListener,
  whyNotOurs,
} from '../../objects/ownership.ts';
import type { KubeObject } from '../../render/index.ts';
import type { AgentMetrics } from '../../report/metrics.ts';
import { ReconcileReason } from '../../report/reconcileReason.ts';
import type { KubeReader, KubeWriter } from '../kubeAccess.ts';
import { asTerminal, namespaceWaiting, TerminalError, WaitingError } from '../outcome.ts';
import { changeOf, type WriteReason } from './change.ts';
import { driftPath } from './drift.ts';
import { entryId, entryOf, type InventoryEntry } from './inventory.ts';
import type { InventoryStore } from './inventoryStore.ts';

/** One object of an apply: as found, and whether and why it is written. */
export interface ApplyStep {
  readonly object: KubeObject;
  readonly id: string;
  readonly before: LiveKubeObject | undefined;
  /** Why it is written; undefined when found as desired. */
  readonly why: WriteReason | undefined;
  /** Missing from a synced watch, not asked: written create-only (see readOwned). */
  readonly unread: boolean;
}

/** What an apply leaves: the objects as live, and whether any was written. */
export interface Applied {
  readonly live: Map<string, LiveKubeObject>;
  readonly wrote: boolean;
}

export interface ApplierOptions {
  readonly kube: KubeReader & KubeWriter;
  readonly cache?: Pick<ObjectCache, 'get' | 'written' | 'isSynced' | 'checked' | 'isSlim'> | undefined;
  readonly metrics: AgentMetrics;
  readonly events: Pick<EventRecorder, 'record'>;
  readonly inventories: Pick<InventoryStore, 'remove'>;
}

export class Applier {
  readonly #o: ApplierOptions;

  constructor(options: ApplierOptions) {
    this.#o = options;
  }

  /**
   * Reads every object before anything is written, and fails the deployment when a name is taken:
   * by another owner, or by another deployment of this listener whose generated names this one's
   * collide with (never adopted, never overwritten). Every taken name is listed. A miss where that
   * kind's watch in the namespace has listed is not asked (`unread`): its write is create-only
   * (ABSENT_RESOURCE_VERSION), and meets a same-named object only as a 409 (see #send). The
   * failure names the taken objects as `refused`: a workload of this deployment that runs on one
   * (its own Secret, held by another since) is taken off it (referenceUndo.ts).
   */
  async readOwned(
    deploymentId: string,
    objects: readonly KubeObject[],
    signal: AbortSignal | undefined,
  ): Promise<{ found: Map<string, LiveKubeObject | undefined>; unread: Set<string> }> {
    const found = new Map<string, LiveKubeObject | undefined>();
    const unread = new Set<string>();
    const taken: string[] = [];
    const kept: string[] = [];
    const refused: (ObjectRef & { namespace: string })[] = [];
    const cache = this.#o.cache;
    // At once: mostly cache hits; misses the cache cannot vouch for are GETs that need not wait for each other.
    const reads = await Promise.all(
      objects.map((object) => {
        const ref = refOf(object);
        const held = cache?.get(ref);
        if (held || !cache?.isSynced(object.kind, ref.namespace ?? '')) return held ?? this.read(ref, signal);
        return UNREAD;
      }),
    );
    for (const [i, object] of objects.entries()) {
      const id = entryId(entryOf(object));
      const live = reads[i];
      if (live === UNREAD) {
        found.set(id, undefined);
        unread.add(id);
        continue;
      }
      found.set(id, live);
      const verdict = live && takenBy(object, live, deploymentId);
      if (!verdict) continue;
      (verdict.handOver ? kept : taken).push(verdict.message);
      refused.push(namespacedRef(object));
    }
    if (taken.length > 0)
      throw new TerminalError(ReconcileReason.ApplyRejected, [...taken, ...kept].join('; '), { refused });
    // Waited on like the volume's claims (ReferenceGuard): the platform team decides.
    if (kept.length > 0)
      throw new WaitingError(
        ReconcileReason.ClaimTaken,
        deploymentId,
        `${kept.join('; ')}; nothing is applied until then`,
        { refused },
      );
    return { found, unread };
  }

  /** What each object needs: nothing (found as desired), or a write and why. */
  plan(
    objects: readonly KubeObject[],
    read: { found: ReadonlyMap<string, LiveKubeObject | undefined>; unread: ReadonlySet<string> },
  ): ApplyStep[] {
    return objects.map((object) => {
      const id = entryId(entryOf(object));
      const before = read.found.get(id);
      return { object, id, before, why: whyWrite(object, before, this.#slim), unread: read.unread.has(id) };
    });
  }

  readonly #slim = (live: LiveKubeObject): boolean => this.#o.cache?.isSlim(live) ?? false;

  /**
   * All or nothing: before the first write of a change (a new revision or spec, not the repair of
   * a hand edit), every write is tried as a server-side dry run (strict field validation,
   * admission), so a revision the API server refuses writes nothing — not its Secret beside the
   * previous revision's workload, not its inventory.
   */
  async dryRunChange(
    steps: readonly ApplyStep[],
    changed: boolean,
    deploymentId: string,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const writes = steps.filter((step) => step.why !== undefined);
    if (!changed || writes.length === 0) return;
    await Promise.all(writes.map((step) => this.#send(step, deploymentId, true, signal)));
  }

  /**
   * The apply step: each object made as desired, in render order; the objects as live, and
   * whether any was written.
   */
  async apply(
    steps: readonly ApplyStep[],
    deploymentId: string,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<{ live: Map<string, LiveKubeObject>; wrote: boolean }> {
    const wrote = logWrites(steps, log);
    const live = new Map<string, LiveKubeObject>();
    await this.#writeSteps(steps, deploymentId, live, [], signal);
    return { live, wrote };
  }

  /** Writes the steps that need it, in order, into `live`; what was written goes into `made` too. */
  async #writeSteps(
    steps: readonly ApplyStep[],
    deploymentId: string,
    live: Map<string, LiveKubeObject>,
    made: LiveKubeObject[],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    for (const step of steps) {
      const { object, id, before, why } = step;
      const after = why === undefined && before ? before : await this.#write(step, deploymentId, signal);
      if (after !== before) made.push(after);
      live.set(id, after);
      // Found (or written) holding every field we set: the cache need not keep its body.
      if (why === undefined || whyWrite(object, after, this.#slim) === undefined)
        this.#o.cache?.checked(after);
    }
  }

  /**
   * A first apply, all or nothing without dry-running a cold sync's every write (twice the
   * requests). What runs nothing (Secrets, Services, policies, the autoscaler, the PodTemplate…)
   * is written first. Then every workload but the first is dry-run, at once, before any is
   * written: the first one's own write is its test, since no pod runs before it. Then the
   * workloads are written, Deployments before StatefulSets, so that a refusal the dry run could
   * not foresee (a name taken in between) never leaves a claim a StatefulSet controller made.
   * What the API server refuses is undone: each object this apply wrote deleted (by uid), then
   * the inventory recorded ahead.
   */
  async firstApply(
    steps: readonly ApplyStep[],
    deploymentId: string,
    namespace: string,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<{ live: Map<string, LiveKubeObject>; wrote: boolean }> {
    const workloads = [
      ...steps.filter((step) => step.object.kind === 'Deployment'),
      ...steps.filter((step) => step.object.kind === 'StatefulSet'),
    ];
    const rest = steps.filter((step) => !WORKLOAD_KINDS.has(step.object.kind));
    const wrote = logWrites(steps, log);
    const live = new Map<string, LiveKubeObject>();
    const made: LiveKubeObject[] = [];
    try {
      await this.#writeSteps(rest, deploymentId, live, made, signal);
      const tested = workloads.slice(1).filter((step) => step.why !== undefined);
      await Promise.all(tested.map((step) => this.#send(step, deploymentId, true, signal)));
      await this.#writeSteps(workloads, deploymentId, live, made, signal);
    } catch (error) {
      if (asTerminal(error) && !signal?.aborted) await this.#undo(made, deploymentId, namespace, log, signal);
      throw error;
    }
    return { live, wrote };
  }

  /** Deletes what a refused first apply wrote, then its inventory; what cannot be stays recorded, to be pruned. */
  async #undo(
    made: readonly LiveKubeObject[],
    deploymentId: string,
    namespace: string,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    try {
      for (const object of [...made].reverse())
        await this.#o.kube.delete(refOf(object), {
          propagationPolicy: 'Background',
          preconditionUid: object.metadata.uid,
          signal,
        });
      await this.#o.inventories.remove(deploymentId, namespace, signal);
      if (made.length > 0) log.info({ objects: made.map(formatLocalRef) }, 'first apply refused: undone');
    } catch (error) {
      log.warn(
        { err: error },
        'first apply refused: not all of it could be undone (its inventory keeps the rest)',
      );
    }
  }

  /** Writes one step that plan found missing or not as desired; returns the object live. */
  async #write(
    step: ApplyStep,
    deploymentId: string,
    signal: AbortSignal | undefined,
  ): Promise<LiveKubeObject> {
    const { object } = step;
    const { live, before, why } = await this.#send(step, deploymentId, false, signal);
    if (isCreateOnly(object) || why === undefined) return live;
    this.#o.metrics.objectsApplied.inc({ kind: object.kind });
    // Our spec did not change, the object did: someone else edited a field we set. Say which
    // field on the object (its path, never a value); the recorder folds repeats into one Event.
    if (before && why.kind === 'drift') {
      await this.#o.events.record(live, {
        type: 'Warning',
        reason: 'DriftCorrected',
        note: `${why.path} was changed outside the agent and is restored; fields the agent does not set are kept`,
        action: 'Apply',
      });
    }
    return live;
  }

  /**
   * Sends one step's write, or its server-side dry run. An unread object (see readOwned) that
   * exists after all — its create-only write answered 409, nothing written — is read and judged
   * as readOwned judges what it finds: another owner's is refused and left as it is; ours (made
   * since the watch listed, not yet seen) is written as found.
   */
  async #send(
    step: ApplyStep,
    deploymentId: string,
    dryRun: boolean,
    signal: AbortSignal | undefined,
  ): Promise<{ live: LiveKubeObject; before: LiveKubeObject | undefined; why: WriteReason | undefined }> {
    const { object } = step;
    try {
      return {
        live: await this.#request(object, step.unread, dryRun, signal),
        before: step.before,
        why: step.why,
      };
    } catch (error) {
      if (!step.unread || !isConflict(error)) throw namespaceWaiting(error, deploymentId);
    }
    const found = await this.#o.kube.get(refOf(object), { signal });
    // Made and removed by someone else while we created it: not a verdict, so tried again.
    if (!found) throw new Error(`${formatLocalRef(object)} appeared and went while being created`);
    const taken = takenBy(object, found, deploymentId);
    const refused = [namespacedRef(object)];
    if (taken?.handOver)
      throw new WaitingError(
        ReconcileReason.ClaimTaken,
        deploymentId,
        `${taken.message}; nothing is applied until then`,
        { refused },
      );
    if (taken) throw new TerminalError(ReconcileReason.ApplyRejected, taken.message, { refused });
    const why = whyWrite(object, found, this.#slim);
    if (why === undefined) return { live: found, before: found, why };
    return { live: await this.#request(object, false, dryRun, signal), before: found, why };
  }

  /**
   * The request of one write: a create for a create-only object (a 409 when it exists), else an
   * apply, forced — the fields we set are ours (a hand edit of one is drift we undo); fields we do
   * not set stay with their managers, since an apply only claims what it contains. An unread
   * object's apply is create-only. A dry run sends no generated values: the shape is checked.
   */
  async #request(
    object: KubeObject,
    unread: boolean,
    dryRun: boolean,
    signal: AbortSignal | undefined,
  ): Promise<LiveKubeObject> {
    const live = isCreateOnly(object)
      ? await this.#o.kube.create(dryRun ? object : withGeneratedKeys(object), { signal, dryRun })
      : await this.#o.kube.apply(unread ? createOnly(object) : object, { force: true, signal, dryRun });
    return dryRun ? live : this.written(live);
  }

  /** From the watch cache when it holds the object; a miss is no proof of absence, so it asks. */
  async read(ref: ObjectRef, signal?: AbortSignal): Promise<LiveKubeObject | undefined> {
    return this.#o.cache?.get(ref) ?? (await this.#o.kube.get(ref, { signal }));
  }

  /** The objects as live (the watch cache, else a read), keyed by entry; the absent left out. */
  async readLive(
    entries: readonly InventoryEntry[],
    signal: AbortSignal | undefined,
  ): Promise<Map<string, LiveKubeObject>> {
    const reads = await Promise.all(entries.map((e) => this.read(e, signal)));
    const live = new Map<string, LiveKubeObject>();
    for (const [i, e] of entries.entries()) {
      const found = reads[i];
      if (found) live.set(entryId(e), found);
    }
    return live;
  }

  written(object: LiveKubeObject): LiveKubeObject {
    this.#o.cache?.written(object);
    return object;
  }
}

/**
 * Why a found object's name is not this deployment's to write (whyNotOurs), or undefined when it
 * is. A database's credentials kept with its volume from another deployment of this listener (a
 * deleted one of the same name) are no other owner's object to refuse for good but the key to a
 * volume the platform team may hand over (`handOver`): waited on, as the volume's claims are.
 * `run` and `diff` judge alike.
 */
export function takenBy(
  object: KubeObject,
  live: LiveKubeObject,
  deploymentId: string,
): { readonly message: string; readonly handOver: boolean } | undefined {
  const verdict = whyNotOurs(object, live, deploymentId);
  if (verdict === undefined) return undefined;
  const kept = isDatabaseCredentials(object) && isDatabaseCredentials(live) && sameListener(live, object);
  if (!kept) return { message: verdict, handOver: false };
  return {
    message:
      `${formatLocalRef(object)}, the password of a kept database volume, exists and ${describeHolder(live)}: ` +
      KEPT_VOLUME_DECISION,
    handOver: true,
  };
}

function namespacedRef(object: KubeObject): ObjectRef & { namespace: string } {
  return { ...refOf(object), namespace: object.metadata.namespace ?? '' };
}

/** readOwned's mark for a miss it did not ask about. */
const UNREAD = Symbol('unread');

/**
 * The resourceVersion that makes an apply create-only: no object can have it (etcd revisions do
 * not reach it), so the API server creates a missing object and refuses an existing one with 409
 * Conflict, writing nothing — an update's version precondition (the generic registry's Store.Update)
 * that a create ignores. The field manager and its Apply operation are as for any apply.
 */
export const ABSENT_RESOURCE_VERSION = '9223372036854775807';

function createOnly(object: KubeObject): KubeObject {
  return { ...object, metadata: { ...object.metadata, resourceVersion: ABSENT_RESOURCE_VERSION } };
}

/**
 * One log line names what an apply writes and why (a cold sync of many deployments would
 * otherwise log a line per object); whether anything is written.
 */
function logWrites(steps: readonly ApplyStep[], log: Logger): boolean {
  const writes = steps.filter((step) => step.why !== undefined);
  if (writes.length > 0) {
    log.info(
      {
        objects: writes.map(({ object, why }) => `${formatLocalRef(object)}: ${changeOf(why).reason}`),
      },
      'applying',
    );
  }
  return writes.length > 0;
}

/**
 * Why an object must be written, or undefined when it is as desired: missing, spec changed (our
 * render of it changed), or the path of the first field of ours that someone else changed. A
 * create-only object is written only when missing. A slim object's body was found to hold our
 * fields and is unchanged since (objects/body.ts): the rest of it is compared.
 */
export function whyWrite(
  object: KubeObject,
  live: LiveKubeObject | undefined,
  isSlim: (live: LiveKubeObject) => boolean = () => false,
): WriteReason | undefined {
  if (!live) return { kind: 'missing' };
  if (isCreateOnly(object)) return undefined;
  if (live.metadata.annotations[ANNOTATION_SPEC_HASH] !== object.metadata.annotations[ANNOTATION_SPEC_HASH])
    return { kind: 'spec-changed' };
  const path = driftPath(isSlim(live) ? withoutBody(object) : object, live);
  return path === undefined ? undefined : { kind: 'drift', path };
}

/** Fills the generated keys of a create-only Secret with random values; the values stay in the cluster. */
function withGeneratedKeys(object: KubeObject): KubeObject {
  const keys = (object.metadata.annotations[ANNOTATION_GENERATED_KEYS] ?? '').split(',').filter(Boolean);
  const stringData = { ...secretData(object).stringData };
  for (const key of keys) stringData[key] = randomBytes(24).toString('base64url');
  return { ...object, stringData };
}
