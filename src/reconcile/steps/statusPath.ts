// The status path: controller-runtime's status path beside its spec path (convergedState.ts says
// when it holds). A full reconcile that converged leaves what it converged from and what it left;
// while both hold, a reconcile reads the owned objects (from the watch cache: no request) and only
// reports their rollout. This module keeps those states and the digests of the render's inputs,
// and looks whether an owned object or a referenced platform object changed since.
import type { Deployment, Listener, Revision } from '../../controlplane/schemas/index.ts';
import type { LiveKubeObject, ObjectRef } from '../../kube/index.ts';
import { formatLocalRef } from '../../objects/objectRef.ts';
import { canonicalHash } from '../../render/canonicalHash.ts';
import { ReconcileReason } from '../../report/reconcileReason.ts';
import type { PresentEntry } from '../loop/desiredState.ts';
import { TerminalError } from '../outcome.ts';
import { renderInputHash } from './agentChange.ts';
import { type ConvergedState, ownedDigest } from './convergedState.ts';
import { entryId, type InventoryEntry } from './inventory.ts';
import { changedReference, type JudgedReference } from './referenceGuard.ts';

export interface StatusPathOptions {
  readonly listener: () => Listener;
  /** The key of every digest render writes; undefined: plain digests. */
  readonly digestKey?: Uint8Array | undefined;
  /** The annotations the agent writes, which the spec view covers (render/ownedAnnotations). */
  readonly ownedAnnotations: (key: string) => boolean;
  /** A referenced object as the watch cache holds it (it holds only this listener's objects). */
  readonly cached?: ((ref: ObjectRef) => LiveKubeObject | undefined) | undefined;
  /** A read without a cache (`diff`, tests): a request. */
  readonly read: (ref: ObjectRef, signal: AbortSignal | undefined) => Promise<LiveKubeObject | undefined>;
}

export class StatusPath {
  readonly #o: StatusPathOptions;
  /** What each deployment's last full reconcile converged from and left. Absent: the next one is full. */
  readonly #converged = new Map<string, ConvergedState>();
  /** The digest of each listener object seen: the render's input, hashed once per listener read. */
  readonly #listenerDigests = new WeakMap<Listener, string>();
  /** The render input hash of each deployment object listed, with the revision it was taken with. */
  readonly #inputHashes = new WeakMap<Deployment, { revision: Revision | undefined; hash: string }>();

  constructor(options: StatusPathOptions) {
    this.#o = options;
  }

  /** The converged state of this deployment when it was converged from this very input. */
  converged(deploymentId: string, input: string): ConvergedState | undefined {
    const state = this.#converged.get(deploymentId);
    return state?.input === input ? state : undefined;
  }

  remember(deploymentId: string, state: ConvergedState): void {
    this.#converged.set(deploymentId, state);
  }

  forget(deploymentId: string): void {
    this.#converged.delete(deploymentId);
  }

  /** The digest of the owned objects' spec views as live. */
  ownedDigest(entries: readonly InventoryEntry[], live: ReadonlyMap<string, LiveKubeObject>): string {
    return ownedDigest(entries, (e) => live.get(entryId(e)), this.#o.ownedAnnotations);
  }

  /**
   * Whether the live objects still show what the last full reconcile left, and every platform
   * object the pod templates name is the one judged. False: the full path takes over (a hand edit,
   * a deletion, another platform object under a referenced name). A referenced object taken by
   * another owner is refused by the rule: a TerminalError (ForeignReference) naming what it refuses,
   * and the state forgotten.
   */
  async holds(
    deploymentId: string,
    converged: ConvergedState,
    live: ReadonlyMap<string, LiveKubeObject>,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    if (this.ownedDigest(converged.entries, live) !== converged.owned) return false;
    const changed: string[] = [];
    const targets: JudgedReference['ref'][] = [];
    for (const judged of converged.references) {
      const { cached } = this.#o;
      const found = cached ? cached(judged.ref) : await this.#o.read(judged.ref, signal);
      const change = changedReference(judged, found, deploymentId);
      if (change === 'rejudge') return false;
      if (!change) continue;
      targets.push(judged.ref);
      for (const path of judged.paths)
        changed.push(`${path} names ${formatLocalRef(judged.ref)}, which ${change.owner}`);
    }
    if (changed.length === 0) return true;
    this.forget(deploymentId);
    throw new TerminalError(ReconcileReason.ForeignReference, changed.join('; '), { refused: targets });
  }

  /**
   * What the render of this entry reads, as one digest: the deployment and revision (keyed as
   * every digest render writes: it covers secret values), the listener and the namespaces served
   * (their generation, `served`). The render configuration and the agent's own version are fixed
   * for the reconciler's life.
   */
  inputDigest(entry: PresentEntry, served: number): string {
    const listener = this.#o.listener();
    let listenerDigest = this.#listenerDigests.get(listener);
    if (listenerDigest === undefined) {
      listenerDigest = canonicalHash(listener, this.#o.digestKey);
      this.#listenerDigests.set(listener, listenerDigest);
    }
    return `${served}:${listenerDigest}:${this.inputHash(entry)}`;
  }

  /**
   * The render input hash of the deployment and its target revision (agentChange.ts), hashed once
   * per pair as listed: a listing that did not change keeps its objects.
   */
  inputHash(entry: PresentEntry): string {
    const { deployment, target } = entry;
    const held = this.#inputHashes.get(deployment);
    if (held !== undefined && held.revision === target.revision) return held.hash;
    const hash = renderInputHash(deployment, target.revision, this.#o.digestKey);
    this.#inputHashes.set(deployment, { revision: target.revision, hash });
    return hash;
  }
}
