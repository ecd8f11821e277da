// reconcile(deploymentId): level-triggered. Reads the desired state of one deployment and runs its
// steps — render → check references → apply → inventory → prune → status → report — returning an
// outcome (outcome.ts). Each step is its own module (applier, referenceGuard, agentChangeStep,
// inventoryRecord, pruneStep, rolloutReport, finalize; the status path and the settled-attempt
// memo too); this file is the flow. Nothing here depends on which event woke it.
import type { Logger } from 'pino';
import { type LiveKubeObject, refOf } from '../kube/index.ts';
import type { RenderedDeployment } from '../render/index.ts';
import { inputBoundsProblems } from '../render/inputBounds.ts';
import { deploymentLogger, withDeploymentFields } from '../report/deploymentLogger.ts';
import { ReconcileReason } from '../report/reconcileReason.ts';
import {
  type DesiredEntry,
  failedRevisionOf,
  isDeleted,
  logFieldsOf,
  type PresentEntry,
  renderEntry,
  renderedInventory,
  revisionOf,
} from './loop/desiredState.ts';
import { NameLocks } from './loop/nameLocks.ts';
import { SettledAttempts } from './loop/settledAttempts.ts';
import { WaitingSince } from './loop/waitingSince.ts';
import { classify, type ReconcileOutcome, TerminalError } from './outcome.ts';
import type { AgentChangeTurn } from './policy/agentChangeGate.ts';
import type { ReconcilerOptions } from './reconcilerOptions.ts';
import { type ReconcileSteps, reconcileSteps } from './reconcileSteps.ts';
import { finalizeDeployment } from './steps/finalize.ts';
import { entriesOf, entryId, type Inventory } from './steps/inventory.ts';
import { recordAhead } from './steps/inventoryRecord.ts';
import type { PlacedInventory } from './steps/inventoryStore.ts';
import { pruneStep } from './steps/pruneStep.ts';
import type { JudgedReference } from './steps/referenceGuard.ts';
import { hostLockKey, isRouteKind, routedHosts } from './steps/routedHosts.ts';

export class Reconciler {
  readonly #o: ReconcilerOptions;
  readonly #log: Logger;
  /** The steps' own modules (reconcileSteps.ts). */
  readonly #s: ReconcileSteps;
  readonly #attempts = new SettledAttempts();
  readonly #waits: WaitingSince;
  readonly #names = new NameLocks();

  constructor(options: ReconcilerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'reconciler' });
    this.#s = reconcileSteps(options);
    this.#waits = new WaitingSince(options.config.failureGraceMs, options.now);
  }

  /**
   * The namespaces served changed: a revision that failed for want of its namespace may succeed
   * now, so every settled attempt is tried once more (the caller requeues every deployment).
   */
  namespacesChanged(): void {
    this.#attempts.namespacesChanged();
  }

  async reconcile(deploymentId: string, signal?: AbortSignal): Promise<ReconcileOutcome> {
    const outcome = await this.#reconcile(deploymentId, signal);
    // A rollout found in progress counted itself where it was found (RolloutReport.after).
    if (outcome.result !== 'requeue') this.#s.rollouts.settled(deploymentId);
    if (outcome.result !== 'retry' && outcome.result !== 'aborted') this.#waits.forget(deploymentId);
    return outcome;
  }

  /** The shell: picks the path for the desired entry and turns whatever happened into an outcome. */
  async #reconcile(deploymentId: string, signal: AbortSignal | undefined): Promise<ReconcileOutcome> {
    const entry = this.#o.desired.get(deploymentId);
    const log = this.#logFor(deploymentId, entry);
    const served = this.#attempts.served;
    try {
      const suspension = this.#o.suspension?.(deploymentId);
      if (!entry || entry.kind === 'gone' || isDeleted(entry)) {
        // Deleted in the control plane while suspended: pruned after the resume (its entry stays).
        if (entry && suspension) return { result: 'done', detail: 'suspended' };
        if (entry) await this.#finalize(deploymentId, log, signal);
        return { result: 'done', detail: 'deleted' };
      }
      if (suspension && entry.kind === 'present')
        return await this.#suspended(deploymentId, entry, log, signal);
      if (entry.kind === 'invalid') throw new TerminalError(ReconcileReason.RenderInvalid, entry.message);
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
    const attempted = this.#attempts.get(deploymentId);
    // A failed revision is not rolled out or reported again; if its objects were applied, a hand
    // edit of them is still undone (as Argo CD's self-heal and Flux do, whatever the health).
    const repairOnly = entry.target.settled !== undefined && attempted?.fingerprint === entry.fingerprint;
    if (repairOnly && !attempted.applied) return { result: 'done', detail: 'settled' };

    // 0. Nothing to apply changed since the last full reconcile: the status path. A deployment
    //    past a cap of render/inputBounds.ts is not digested whole (a 15 MiB annotation took
    //    0.1 s): render refuses it next, reading no more than the caps.
    const bounded = inputBoundsProblems(entry.deployment, entry.target.revision).length === 0;
    const input = bounded ? this.#s.statusPath.inputDigest(entry, this.#attempts.served) : undefined;
    if (input !== undefined && !repairOnly) {
      const outcome = await this.#statusOnly(deploymentId, input, log, signal);
      if (outcome) return outcome;
    }
    this.#s.statusPath.forget(deploymentId);
    this.#o.metrics.reconcilePaths.inc({ path: 'full' });

    // 1. Render: pure; a bad deployment fails alone, with every problem named.
    const rendered = this.#render(entry);
    const { namespace, objects, statusNotes } = rendered;
    const next = renderedInventory(entry, rendered, this.#s.statusPath.inputHash(entry));
    const logIn = withDeploymentFields(log, { namespace });
    const { revisionId } = next;

    // 2. Apply what is missing or drifted, recorded first so that no applied object is unrecorded.
    const previous = this.#o.inventories.get(deploymentId);
    const applied = await this.#apply(entry, rendered, next, previous, logIn, signal);
    if ('held' in applied) return applied.held;
    const { live, wrote, agentChange, references } = applied;
    if (agentChange?.admitted && wrote)
      await this.#s.agentChanges.applied(deploymentId, namespace, agentChange, live);
    if (repairOnly) return { result: 'done', detail: 'settled' };

    // 3. Prune what left the desired set, then record the new inventory alone.
    await pruneStep(this.#s.prune, { namespace, previous, next, objects }, logIn, signal);

    // 4. Status: the rollout, from the live objects and their pods, reported where it is read.
    const status = await this.#s.rollouts.report(
      { deploymentId, revisionId, namespace, objects, live, notes: statusNotes, justApplied: wrote },
      logIn,
      signal,
    );
    this.#attempts.settle(deploymentId, { fingerprint: entry.fingerprint, applied: true }, served);
    this.#s.statusPath.remember(deploymentId, {
      // Rendered, so within the caps: digested above.
      input: input ?? this.#s.statusPath.inputDigest(entry, this.#attempts.served),
      owned: this.#s.statusPath.ownedDigest(next.entries, live),
      namespace,
      revisionId,
      entries: next.entries,
      notes: statusNotes,
      references,
    });
    return this.#s.rollouts.after(deploymentId, status, 'ok');
  }

  /**
   * The apply step. Names held from the read to the last write: another deployment whose objects
   * share one reads ours after we applied it (and is refused), never "absent" beside us; a routed
   * host is held too, so two deployments naming one never both find it free. An agent change
   * waiting its turn is `held`, nothing written.
   */
  async #apply(
    entry: PresentEntry,
    rendered: RenderedDeployment,
    next: Inventory,
    previous: readonly PlacedInventory[],
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<
    | { readonly held: ReconcileOutcome }
    | {
        readonly live: Map<string, LiveKubeObject>;
        readonly wrote: boolean;
        readonly agentChange: AgentChangeTurn | undefined;
        readonly references: JudgedReference[];
      }
  > {
    const { deploymentId } = next;
    const { namespace, objects, specHash } = rendered;
    const hosts = routedHosts(objects);
    const release = await this.#names.acquire(
      [...next.entries.map(entryId), ...hosts.map(hostLockKey)],
      signal,
    );
    try {
      const steps = this.#s.applier.plan(
        objects,
        await this.#s.applier.readOwned(deploymentId, objects, signal),
      );
      // References are judged at every full reconcile, written or not: nothing is applied, nor
      // pruned, while a template names what the rule refuses (referenceGuard.ts).
      const references = await this.#s.guard.checkReferences(deploymentId, objects, signal);
      if (steps.some((step) => step.why !== undefined && isRouteKind(step.object.kind)))
        await this.#s.guard.checkHosts(deploymentId, namespace, hosts, signal);
      const recorded = previous.find((p) => p.namespace === namespace)?.inventory;
      // An agent change (the same input rendered anew by this agent) waits its turn, as it is.
      const agentChange = this.#s.agentChanges.turn(recorded, next, steps);
      if (agentChange?.admitted === false) {
        const rollout = { deploymentId, revisionId: revisionOf(entry), namespace, objects };
        return { held: await this.#s.agentChanges.held(rollout, steps, agentChange, log, signal) };
      }
      // A first apply (no inventory, nothing live) dry-runs only its workloads but one (Applier.firstApply).
      const first = previous.length === 0 && steps.every((step) => step.before === undefined);
      if (!first)
        await this.#s.applier.dryRunChange(steps, recorded?.specHash !== specHash, deploymentId, signal);
      // Suspended while this reconcile ran: nothing is written from here on (the next look reports).
      if (this.#o.suspension?.(deploymentId)) return { held: { result: 'requeue', afterMs: 0 } };
      await recordAhead(this.#o.inventories, namespace, previous, next, signal);
      const applied = first
        ? await this.#s.applier.firstApply(steps, deploymentId, namespace, log, signal)
        : await this.#s.applier.apply(steps, deploymentId, log, signal);
      return { ...applied, agentChange, references };
    } catch (error) {
      // Refused objects — another's under a name the templates name, or under one this render
      // makes (its own Secret, deleted and made anew by another deployment): whatever of this
      // deployment runs on one, rendered now or recorded, is taken off it.
      const workloads = [...objects.map(refOf), ...previous.flatMap((p) => p.inventory.entries)];
      throw await this.#s.undo(deploymentId, workloads, error, log, signal);
    } finally {
      release();
    }
  }

  /**
   * The status path: when the last full reconcile converged from this very input and the owned
   * objects (from the watch cache: no request) still show what it left, the rollout is read from
   * them and reported. Undefined when not (a hand edit, a deletion): the full path repairs it.
   */
  async #statusOnly(
    deploymentId: string,
    input: string,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileOutcome | undefined> {
    const converged = this.#s.statusPath.converged(deploymentId, input);
    if (!converged) return undefined;
    const { entries, namespace, revisionId, notes } = converged;
    const live = await this.#s.applier.readLive(entries, signal);
    const holds = await this.#s.statusPath
      .holds(deploymentId, converged, live, signal)
      .catch(async (error: unknown) =>
        Promise.reject(await this.#s.undo(deploymentId, entries, error, log, signal)),
      );
    if (!holds) return undefined;
    this.#o.metrics.reconcilePaths.inc({ path: 'status' });
    const objects = [...live.values()];
    const status = await this.#s.rollouts.report(
      { deploymentId, revisionId, namespace, objects, live, notes, justApplied: false },
      withDeploymentFields(log, { namespace }),
      signal,
    );
    return this.#s.rollouts.after(deploymentId, status, 'ok');
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
    const live = await this.#s.applier.readLive(entriesOf(objects), signal);
    const status = await this.#s.rollouts.report(
      { deploymentId, revisionId, namespace, objects, live, notes: statusNotes, justApplied: false },
      withDeploymentFields(log, { namespace }),
      signal,
    );
    return this.#s.rollouts.after(deploymentId, status, 'suspended');
  }

  /** Every line about this deployment carries its id, and its revision and namespace once known. */
  #logFor(deploymentId: string, entry: DesiredEntry | undefined): Logger {
    const placed = this.#o.inventories.get(deploymentId).map((p) => p.namespace);
    return withDeploymentFields(deploymentLogger(this.#log, { deploymentId }), logFieldsOf(entry, placed));
  }

  #render(entry: PresentEntry): RenderedDeployment {
    const { listener, allowedNamespaces, digestKey, renderConfig } = this.#o;
    const rendered = renderEntry(entry, { listener: listener(), allowedNamespaces, digestKey }, renderConfig);
    if (!rendered.ok) throw new TerminalError(ReconcileReason.RenderInvalid, rendered.error.message);
    return rendered.value;
  }

  /**
   * Turns a failure into its outcome (outcome.ts classify): aborted (nothing said), terminal
   * (reported, not retried until the input changes), waiting (reported, and retried) or transient
   * (the next attempt does the work again).
   */
  async #failed(
    deploymentId: string,
    entry: DesiredEntry | undefined,
    served: number,
    error: unknown,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileOutcome> {
    const verdict = classify(error, signal?.aborted === true);
    if (verdict.kind === 'aborted') {
      log.info('reconcile aborted');
      return { result: 'aborted' };
    }
    if (verdict.kind === 'transient') {
      this.#attempts.forget(deploymentId);
      return { result: 'retry', error };
    }
    const { failure } = verdict;
    const revisionId = failedRevisionOf(entry);
    if (verdict.kind === 'waiting') {
      // Reported in progress, failed past the grace, and retried all the while: the namespace may
      // be created (or finish terminating) later, a referenced object made.
      log.warn({ reason: failure.reason, err: error }, 'deployment waiting');
      const pastGrace = this.#waits.pastGrace(deploymentId, failure.reason);
      await this.#s.report.waiting(deploymentId, revisionId, failure, pastGrace, log);
      this.#attempts.forget(deploymentId);
      return { result: 'retry', error };
    }
    log.warn({ reason: failure.reason, err: error }, 'deployment failed');
    await this.#s.report.failed(deploymentId, revisionId, failure, log);
    if (entry?.kind === 'present')
      this.#attempts.settle(deploymentId, { fingerprint: entry.fingerprint, applied: false }, served);
    return { result: 'terminal', error: verdict.failure };
  }

  /** A deployment the control plane deleted: its objects and inventories go, then it is forgotten. */
  async #finalize(deploymentId: string, log: Logger, signal: AbortSignal | undefined): Promise<void> {
    const keepVolumes = this.#o.config.prune.keepDatabaseVolumes;
    const { inventories } = this.#o;
    const namespaces = await finalizeDeployment(
      { pruner: this.#s.pruner, inventories, keepVolumes },
      deploymentId,
      log,
      signal,
    );
    log.info({ namespaces }, 'deployment deleted');
    this.#s.rollouts.forget(deploymentId);
    this.#o.desired.delete(deploymentId);
    this.#attempts.forget(deploymentId);
    this.#s.statusPath.forget(deploymentId);
    this.#s.agentChanges.forget(deploymentId);
  }
}
