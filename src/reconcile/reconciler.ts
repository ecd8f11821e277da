// reconcile(deploymentId): level-triggered. Reads the desired state of one deployment and runs its
// steps — render → apply → inventory → prune → status → report — returning an outcome (outcome.ts).
// Nothing here depends on which event woke it.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Listener } from '../controlplane/schemas/index.ts';
import {
  type EventRecorder,
  isAborted,
  isConflict,
  isNamespaceUnavailable,
  isTransient,
  KubeApiError,
  type LiveKubeObject,
  type ObjectRef,
  refOf,
} from '../kube/index.ts';
import type { ObjectCache } from '../kube/objectCache.ts';
import { withoutBody } from '../objects/body.ts';
import { secretData } from '../objects/fields.ts';
import { ROLLOUT_KINDS, WORKLOAD_KINDS } from '../objects/kinds.ts';
import {
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_GENERATED_KEYS,
  ANNOTATION_SPEC_HASH,
  deploymentSelector,
  foreignOwner,
  isPrunable,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  whyNotOurs,
} from '../objects/ownership.ts';
import {
  type KubeObject,
  type RenderConfig,
  type RenderedDeployment,
  renderDeployment,
} from '../render/index.ts';
import { podReferences, type Reference } from '../render/references.ts';
import { deploymentLogger, withDeploymentFields } from '../report/deploymentLogger.ts';
import { DeploymentReport } from '../report/deploymentReport.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import { PodProblemClock, podsOfRevision } from '../report/podProblems.ts';
import {
  computeRollout,
  type PodProblem,
  Reason,
  type RolloutStatus,
  withStatusNotes,
} from '../report/rolloutStatus.ts';
import type { StatusReporter } from '../report/statusReporter.ts';
import { AGENT_CHANGE_WAITING } from '../report/statusView.ts';
import { isAgentChange, renderInputHash } from './agentChange.ts';
import type { AgentChangeGate, AgentChangeTurn } from './agentChangeGate.ts';
import type { DesiredEntry, DesiredState } from './desiredState.ts';
import { driftPath } from './drift.ts';
import {
  entriesOf,
  entryId,
  entryOf,
  type Inventory,
  type InventoryEntry,
  sameInventory,
  staleEntries,
} from './inventory.ts';
import { type InventoryStore, inventoryName, type PlacedInventory } from './inventoryStore.ts';
import type { KubeReader, KubeWriter } from './kubeAccess.ts';
import { NameLocks } from './nameLocks.ts';
import { type ReconcileOutcome, TerminalError, WaitingError } from './outcome.ts';
import type { ReconcileConfig } from './reconcileConfig.ts';
import { RolloutRechecks } from './rolloutRechecks.ts';
import { hostHolder, hostLockKey, isRouteKind, ROUTE_KINDS, routedHosts } from './routedHosts.ts';
import type { ActiveSuspension } from './suspensions.ts';
import { type TemplateClaim, templateClaims } from './templateClaims.ts';

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
}

export class Reconciler {
  readonly #o: ReconcilerOptions;
  readonly #log: Logger;
  /** First time each pod was seen waiting with a back-off reason, for the grace period. */
  readonly #podProblems = new PodProblemClock();
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
  /** The report step: control plane, Events, status annotation, metrics. */
  readonly #report: DeploymentReport;

  constructor(options: ReconcilerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'reconciler' });
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
        read: (ref) => this.#read(ref),
        mergePatch: async (ref, patch) => this.#written(await options.kube.mergePatch(ref, patch)),
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

    // 1. Render: pure; a bad deployment fails alone, with every problem named.
    const { namespace, objects, specHash, statusNotes } = this.#render(entry);
    const logIn = withDeploymentFields(log, { namespace });
    const inputHash = renderInputHash(entry.deployment, target.revision, this.#o.digestKey);
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
    try {
      const steps = this.#plan(objects, await this.#readOwned(deploymentId, objects, signal));
      // References are judged when a pod template is written: one found as desired was judged
      // then, and a platform Secret deleted since stops nothing that runs (nor is it read again
      // at each look of a rollout: the platform's objects are not watched).
      if (steps.some((step) => step.why !== undefined))
        await this.#checkReferences(deploymentId, objects, signal);
      if (steps.some((step) => step.why !== undefined && isRouteKind(step.object.kind)))
        await this.#checkHosts(deploymentId, namespace, hosts, signal);
      const recorded = previous.find((p) => p.namespace === namespace)?.inventory;
      // An agent change (the same input rendered anew by this agent) waits its turn, as it is.
      agentChange = this.#agentChangeTurn(recorded, next, steps);
      if (agentChange?.admitted === false)
        return await this.#held(deploymentId, entry, namespace, objects, steps, agentChange, logIn, signal);
      // A first apply (no inventory, nothing live) dry-runs only its workloads but one (#firstApply).
      const first = previous.length === 0 && steps.every((step) => step.before === undefined);
      if (!first) await this.#dryRunChange(steps, recorded?.specHash !== specHash, deploymentId, signal);
      // Suspended while this reconcile ran: nothing is written from here on (the next look reports).
      if (this.#o.suspension?.(deploymentId)) return { result: 'requeue', afterMs: 0 };
      await this.#recordAhead(namespace, previous, next, signal);
      applied = first
        ? await this.#firstApply(steps, deploymentId, namespace, logIn, signal)
        : await this.#apply(steps, deploymentId, logIn, signal);
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
    for (const entry of stale) await this.#prune(entry, deploymentId, logIn, signal);
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
    return status.revisionStatus === 'DEPLOYING'
      ? { result: 'requeue', afterMs: this.#rechecks.inProgress(deploymentId) }
      : { result: 'done', detail: 'ok' };
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
    const reads = await Promise.all(objects.map((object) => this.#read(refOf(object), signal)));
    const live = new Map<string, LiveKubeObject>();
    for (const [i, object] of objects.entries()) {
      const found = reads[i];
      if (found) live.set(entryId(entryOf(object)), found);
    }
    const status = await this.#reportRollout(
      { deploymentId, revisionId, namespace, objects, live, notes: statusNotes, justApplied: false },
      withDeploymentFields(log, { namespace }),
      signal,
    );
    return status.revisionStatus === 'DEPLOYING'
      ? { result: 'requeue', afterMs: this.#rechecks.inProgress(deploymentId) }
      : { result: 'done', detail: 'suspended' };
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
      workloads.some((step) => step.why === SPEC_CHANGED);
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
    await this.#o.events.record(
      main ?? { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: inventoryName(deploymentId) },
      {
        type: 'Normal',
        reason: 'AgentChangeApplied',
        note: `the agent's new render of the same revision is applied${held} (reconcile.agentChangeRate)`,
        action: 'Apply',
      },
    );
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
      await this.#rollout(deploymentId, revisionId, namespace, objects, live, signal),
      notes,
    );
    await this.#report.status(
      {
        deploymentId,
        revisionId,
        status,
        main: mainWorkload(live),
        annotated: { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: inventoryName(deploymentId) },
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
   * A deployment's pods may use what it renders and what the platform team made, never another
   * deployment's objects (its database volume, its generated Secrets, its inventory) nor the
   * agent's: each Secret, ConfigMap and claim the pod templates name, other than this render's
   * own, is read. One the agent manages for anyone else (its managed-by label and another or no
   * deployment id, whatever listener label it carries), or a ServiceAccount's token Secret, is
   * refused for good. One that does not exist yet is waited for (WaitingError), nothing written:
   * a pod that named it would take whatever is made under that name later — another deployment's
   * generated Secret or claim.
   *
   * The claims its StatefulSets will bind (templateClaims.ts) are read too: the controller binds
   * an existing claim by name, so a kept volume of a deleted deployment, or one the platform made,
   * would become this deployment's database. Such a claim is this deployment's by its
   * deployment-id label alone; any other is waited on, named with what the platform team can do
   * (delete it, or relabel it to hand it over), and the same revision goes on once it has.
   */
  async #checkReferences(
    deploymentId: string,
    objects: readonly KubeObject[],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    // This render's own objects: #readOwned already refused any of their names that is taken.
    const rendered = new Set(objects.map((object) => entryId(entryOf(object))));
    type Looked = { ref: ObjectRef & { namespace: string }; named: Reference[]; bound: TemplateClaim[] };
    const byId = new Map<string, Looked>();
    const look = (ref: Looked['ref']) => {
      const id = entryId(ref);
      const seen = byId.get(id) ?? { ref, named: [], bound: [] };
      byId.set(id, seen);
      return seen;
    };
    for (const reference of podReferences(objects)) {
      const { kind, namespace, name } = reference;
      const ref = { apiVersion: 'v1', kind, namespace, name };
      if (!rendered.has(entryId(ref))) look(ref).named.push(reference);
    }
    for (const claim of templateClaims(objects))
      look({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: claim.namespace,
        name: claim.name,
      }).bound.push(claim);
    // At once, each name once. A hit of the watch cache is one of this listener's objects; a miss
    // proves nothing (the platform's Secrets, another listener's objects are not watched): asked.
    const looked = [...byId.values()];
    const found = await Promise.all(looked.map(({ ref }) => this.#read(ref, signal)));
    const foreign: string[] = [];
    const missing: string[] = [];
    const taken: string[] = [];
    for (const [i, { ref, named, bound }] of looked.entries()) {
      const live = found[i];
      const what = `${ref.kind}/${ref.name}`;
      if (!live) {
        // Its own StatefulSets' claims are made when they run: checked like the rest once there.
        if (bound.length === 0)
          for (const { path } of named) missing.push(`${path} names ${what}, which does not exist yet`);
        continue;
      }
      const owner = foreignOwner(live, deploymentId, this.#listenerId());
      if (owner) for (const { path } of named) foreign.push(`${path} names ${what}, which ${owner}`);
      // A token Secret is the identity of a ServiceAccount, whatever the Secret patterns allow.
      else if (ref.kind === 'Secret' && live.type === SERVICE_ACCOUNT_TOKEN)
        for (const { path } of named)
          foreign.push(
            `${path} names ${what}, which holds a ServiceAccount token (${SERVICE_ACCOUNT_TOKEN})`,
          );
      const holder = live.metadata.labels[LABEL_DEPLOYMENT_ID];
      if (holder === deploymentId) continue;
      const whose = holder === undefined ? 'carries no deployment id' : `belongs to deployment ${holder}`;
      for (const { path } of bound)
        taken.push(
          `${path} would bind ${what}, which exists and ${whose}: delete it, or label it ` +
            `${LABEL_DEPLOYMENT_ID}=${deploymentId} to hand it to this deployment`,
        );
    }
    if (foreign.length > 0)
      throw new TerminalError(Reason.ForeignReference, [...foreign, ...taken, ...missing].join('; '));
    if (taken.length > 0)
      throw new WaitingError(
        Reason.ClaimTaken,
        deploymentId,
        `${[...taken, ...missing].join('; ')}; nothing is applied until then`,
      );
    if (missing.length > 0)
      throw new WaitingError(
        Reason.ReferenceMissing,
        deploymentId,
        `${missing.join('; ')}: nothing is applied until it exists`,
      );
  }

  /**
   * Refuses a host another route already serves (routedHosts.ts): this listener's routes and
   * everyone else's in the namespaces it serves, read from the API server (the watches see only
   * this listener's). The host's lock is held by the caller from here to the route's write.
   */
  async #checkHosts(
    deploymentId: string,
    namespace: string,
    hosts: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const namespaces = new Set([
      namespace,
      ...(this.#o.listener().compute_config?.k8s_namespaces ?? []).filter(
        (n) => this.#o.allowedNamespaces?.includes(n) ?? true,
      ),
    ]);
    const routes = (
      await Promise.all(
        [...namespaces].flatMap((n) =>
          ROUTE_KINDS.map((kind) => this.#o.kube.list(kind, { namespace: n, signal })),
        ),
      )
    ).flat();
    const taken: string[] = [];
    for (const host of hosts) {
      const holder = hostHolder(host, routes, deploymentId, this.#listenerId());
      if (holder) taken.push(`source_config.custom_url: host ${host} is already routed to ${holder}`);
    }
    if (taken.length > 0)
      throw new WaitingError(
        Reason.HostTaken,
        deploymentId,
        `${taken.join('; ')}: nothing is applied while another holds it`,
      );
  }

  /**
   * Reads every object before anything is written, and fails the deployment when a name is taken:
   * by another owner, or by another deployment of this listener whose generated names this one's
   * collide with (never adopted, never overwritten). Every taken name is listed. A miss where that
   * kind's watch in the namespace has listed is not asked (`unread`): its write is create-only
   * (ABSENT_RESOURCE_VERSION), and meets a same-named object only as a 409 (see #send).
   */
  async #readOwned(
    deploymentId: string,
    objects: readonly KubeObject[],
    signal: AbortSignal | undefined,
  ): Promise<{ found: Map<string, LiveKubeObject | undefined>; unread: Set<string> }> {
    const found = new Map<string, LiveKubeObject | undefined>();
    const unread = new Set<string>();
    const taken: string[] = [];
    const cache = this.#o.cache;
    // At once: mostly cache hits; misses the cache cannot vouch for are GETs that need not wait for each other.
    const reads = await Promise.all(
      objects.map((object) => {
        const ref = refOf(object);
        const held = cache?.get(ref);
        if (held || !cache?.isSynced(object.kind, ref.namespace ?? ''))
          return held ?? this.#read(ref, signal);
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
      const verdict = live && whyNotOurs(object, live, deploymentId);
      if (verdict) taken.push(verdict);
    }
    if (taken.length > 0) throw new TerminalError(Reason.ApplyRejected, taken.join('; '));
    return { found, unread };
  }

  /** What each object needs: nothing (found as desired), or a write and why. */
  #plan(
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
  async #dryRunChange(
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
  async #apply(
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
  async #firstApply(
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
      if (asTerminal(error) && !isNamespaceUnavailable(error) && !signal?.aborted)
        await this.#undo(made, deploymentId, namespace, log, signal);
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
      if (made.length > 0)
        log.info({ objects: made.map((o) => `${o.kind}/${o.metadata.name}`) }, 'first apply refused: undone');
    } catch (error) {
      log.warn(
        { err: error },
        'first apply refused: not all of it could be undone (its inventory keeps the rest)',
      );
    }
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

  /** Writes one step that #plan found missing or not as desired; returns the object live. */
  async #write(
    step: ApplyStep,
    deploymentId: string,
    signal: AbortSignal | undefined,
  ): Promise<LiveKubeObject> {
    const { object } = step;
    const { live, before, why } = await this.#send(step, deploymentId, false, signal);
    if (object.metadata.annotations[ANNOTATION_CREATE_ONLY] === 'true' || why === undefined) return live;
    this.#o.metrics.objectsApplied.inc({ kind: object.kind });
    // Our spec did not change, the object did: someone else edited a field we set. Say which
    // field on the object (its path, never a value); the recorder folds repeats into one Event.
    if (before && why !== SPEC_CHANGED) {
      await this.#o.events.record(live, {
        type: 'Warning',
        reason: 'DriftCorrected',
        note: `${why} was changed outside the agent and is restored; fields the agent does not set are kept`,
        action: 'Apply',
      });
    }
    return live;
  }

  /**
   * Sends one step's write, or its server-side dry run. An unread object (see #readOwned) that
   * exists after all — its create-only write answered 409, nothing written — is read and judged
   * as #readOwned judges what it finds: another owner's is refused and left as it is; ours (made
   * since the watch listed, not yet seen) is written as found.
   */
  async #send(
    step: ApplyStep,
    deploymentId: string,
    dryRun: boolean,
    signal: AbortSignal | undefined,
  ): Promise<{ live: LiveKubeObject; before: LiveKubeObject | undefined; why: string | undefined }> {
    const { object } = step;
    try {
      return {
        live: await this.#request(object, step.unread, dryRun, signal),
        before: step.before,
        why: step.why,
      };
    } catch (error) {
      if (!step.unread || !isConflict(error)) throw error;
    }
    const found = await this.#o.kube.get(refOf(object), { signal });
    // Made and removed by someone else while we created it: not a verdict, so tried again.
    if (!found)
      throw new Error(`${object.kind}/${object.metadata.name} appeared and went while being created`);
    const taken = whyNotOurs(object, found, deploymentId);
    if (taken) throw new TerminalError(Reason.ApplyRejected, taken);
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
    const live =
      object.metadata.annotations[ANNOTATION_CREATE_ONLY] === 'true'
        ? await this.#o.kube.create(dryRun ? object : withGeneratedKeys(object), { signal, dryRun })
        : await this.#o.kube.apply(unread ? createOnly(object) : object, { force: true, signal, dryRun });
    return dryRun ? live : this.#written(live);
  }

  /** From the watch cache when it holds the object; a miss is no proof of absence, so it asks. */
  async #read(ref: ObjectRef, signal?: AbortSignal): Promise<LiveKubeObject | undefined> {
    return this.#o.cache?.get(ref) ?? (await this.#o.kube.get(ref, { signal }));
  }

  #written(object: LiveKubeObject): LiveKubeObject {
    this.#o.cache?.written(object);
    return object;
  }

  /** Deletes one recorded object, only if it is still this deployment's (never a collider's victim). */
  async #prune(
    entry: InventoryEntry,
    deploymentId: string,
    log: Logger,
    signal?: AbortSignal,
  ): Promise<void> {
    const ref = {
      apiVersion: entry.apiVersion,
      kind: entry.kind,
      namespace: entry.namespace,
      name: entry.name,
    };
    const live = await this.#o.kube.get(ref, { signal });
    if (!live || !isPrunable(live, this.#listenerId(), deploymentId)) return;
    log.info({ object: `${entry.kind}/${entry.namespace}/${entry.name}` }, 'pruning');
    await this.#o.kube.delete(ref, {
      propagationPolicy: 'Background',
      preconditionUid: live.metadata.uid,
      signal,
    });
    this.#o.metrics.objectsPruned.inc();
  }

  /** Deletes what the deployment's inventories record (and its claims, unless kept), then forgets it. */
  async #deleteDeployment(deploymentId: string, log: Logger, signal: AbortSignal | undefined): Promise<void> {
    const placed = this.#o.inventories.get(deploymentId);
    for (const { namespace, inventory } of placed) {
      for (const entry of [...inventory.entries].reverse())
        await this.#prune(entry, deploymentId, log, signal);
      if (!this.#o.config.prune.keepDatabaseVolumes) {
        const claims = await this.#o.kube.list('PersistentVolumeClaim', {
          namespace,
          labelSelector: deploymentSelector(this.#listenerId(), deploymentId),
          signal,
        });
        for (const claim of claims) await this.#prune(entryOf(claim), deploymentId, log, signal);
      }
      await this.#o.inventories.remove(deploymentId, namespace, signal);
    }
    log.info({ namespaces: placed.map((p) => p.namespace) }, 'deployment deleted');
    this.#report.deleted(deploymentId);
    this.#o.desired.delete(deploymentId);
    this.#attempted.delete(deploymentId);
    this.#podProblems.forget(deploymentId);
    this.#agentChangeForget(deploymentId);
  }

  async #rollout(
    deploymentId: string,
    revisionId: string | undefined,
    namespace: string,
    objects: readonly KubeObject[],
    live: Map<string, LiveKubeObject>,
    signal?: AbortSignal,
  ): Promise<RolloutStatus> {
    const tracked: { component: string; object: LiveKubeObject | undefined }[] = [];
    for (const object of objects) {
      if (!ROLLOUT_KINDS.has(object.kind)) continue;
      // The status written since our apply: the watch has it, or a read does (without a cache).
      const ref = refOf(object);
      const fresh = this.#o.cache ? this.#o.cache.get(ref) : await this.#o.kube.get(ref, { signal });
      tracked.push({
        component: object.metadata.labels[LABEL_COMPONENT] ?? 'main',
        object: fresh ?? live.get(entryId(entryOf(object))),
      });
    }
    // Claims come only from a StatefulSet's volumeClaimTemplates (the database).
    const claims = objects.some((o) => o.kind === 'StatefulSet')
      ? await this.#ownedBy('PersistentVolumeClaim', namespace, deploymentId, signal)
      : [];
    for (const claim of claims)
      tracked.push({ component: claim.metadata.labels[LABEL_COMPONENT] ?? 'database', object: claim });
    const rollout = (podProblems: PodProblem[]) =>
      computeRollout({
        objects: tracked,
        podProblems,
        now: Date.now(),
        failureGraceMs: this.#o.config.failureGraceMs,
      });
    // Pods only explain a rollout that is not done: with every workload current (kstatus), a
    // pod's back-off cannot change the verdict.
    const withoutPods = rollout([]);
    if (withoutPods.revisionStatus === 'DEPLOYED') {
      this.#podProblems.forget(deploymentId);
      return withoutPods;
    }
    const pods = podsOfRevision(await this.#ownedBy('Pod', namespace, deploymentId, signal), revisionId);
    return rollout(this.#podProblems.observe(deploymentId, pods, Date.now()));
  }

  /**
   * The objects of a kind that carry this deployment's labels: from the watch cache once that
   * kind's watch in the namespace has listed (every status change of a rolling deployment wakes
   * it, and a listing per wake-up costs the API server most at scale), else listed.
   */
  async #ownedBy(
    kind: 'Pod' | 'PersistentVolumeClaim',
    namespace: string,
    deploymentId: string,
    signal: AbortSignal | undefined,
  ): Promise<readonly LiveKubeObject[]> {
    const cache = this.#o.cache;
    if (cache?.isSynced(kind, namespace)) return cache.byLabel(kind, namespace, deploymentId);
    return this.#o.kube.list(kind, {
      namespace,
      labelSelector: deploymentSelector(this.#listenerId(), deploymentId),
      signal,
    });
  }

  #listenerId(): string {
    return this.#o.listener().id;
  }
}

type PresentEntry = Extract<DesiredEntry, { kind: 'present' }>;

interface ApplyStep {
  readonly object: KubeObject;
  readonly id: string;
  readonly before: LiveKubeObject | undefined;
  /** Why it is written; undefined when found as desired. */
  readonly why: string | undefined;
  /** Missing from a synced watch, not asked: written create-only (see #readOwned). */
  readonly unread: boolean;
}

/** #readOwned's mark for a miss it did not ask about. */
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

/** The type of a Secret that holds a ServiceAccount's token: never a deployment's to name. */
const SERVICE_ACCOUNT_TOKEN = 'kubernetes.io/service-account-token';

/**
 * One log line names what an apply writes and why (a cold sync of many deployments would
 * otherwise log a line per object); whether anything is written.
 */
function logWrites(steps: readonly ApplyStep[], log: Logger): boolean {
  const writes = steps.filter((step) => step.why !== undefined);
  if (writes.length > 0) {
    log.info(
      { objects: writes.map(({ object, why }) => `${object.kind}/${object.metadata.name}: ${why}`) },
      'applying',
    );
  }
  return writes.length > 0;
}

/** The main workload among the live objects: where a deployment's Events go. */
function mainWorkload(live: ReadonlyMap<string, LiveKubeObject>): LiveKubeObject | undefined {
  return [...live.values()].find(
    (o) => o.kind === 'Deployment' && o.metadata.labels[LABEL_COMPONENT] === 'main',
  );
}

function revisionOf(entry: PresentEntry): string | undefined {
  return entry.target.revision?.id ?? entry.deployment.latest_revision_id ?? undefined;
}

/**
 * The failures no retry fixes: ours (render, ownership) and the API server's refusals of what we
 * sent (4xx other than conflicts and throttling), as their Status classifies them.
 */
function asTerminal(error: unknown): TerminalError | undefined {
  if (error instanceof TerminalError) return error;
  if (error instanceof KubeApiError && !isTransient(error))
    return new TerminalError(Reason.ApplyRejected, error.message, { cause: error });
  return undefined;
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

const SPEC_CHANGED = 'spec changed';

/**
 * Why an object must be written, or undefined when it is as desired: 'missing', 'spec changed'
 * (our render of it changed), or the path of the first field of ours that someone else changed.
 * A create-only object is written only when missing. A slim object's body was found to hold our
 * fields and is unchanged since (objects/body.ts): the rest of it is compared.
 */
function whyWrite(
  object: KubeObject,
  live: LiveKubeObject | undefined,
  isSlim: (live: LiveKubeObject) => boolean,
): string | undefined {
  if (!live) return 'missing';
  if (object.metadata.annotations[ANNOTATION_CREATE_ONLY] === 'true') return undefined;
  if (live.metadata.annotations[ANNOTATION_SPEC_HASH] !== object.metadata.annotations[ANNOTATION_SPEC_HASH])
    return SPEC_CHANGED;
  return driftPath(isSlim(live) ? withoutBody(object) : object, live);
}

/** Fills the generated keys of a create-only Secret with random values; the values stay in the cluster. */
function withGeneratedKeys(object: KubeObject): KubeObject {
  const keys = (object.metadata.annotations[ANNOTATION_GENERATED_KEYS] ?? '').split(',').filter(Boolean);
  const stringData = { ...secretData(object).stringData };
  for (const key of keys) stringData[key] = randomBytes(24).toString('base64url');
  return { ...object, stringData };
}
