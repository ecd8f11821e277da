// reconcile(deploymentId): level-triggered. Reads the desired state of one deployment and runs its
// steps — render → check references → apply → inventory → prune → status → report — returning an
// outcome (outcome.ts). Each step is its own module (applier, referenceGuard, pruner,
// rolloutReader); this file is the flow. Nothing here depends on which event woke it.
import type { Logger } from 'pino';
import type { Deployment, Listener, Revision } from '../controlplane/schemas/index.ts';
import {
  type EventRecorder,
  isAborted,
  isNamespaceUnavailable,
  type LiveKubeObject,
  type ObjectRef,
  refOf,
} from '../kube/index.ts';
import type { ObjectCache } from '../kube/objectCache.ts';
import { POD_TEMPLATE_KINDS, WORKLOAD_KINDS } from '../objects/kinds.ts';
import { formatLocalRef } from '../objects/objectRef.ts';
import { LABEL_COMPONENT } from '../objects/ownership.ts';
import { canonicalHash } from '../render/canonicalHash.ts';
import {
  type KubeObject,
  type RenderConfig,
  type RenderedDeployment,
  renderDeployment,
} from '../render/index.ts';
import { inputBoundsProblems } from '../render/inputBounds.ts';
import { ownedAnnotations } from '../render/ownedAnnotations.ts';
import { REFERENCE_KINDS } from '../render/references.ts';
import { deploymentLogger, withDeploymentFields } from '../report/deploymentLogger.ts';
import { DeploymentReport } from '../report/deploymentReport.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import { Reason, type RolloutStatus, withStatusNotes } from '../report/rolloutStatus.ts';
import type { StatusReporter } from '../report/statusReporter.ts';
import { AGENT_CHANGE_WAITING } from '../report/statusView.ts';
import { isAgentChange, renderInputHash } from './agentChange.ts';
import type { AgentChangeGate, AgentChangeTurn } from './agentChangeGate.ts';
import { Applier, type ApplyStep } from './applier.ts';
import { type ConvergedState, ownedDigest } from './convergedState.ts';
import type { DesiredEntry, DesiredState } from './desiredState.ts';
import type { EvidenceReader } from './evidenceReader.ts';
import {
  entriesOf,
  entryId,
  type Inventory,
  type InventoryEntry,
  sameInventory,
  staleEntries,
} from './inventory.ts';
import { type InventoryStore, inventoryRef, type PlacedInventory } from './inventoryStore.ts';
import { keptVolumeCount, renderedVolumeNames, volumeNameOf } from './keptVolumes.ts';
import type { KubeReader, KubeWriter } from './kubeAccess.ts';
import { NameLocks } from './nameLocks.ts';
import {
  asTerminal,
  type DoneDetail,
  type ReconcileOutcome,
  TerminalError,
  WaitingError,
} from './outcome.ts';
import { Pruner } from './pruner.ts';
import type { ReconcileConfig } from './reconcileConfig.ts';
import { changedReference, type JudgedReference, ReferenceGuard } from './referenceGuard.ts';
import { undoReferences } from './referenceUndo.ts';
import { RolloutReader } from './rolloutReader.ts';
import { RolloutRechecks } from './rolloutRechecks.ts';
import { hostLockKey, isRouteKind, routedHosts } from './routedHosts.ts';
import type { ActiveSuspension } from './suspensions.ts';

/** What the reconciler asks of the Kubernetes client: reads and writes, nothing else. */
export type ReconcilerKube = KubeReader & KubeWriter;

export interface ReconcilerOptions {
  readonly kube: ReconcilerKube;
  readonly desired: DesiredState;
  readonly inventories: InventoryStore;
  readonly reporter: Pick<StatusReporter, 'record'>;
  readonly events: Pick<EventRecorder, 'record'>;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  readonly renderConfig: RenderConfig;
  readonly config: ReconcileConfig;
  readonly listener: () => Listener;
  readonly allowedNamespaces: readonly string[] | undefined;
  /** The key of every digest render writes (manager/digestKey); undefined: plain digests. */
  readonly digestKey?: Uint8Array | undefined;
  /**
   * The owned objects (and pods) as the watches see them: reads that hit need no request, and a
   * deployment's claims and pods come from it once their watch has listed. Absent (`diff`,
   * tests), every read is a request.
   */
  readonly cache?: Pick<ObjectCache, 'get' | 'written' | 'byLabel' | 'isSynced' | 'checked' | 'isSlim'>;
  /** An operator's suspension in effect for a deployment (see suspensions.ts); absent: none. */
  readonly suspension?: ((deploymentId: string) => ActiveSuspension | undefined) | undefined;
  /**
   * The agent-change rate (agentChangeGate.ts): a change of the agent's own render of a deployment
   * (not of its revision) waits its turn. Absent: unlimited.
   */
  readonly agentChanges?: AgentChangeGate | undefined;
  /** Reads the evidence of a failing deployment's pods for its report; absent: the status alone. */
  readonly evidence?: EvidenceReader | undefined;
}

export class Reconciler {
  readonly #o: ReconcilerOptions;
  readonly #log: Logger;
  /** The steps' own modules: apply engine, reference guard, prune, rollout. */
  readonly #applier: Applier;
  readonly #guard: ReferenceGuard;
  readonly #pruner: Pruner;
  readonly #rollouts: RolloutReader;
  /** The rollouts in progress, and how soon each is looked at again. */
  readonly #rechecks: RolloutRechecks;
  readonly #names = new NameLocks();
  /**
   * Fingerprint of the input whose attempt settled (succeeded or failed for good), for a settled
   * (failed) revision: not retried forever. An attempt cut short by a transient error is not one.
   * `applied`: that attempt applied every object (its rollout failed, not its apply), so drift is
   * still repaired. `served`: the generation of the served namespaces it was made under — a
   * verdict reached under namespaces since changed (possibly recorded after the change, by a
   * reconcile that began before it) does not count.
   */
  readonly #attempted = new Map<string, { fingerprint: string; applied: boolean; served: number }>();
  /** Bumped at each change of the served namespaces. */
  #served = 0;
  /**
   * What each deployment's last full reconcile converged from and left (convergedState.ts):
   * while both hold, a reconcile takes the status path. Absent: the next one is full.
   */
  readonly #converged = new Map<string, ConvergedState>();
  /** The digest of each listener object seen: the render's input, hashed once per listener read. */
  readonly #listenerDigests = new WeakMap<Listener, string>();
  /** The render input hash of each deployment object listed, with the revision it was taken with. */
  readonly #inputHashes = new WeakMap<Deployment, { revision: Revision | undefined; hash: string }>();
  /** The report step: control plane, Events, status annotation, metrics. */
  readonly #report: DeploymentReport;
  /** The annotations the agent writes, which the spec view covers (render/ownedAnnotations). */
  readonly #ownedAnnotations: (key: string) => boolean;

  constructor(options: ReconcilerOptions) {
    this.#o = options;
    this.#ownedAnnotations = ownedAnnotations(options.renderConfig);
    this.#log = options.logger.child({ component: 'reconciler' });
    const { kube, cache, metrics, events, inventories, listener } = options;
    this.#applier = new Applier({ kube, cache, metrics, events, inventories });
    this.#guard = new ReferenceGuard({
      read: (ref, signal) => this.#applier.read(ref, signal),
      kube,
      listener,
      allowedNamespaces: options.allowedNamespaces,
    });
    this.#pruner = new Pruner({ kube, metrics, listener });
    this.#rollouts = new RolloutReader({
      kube,
      cache,
      listener,
      failureGraceMs: options.config.failureGraceMs,
      evidence: options.evidence,
    });
    this.#rechecks = new RolloutRechecks(
      options.config.rolloutRecheckMs,
      options.config.rolloutRechecksPerSecond,
    );
    this.#report = new DeploymentReport({
      reporter: options.reporter,
      events: options.events,
      metrics: options.metrics,
      // Through the same reads and writes as every object, so the watch cache sees them.
      objects: {
        read: (ref) => this.#applier.read(ref),
        mergePatch: async (ref, patch) => this.#applier.written(await options.kube.mergePatch(ref, patch)),
      },
    });
  }

  /**
   * The namespaces served changed: a revision that failed for want of its namespace may succeed
   * now, so every settled attempt is tried once more (the caller requeues every deployment).
   */
  namespacesChanged(): void {
    this.#served += 1;
  }

  async reconcile(deploymentId: string, signal?: AbortSignal): Promise<ReconcileOutcome> {
    const outcome = await this.#reconcile(deploymentId, signal);
    // A rollout found in progress counted itself where it was found (#rechecks.inProgress).
    if (outcome.result !== 'requeue') this.#rechecks.settled(deploymentId);
    return outcome;
  }

  /** The shell: picks the path for the desired entry and turns whatever happened into an outcome. */
  async #reconcile(deploymentId: string, signal: AbortSignal | undefined): Promise<ReconcileOutcome> {
    const entry = this.#o.desired.get(deploymentId);
    const log = this.#logFor(deploymentId, entry);
    const served = this.#served;
    try {
      const suspension = this.#o.suspension?.(deploymentId);
      if (
        !entry ||
        entry.kind === 'gone' ||
        (entry.kind === 'present' && entry.deployment.status === 'AWAITING_DELETE')
      ) {
        // Deleted in the control plane while suspended: pruned after the resume (its entry stays).
        if (entry && suspension) return { result: 'done', detail: 'suspended' };
        if (entry) await this.#deleteDeployment(deploymentId, log, signal);
        return { result: 'done', detail: 'deleted' };
      }
      if (suspension && entry.kind === 'present')
        return await this.#suspended(deploymentId, entry, log, signal);
      if (entry.kind === 'invalid') throw new TerminalError(Reason.RenderInvalid, entry.message);
      return await this.#converge(deploymentId, entry, served, log, signal);
    } catch (error) {
      return this.#failed(deploymentId, entry, served, error, log, signal);
    }
  }

  /** The steps, in order, for a deployment that should exist. */
  async #converge(
    deploymentId: string,
    entry: PresentEntry,
    served: number,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileOutcome> {
    const { target } = entry;
    const revisionId = revisionOf(entry);
    const lastAttempt = this.#attempted.get(deploymentId);
    const attempted = lastAttempt?.served === this.#served ? lastAttempt : undefined;
    // A failed revision is not rolled out or reported again; if its objects were applied, a hand
    // edit of them is still undone (as Argo CD's self-heal and Flux do, whatever the health).
    const repairOnly = target.settled !== undefined && attempted?.fingerprint === entry.fingerprint;
    if (repairOnly && !attempted.applied) return { result: 'done', detail: 'settled' };

    // 0. Nothing to apply changed since the last full reconcile: the status path. A deployment
    //    past a cap of render/inputBounds.ts is not digested whole (a 15 MiB annotation took
    //    0.1 s): render refuses it next, reading no more than the caps.
    const bounded = inputBoundsProblems(entry.deployment, entry.target.revision).length === 0;
    const input = bounded ? this.#inputDigest(entry) : undefined;
    const converged = this.#converged.get(deploymentId);
    if (input !== undefined && converged?.input === input && !repairOnly) {
      const outcome = await this.#statusPath(deploymentId, converged, log, signal);
      if (outcome) return outcome;
    }
    this.#converged.delete(deploymentId);
    this.#o.metrics.reconcilePaths.inc({ path: 'full' });

    // 1. Render: pure; a bad deployment fails alone, with every problem named.
    const { namespace, objects, specHash, statusNotes } = this.#render(entry);
    const logIn = withDeploymentFields(log, { namespace });
    const inputHash = this.#inputHashOf(entry);
    const next: Inventory = { deploymentId, entries: entriesOf(objects), specHash, revisionId, inputHash };

    // 2. Apply what is missing or drifted, recorded first so that no applied object is unrecorded.
    //    Names held from the read to the last write: another deployment whose objects share one
    //    reads ours after we applied it (and is refused), never "absent" beside us.
    const previous = this.#o.inventories.get(deploymentId);
    // A routed host is held too: two deployments naming one never both find it free.
    const hosts = routedHosts(objects);
    const release = await this.#names.acquire(
      [...next.entries.map(entryId), ...hosts.map(hostLockKey)],
      signal,
    );
    let applied: { live: Map<string, LiveKubeObject>; wrote: boolean };
    let agentChange: AgentChangeTurn | undefined;
    let references: JudgedReference[];
    try {
      const steps = this.#applier.plan(objects, await this.#applier.readOwned(deploymentId, objects, signal));
      // References are judged at every full reconcile, written or not: nothing is applied, nor
      // pruned, while a template names what the rule refuses (referenceGuard.ts).
      references = await this.#guard.checkReferences(deploymentId, objects, signal);
      if (steps.some((step) => step.why !== undefined && isRouteKind(step.object.kind)))
        await this.#guard.checkHosts(deploymentId, namespace, hosts, signal);
      const recorded = previous.find((p) => p.namespace === namespace)?.inventory;
      // An agent change (the same input rendered anew by this agent) waits its turn, as it is.
      agentChange = this.#agentChangeTurn(recorded, next, steps);
      if (agentChange?.admitted === false)
        return await this.#held(deploymentId, entry, namespace, objects, steps, agentChange, logIn, signal);
      // A first apply (no inventory, nothing live) dry-runs only its workloads but one (Applier.firstApply).
      const first = previous.length === 0 && steps.every((step) => step.before === undefined);
      if (!first)
        await this.#applier.dryRunChange(steps, recorded?.specHash !== specHash, deploymentId, signal);
      // Suspended while this reconcile ran: nothing is written from here on (the next look reports).
      if (this.#o.suspension?.(deploymentId)) return { result: 'requeue', afterMs: 0 };
      await this.#recordAhead(namespace, previous, next, signal);
      applied = first
        ? await this.#applier.firstApply(steps, deploymentId, namespace, logIn, signal)
        : await this.#applier.apply(steps, deploymentId, logIn, signal);
    } catch (error) {
      // Refused objects — another's under a name the templates name, or under one this render
      // makes (its own Secret, deleted and made anew by another deployment): whatever of this
      // deployment runs on one, rendered now or recorded, is taken off it.
      const workloads = [...objects.map(refOf), ...previous.flatMap((p) => p.inventory.entries)];
      throw await this.#undoReferences(deploymentId, workloads, error, logIn, signal);
    } finally {
      release();
    }
    const { live, wrote } = applied;
    if (agentChange?.admitted && wrote)
      await this.#agentChangeApplied(deploymentId, namespace, agentChange, live);
    if (repairOnly) return { result: 'done', detail: 'settled' };

    // 3. Inventory: what left the desired set, by the diff of the recorded and the new entries.
    const stale = staleEntries(
      previous.flatMap((p) => p.inventory.entries),
      next.entries,
    );
    const elsewhere = previous.filter((p) => p.namespace !== namespace).map((p) => p.namespace);

    // 4. Prune it (only objects this listener owns), then record the new inventory alone.
    // A database dropped (the deployment brings its own) keeps its volume while the deployment
    // lives, and so its credentials: rendering it again opens the same data.
    for (const entry of stale)
      await this.#pruner.prune(entry, deploymentId, logIn, { keepVolumes: true, signal });
    // A rename (or a move) leaves its volumes behind: past the bound, the oldest go. Before the
    // new inventory is recorded, so that a reconcile cut short here looks again.
    const named = renderedVolumeNames(namespace, objects);
    if (
      stale.length > 0 ||
      elsewhere.length > 0 ||
      this.#earlierVolumesCached(deploymentId, namespace, named)
    )
      await this.#pruner.pruneEarlierVolumes(
        deploymentId,
        {
          namespaces: [namespace, ...elsewhere, ...this.#servedNamespaces()],
          current: named,
          kept: this.#keptVolumes(),
        },
        logIn,
        signal,
      );
    for (const other of elsewhere) await this.#o.inventories.remove(deploymentId, other, signal);
    const current = this.#o.inventories.get(deploymentId).find((p) => p.namespace === namespace)?.inventory;
    if (!sameInventory(current, next)) await this.#o.inventories.write(namespace, next, signal);

    // 5. Status: the rollout, from the live objects and their pods; 6. reported where it is read.
    const status = await this.#reportRollout(
      { deploymentId, revisionId, namespace, objects, live, notes: statusNotes, justApplied: wrote },
      logIn,
      signal,
    );
    this.#attempted.set(deploymentId, { fingerprint: entry.fingerprint, applied: true, served });
    this.#converged.set(deploymentId, {
      // Rendered, so within the caps: digested above.
      input: input ?? this.#inputDigest(entry),
      owned: ownedDigest(next.entries, (e) => live.get(entryId(e)), this.#ownedAnnotations),
      namespace,
      revisionId,
      entries: next.entries,
      notes: statusNotes,
      references,
    });
    return this.#afterRollout(deploymentId, status, 'ok');
  }

  /**
   * The status path: the owned objects read (from the watch cache: no request) and, when each one
   * still shows the spec view the last full reconcile left, the rollout read from them and
   * reported. Undefined when one changed (a hand edit, a deletion): the full path repairs it.
   */
  async #statusPath(
    deploymentId: string,
    converged: ConvergedState,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileOutcome | undefined> {
    const { entries, namespace, revisionId, notes } = converged;
    const live = await this.#readLive(entries, signal);
    if (ownedDigest(entries, (e) => live.get(entryId(e)), this.#ownedAnnotations) !== converged.owned)
      return undefined;
    if ((await this.#referencesChanged(deploymentId, converged, log, signal)) === 'rejudge') return undefined;
    this.#o.metrics.reconcilePaths.inc({ path: 'status' });
    const status = await this.#reportRollout(
      { deploymentId, revisionId, namespace, objects: [...live.values()], live, notes, justApplied: false },
      withDeploymentFields(log, { namespace }),
      signal,
    );
    return this.#afterRollout(deploymentId, status, 'ok');
  }

  /**
   * Whether a platform object the pod templates name is another object now, seen in the watch
   * cache (no request: it holds only this listener's objects, so a hit is a change). Refused by
   * the rule: its workloads are taken off it and the deployment fails (ForeignReference).
   * Another platform object: `rejudge`, by the full path.
   */
  async #referencesChanged(
    deploymentId: string,
    converged: ConvergedState,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<'rejudge' | undefined> {
    const changed: string[] = [];
    const targets: JudgedReference['ref'][] = [];
    for (const judged of converged.references) {
      const { cache } = this.#o;
      const live = cache ? cache.get(judged.ref) : await this.#applier.read(judged.ref, signal);
      const change = changedReference(judged, live, deploymentId);
      if (change === 'rejudge') return 'rejudge';
      if (!change) continue;
      targets.push(judged.ref);
      for (const path of judged.paths)
        changed.push(`${path} names ${formatLocalRef(judged.ref)}, which ${change.owner}`);
    }
    if (changed.length === 0) return undefined;
    this.#converged.delete(deploymentId);
    const error = new TerminalError(Reason.ForeignReference, changed.join('; '), { refused: targets });
    throw await this.#undoReferences(deploymentId, converged.entries, error, log, signal);
  }

  /**
   * Takes the deployment's workloads (those with a pod template among `workloads`) off the objects
   * a failure refused (its `refused`); the failure then says what was undone. Any other error is
   * returned as it is.
   */
  async #undoReferences(
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
    const undone = await undoReferences(
      { kube: this.#o.kube, events: this.#o.events, listenerId: () => this.#o.listener().id },
      deploymentId,
      [...templated.values()],
      named,
      log,
      signal,
    );
    if (undone.length === 0) return error;
    const message = `${error.message}; ${undone.join('; ')}`;
    const options = { cause: error.cause, refused: error.refused };
    return error instanceof WaitingError
      ? new WaitingError(error.reason, error.deploymentId, message, options)
      : new TerminalError(error.reason, message, options);
  }

  /** The objects as live (the watch cache, else a read), keyed by entry; the absent left out. */
  async #readLive(
    entries: readonly InventoryEntry[],
    signal: AbortSignal | undefined,
  ): Promise<Map<string, LiveKubeObject>> {
    const reads = await Promise.all(entries.map((e) => this.#applier.read(e, signal)));
    const live = new Map<string, LiveKubeObject>();
    for (const [i, e] of entries.entries()) {
      const found = reads[i];
      if (found) live.set(entryId(e), found);
    }
    return live;
  }

  /**
   * A rollout in progress is looked at again at its recheck, in the background: applying what a
   * deployment not yet applied asks comes before telling how another's rollout goes (its outcome's
   * Event and annotation are two writes). Any other is done.
   */
  #afterRollout(deploymentId: string, status: RolloutStatus, detail: DoneDetail): ReconcileOutcome {
    return status.revisionStatus === 'DEPLOYING'
      ? { result: 'requeue', afterMs: this.#rechecks.inProgress(deploymentId), background: true }
      : { result: 'done', detail };
  }

  /**
   * What the render of this entry reads, as one digest: the deployment and revision (keyed as
   * every digest render writes: it covers secret values), the listener and the namespaces served.
   * The render configuration and the agent's own version are fixed for the reconciler's life.
   */
  #inputDigest(entry: PresentEntry): string {
    const listener = this.#o.listener();
    let listenerDigest = this.#listenerDigests.get(listener);
    if (listenerDigest === undefined) {
      listenerDigest = canonicalHash(listener, this.#o.digestKey);
      this.#listenerDigests.set(listener, listenerDigest);
    }
    return `${this.#served}:${listenerDigest}:${this.#inputHashOf(entry)}`;
  }

  /**
   * The render input hash of the deployment and its target revision (agentChange.ts), hashed once
   * per pair as listed: a listing that did not change keeps its objects.
   */
  #inputHashOf(entry: PresentEntry): string {
    const { deployment, target } = entry;
    const held = this.#inputHashes.get(deployment);
    if (held !== undefined && held.revision === target.revision) return held.hash;
    const hash = renderInputHash(deployment, target.revision, this.#o.digestKey);
    this.#inputHashes.set(deployment, { revision: target.revision, hash });
    return hash;
  }

  /**
   * A suspended deployment: nothing is applied, pruned or recorded, and its rollout is still
   * reported — for the revision the agent last applied, read from the live objects (a newer
   * revision waits for the resume, and is not said to be deployed).
   */
  async #suspended(
    deploymentId: string,
    entry: PresentEntry,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileOutcome> {
    const revisionId = revisionOf(entry);
    const { namespace, objects, statusNotes } = this.#render(entry);
    const recorded = this.#o.inventories.get(deploymentId).find((p) => p.namespace === namespace)?.inventory;
    if (recorded?.revisionId !== revisionId) return { result: 'done', detail: 'suspended' };
    const live = await this.#readLive(entriesOf(objects), signal);
    const status = await this.#reportRollout(
      { deploymentId, revisionId, namespace, objects, live, notes: statusNotes, justApplied: false },
      withDeploymentFields(log, { namespace }),
      signal,
    );
    return this.#afterRollout(deploymentId, status, 'suspended');
  }

  // --- The agent-change rate: a change of the agent's own render waits its turn.

  /**
   * Whether this render is an agent change to hold, and its turn: undefined when it is not one (a
   * new revision or input, a first apply, a drift repair, or no live workload it would restart).
   * Only the workloads' rollout needs the gate, yet the whole re-apply waits with it (simpler).
   */
  #agentChangeTurn(
    recorded: Inventory | undefined,
    next: Inventory,
    steps: readonly ApplyStep[],
  ): AgentChangeTurn | undefined {
    const workloads = steps.filter((step) => WORKLOAD_KINDS.has(step.object.kind));
    const restarts =
      isAgentChange(recorded, next) &&
      workloads.length > 0 &&
      workloads.every((step) => step.before !== undefined) &&
      workloads.some((step) => step.why?.kind === 'spec-changed');
    const gate = this.#o.agentChanges;
    if (!restarts) {
      this.#agentChangeForget(next.deploymentId);
      return undefined;
    }
    const turn = gate ? gate.ask(next.deploymentId) : ({ admitted: true, heldMs: 0 } as const);
    this.#o.metrics.agentChangesWaiting.set(gate?.waiting ?? 0);
    return turn;
  }

  #agentChangeForget(deploymentId: string): void {
    const gate = this.#o.agentChanges;
    if (!gate?.isWaiting(deploymentId)) return;
    gate.forget(deploymentId);
    this.#o.metrics.agentChangesWaiting.set(gate.waiting);
  }

  /**
   * A held deployment: nothing is written; its rollout is reported from its live objects as it is
   * (its revision stays DEPLOYED), with a note that it waits; it looks again when its turn is due.
   */
  async #held(
    deploymentId: string,
    entry: PresentEntry,
    namespace: string,
    objects: readonly KubeObject[],
    steps: readonly ApplyStep[],
    turn: Extract<AgentChangeTurn, { admitted: false }>,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileOutcome> {
    const live = new Map<string, LiveKubeObject>();
    for (const step of steps) if (step.before) live.set(step.id, step.before);
    log.debug({ ahead: turn.ahead, retryAfterMs: turn.retryAfterMs }, 'agent change held');
    const status = await this.#reportRollout(
      {
        deploymentId,
        revisionId: revisionOf(entry),
        namespace,
        objects,
        live,
        notes: [AGENT_CHANGE_WAITING],
        justApplied: false,
      },
      log,
      signal,
    );
    const afterMs =
      status.revisionStatus === 'DEPLOYING'
        ? Math.min(turn.retryAfterMs, this.#rechecks.inProgress(deploymentId))
        : turn.retryAfterMs;
    return { result: 'requeue', afterMs };
  }

  /** An agent change was applied: counted, and told once by an Event on the main workload (or the inventory). */
  async #agentChangeApplied(
    deploymentId: string,
    namespace: string,
    turn: Extract<AgentChangeTurn, { admitted: true }>,
    live: ReadonlyMap<string, LiveKubeObject>,
  ): Promise<void> {
    this.#o.metrics.agentChangesApplied.inc();
    const main = mainWorkload(live);
    const held = turn.heldMs > 0 ? `, after waiting ${Math.round(turn.heldMs / 1000)} s for its turn` : '';
    await this.#o.events.record(main ?? inventoryRef(deploymentId, namespace), {
      type: 'Normal',
      reason: 'AgentChangeApplied',
      note: `the agent's new render of the same revision is applied${held} (reconcile.agentChangeRate)`,
      action: 'Apply',
    });
  }

  /**
   * The rollout of the live objects (and their pods), with the render's notes, reported where it
   * is read (control plane, Events, the inventory's status annotation, metrics).
   */
  async #reportRollout(
    rollout: {
      readonly deploymentId: string;
      readonly revisionId: string | undefined;
      readonly namespace: string;
      readonly objects: readonly KubeObject[];
      readonly live: Map<string, LiveKubeObject>;
      readonly notes: readonly string[];
      readonly justApplied: boolean;
    },
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<RolloutStatus> {
    const { deploymentId, revisionId, namespace, objects, live, notes, justApplied } = rollout;
    const status = withStatusNotes(
      await this.#rollouts.rollout(deploymentId, revisionId, namespace, objects, live, signal),
      notes,
    );
    await this.#report.status(
      {
        deploymentId,
        revisionId,
        status,
        main: mainWorkload(live),
        annotated: inventoryRef(deploymentId, namespace),
        justApplied,
      },
      log,
    );
    return status;
  }

  /** Every line about this deployment carries its id, and its revision and namespace once known. */
  #logFor(deploymentId: string, entry: DesiredEntry | undefined): Logger {
    const log = deploymentLogger(this.#log, { deploymentId });
    if (entry?.kind === 'present') {
      return withDeploymentFields(log, {
        revisionId: revisionOf(entry),
        namespace: entry.deployment.source_config.listener_config?.k8s_namespace ?? undefined,
      });
    }
    const placed = this.#o.inventories.get(deploymentId);
    return placed.length === 1 ? withDeploymentFields(log, { namespace: placed[0]?.namespace }) : log;
  }

  #render(entry: PresentEntry): RenderedDeployment {
    const rendered = renderDeployment(
      {
        deployment: entry.deployment,
        revision: entry.target.revision,
        listener: this.#o.listener(),
        allowedNamespaces: this.#o.allowedNamespaces,
        digestKey: this.#o.digestKey,
      },
      this.#o.renderConfig,
    );
    if (!rendered.ok) throw new TerminalError(Reason.RenderInvalid, rendered.error.message);
    return rendered.value;
  }

  /** Records the union of the recorded and the new entries before any apply (a crash loses none). */
  async #recordAhead(
    namespace: string,
    previous: readonly PlacedInventory[],
    next: Inventory,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const union = unionEntries(
      previous.flatMap((p) => p.inventory.entries),
      next.entries,
    );
    const here = previous.find((p) => p.namespace === namespace);
    if (here && sameEntries(here.inventory.entries, union)) return;
    // A first inventory has nothing to prune: recorded whole now, it needs no second write (a
    // third of a cold sync's writes otherwise). Else the old spec hash stays until the new
    // inventory is recorded whole, after the prune.
    const first = previous.length === 0;
    await this.#o.inventories.write(
      namespace,
      first
        ? next
        : {
            ...next,
            entries: union,
            specHash: here?.inventory.specHash ?? '',
            inputHash: here?.inventory.inputHash,
          },
      signal,
    );
  }

  /**
   * Turns a failure into its outcome: aborted (nothing said), terminal (reported, not retried
   * until the input changes), waiting (reported, and retried: a namespace not yet there, a
   * WaitingError) or retry (transient: the next attempt does the work again).
   */
  async #failed(
    deploymentId: string,
    entry: DesiredEntry | undefined,
    served: number,
    error: unknown,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileOutcome> {
    // Leadership lost or shutting down: whatever failed, it is not this deployment's failure,
    // and the next leader reconciles it again.
    if (isAborted(error) || signal?.aborted) {
      log.info('reconcile aborted');
      return { result: 'aborted' };
    }
    const failure = error instanceof WaitingError ? error : asTerminal(error);
    if (!failure) {
      this.#attempted.delete(deploymentId);
      return { result: 'retry', error };
    }
    const waits = failure instanceof WaitingError || isNamespaceUnavailable(error);
    log.warn({ reason: failure.reason, err: error }, waits ? 'deployment waiting' : 'deployment failed');
    const revisionId =
      entry?.kind === 'present'
        ? revisionOf(entry)
        : entry?.kind === 'invalid'
          ? entry.revisionId
          : undefined;
    await this.#report.failed(deploymentId, revisionId, failure, log);
    if (failure instanceof WaitingError || isNamespaceUnavailable(error)) {
      // Reported, yet retried: the namespace may be created (or finish terminating) later, a
      // referenced object made.
      this.#attempted.delete(deploymentId);
      return { result: 'retry', error };
    }
    if (entry?.kind === 'present')
      this.#attempted.set(deploymentId, { fingerprint: entry.fingerprint, applied: false, served });
    return { result: 'terminal', error: failure };
  }

  /** The earlier names' volumes a deployment keeps: none when volumes are not kept. */
  #keptVolumes(): number {
    return keptVolumeCount(this.#o.config.prune);
  }

  /** The listener's namespaces this agent may use: where a deployment's earlier volumes may be. */
  #servedNamespaces(): string[] {
    const allowed = this.#o.allowedNamespaces;
    return (this.#o.listener().compute_config?.k8s_namespaces ?? []).filter(
      (n) => allowed?.includes(n) ?? true,
    );
  }

  /**
   * Whether the watch cache holds more claims of earlier names than are kept, in this namespace
   * (no request): a rename whose prune was cut short is finished at a later full reconcile.
   */
  #earlierVolumesCached(deploymentId: string, namespace: string, current: ReadonlySet<string>): boolean {
    const cache = this.#o.cache;
    if (!cache?.isSynced('PersistentVolumeClaim', namespace)) return false;
    const earlier = new Set(
      cache
        .byLabel('PersistentVolumeClaim', namespace, deploymentId)
        .flatMap((claim) => volumeNameOf(namespace, claim) ?? [])
        .filter((key) => !current.has(key)),
    );
    return earlier.size > this.#keptVolumes();
  }

  /**
   * Deletes what the deployment's inventories record, then forgets it; its database volumes (the
   * claims and their credentials) go too unless they are kept.
   */
  async #deleteDeployment(deploymentId: string, log: Logger, signal: AbortSignal | undefined): Promise<void> {
    const placed = this.#o.inventories.get(deploymentId);
    const keepVolumes = this.#o.config.prune.keepDatabaseVolumes;
    for (const { namespace, inventory } of placed) {
      for (const entry of [...inventory.entries].reverse())
        await this.#pruner.prune(entry, deploymentId, log, { keepVolumes, signal });
      if (!keepVolumes) await this.#pruner.pruneVolumes(namespace, deploymentId, log, signal);
      await this.#o.inventories.remove(deploymentId, namespace, signal);
    }
    log.info({ namespaces: placed.map((p) => p.namespace) }, 'deployment deleted');
    this.#report.deleted(deploymentId);
    this.#o.desired.delete(deploymentId);
    this.#attempted.delete(deploymentId);
    this.#converged.delete(deploymentId);
    this.#rollouts.forget(deploymentId);
    this.#agentChangeForget(deploymentId);
  }
}

type PresentEntry = Extract<DesiredEntry, { kind: 'present' }>;

/** The main workload among the live objects: where a deployment's Events go. */
function mainWorkload(live: ReadonlyMap<string, LiveKubeObject>): LiveKubeObject | undefined {
  return [...live.values()].find(
    (o) => o.kind === 'Deployment' && o.metadata.labels[LABEL_COMPONENT] === 'main',
  );
}

function revisionOf(entry: PresentEntry): string | undefined {
  return entry.target.revision?.id ?? entry.deployment.latest_revision_id ?? undefined;
}

function unionEntries(a: readonly InventoryEntry[], b: readonly InventoryEntry[]): InventoryEntry[] {
  const byId = new Map<string, InventoryEntry>();
  for (const entry of [...a, ...b]) byId.set(entryId(entry), entry);
  return [...byId.values()];
}

function sameEntries(a: readonly InventoryEntry[], b: readonly InventoryEntry[]): boolean {
  if (a.length !== b.length) return false;
  const ids = new Set(a.map(entryId));
  return b.every((entry) => ids.has(entryId(entry)));
}
