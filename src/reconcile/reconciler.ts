// reconcile(deploymentId): level-triggered. Reads the desired state of one deployment, renders,
// applies what drifted, records the inventory, prunes, computes the rollout status and reports.
// Nothing here depends on which event woke it.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Listener } from '../controlplane/schemas/index.ts';
import {
  type EventRecorder,
  isAborted,
  isNamespaceUnavailable,
  isTransient,
  KubeApiError,
  type KubeClient,
  type LiveKubeObject,
  type ObjectRef,
  refOf,
} from '../kube/index.ts';
import type { ObjectCache } from '../kube/objectCache.ts';
import {
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_GENERATED_KEYS,
  ANNOTATION_SPEC_HASH,
  ANNOTATION_STATUS,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
} from '../objects/ownership.ts';
import { type KubeObject, type RenderConfig, renderDeployment } from '../render/index.ts';
import { deploymentLogger, withDeploymentFields } from '../report/deploymentLogger.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import { PodProblemClock } from '../report/podProblems.ts';
import { computeRollout, type PodProblem, Reason, type RolloutStatus } from '../report/rolloutStatus.ts';
import { nextStatusAnnotation } from '../report/statusAnnotation.ts';
import type { StatusReporter } from '../report/statusReporter.ts';
import type { DesiredState } from './desiredState.ts';
import { driftPath } from './drift.ts';
import {
  entriesOf,
  entryId,
  type Inventory,
  type InventoryEntry,
  sameInventory,
  staleEntries,
} from './inventory.ts';
import { type InventoryStore, inventoryName } from './inventoryStore.ts';
import type { ReconcileConfig } from './reconcileConfig.ts';

/** What the reconciler asks of the Kubernetes client (narrow, so a test can inject faults). */
export type ReconcilerKube = Pick<KubeClient, 'get' | 'list' | 'apply' | 'create' | 'delete' | 'mergePatch'>;

export interface ReconcilerOptions {
  readonly kube: ReconcilerKube;
  readonly desired: DesiredState;
  readonly inventories: InventoryStore;
  readonly reporter: StatusReporter;
  readonly events: Pick<EventRecorder, 'record'>;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  readonly renderConfig: RenderConfig;
  readonly config: ReconcileConfig;
  readonly listener: () => Listener;
  readonly allowedNamespaces: readonly string[] | undefined;
  /**
   * The owned objects as the watches see them: reads that hit need no request. Absent (`diff`,
   * tests), every read is a GET.
   */
  readonly cache?: Pick<ObjectCache, 'get' | 'written'>;
}

export type ReconcileOutcome =
  | { readonly result: 'done' }
  | { readonly result: 'requeue'; readonly afterMs: number }
  /** Worth another try after a backoff (network, API server 5xx, conflicts). */
  | { readonly result: 'retry'; readonly error: unknown }
  /** Failed and reported; not retried until the deployment changes (controller-runtime's TerminalError). */
  | { readonly result: 'terminal'; readonly error: Error }
  /** Cut off by its signal (a lost lease, a shutdown): nothing reported, nothing recorded. */
  | { readonly result: 'aborted' };

/** A failure that another attempt would not fix: reported, not retried until the input changes. */
class TerminalFailure extends Error {
  override readonly name = 'TerminalFailure';
  readonly reason: Reason;
  constructor(reason: Reason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

const STATUS_KINDS = new Set(['Deployment', 'StatefulSet', 'HorizontalPodAutoscaler']);

export class Reconciler {
  readonly #o: ReconcilerOptions;
  readonly #log: Logger;
  /** First time each pod was seen waiting with a back-off reason, for the grace period. */
  readonly #podProblems = new PodProblemClock();
  /**
   * Fingerprint of the input whose attempt settled (succeeded or failed for good), for a settled
   * (failed) revision: not retried forever. An attempt cut short by a transient error is not one.
   * `applied`: that attempt applied every object (its rollout failed, not its apply), so drift is
   * still repaired.
   */
  readonly #attempted = new Map<string, { fingerprint: string; applied: boolean }>();
  /** Last rollout status per deployment, for the by-status gauge. */
  readonly #statuses = new Map<string, string>();
  /** deploymentId/revisionId pairs that reached DEPLOYED. */
  readonly #deployed = new Set<string>();
  /** The revision each DEPLOYING deployment is rolling out, to keep its start across messages. */
  readonly #deployingRevision = new Map<string, string>();

  constructor(options: ReconcilerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'reconciler' });
    // A new leader session starts from what it observes itself.
    options.metrics.deployingSince.clear();
  }

  /**
   * The namespaces served changed: a revision that failed for want of its namespace may succeed
   * now, so every settled attempt is tried once more (the caller requeues every deployment).
   */
  namespacesChanged(): void {
    this.#attempted.clear();
  }

  async reconcile(deploymentId: string, signal?: AbortSignal): Promise<ReconcileOutcome> {
    const started = performance.now();
    // Every line about this deployment carries its id, and its revision and namespace once known.
    let log = deploymentLogger(this.#log, { deploymentId });
    const entry = this.#o.desired.get(deploymentId);
    if (entry?.kind === 'present') {
      log = withDeploymentFields(log, {
        revisionId: entry.target.revision?.id ?? entry.deployment.latest_revision_id ?? undefined,
        namespace: entry.deployment.source_config.listener_config?.k8s_namespace ?? undefined,
      });
    } else {
      const placed = this.#o.inventories.get(deploymentId);
      if (placed.length === 1) log = withDeploymentFields(log, { namespace: placed[0]?.namespace });
    }
    try {
      if (!entry || entry.kind === 'gone') {
        if (entry) await this.#deleteDeployment(deploymentId, signal, log);
        return this.#done(started, 'deleted');
      }
      if (entry.kind === 'invalid') {
        await this.#report(
          deploymentId,
          undefined,
          {
            revisionStatus: 'DEPLOY_FAILED',
            deploymentStatus: undefined,
            reason: Reason.RenderInvalid,
            message: entry.message,
          },
          undefined,
          log,
        );
        this.#done(started, 'invalid');
        return { result: 'terminal', error: new Error(entry.message) };
      }
      const { deployment, target } = entry;
      if (deployment.status === 'AWAITING_DELETE') {
        await this.#deleteDeployment(deploymentId, signal, log);
        return this.#done(started, 'deleted');
      }
      const revisionId = target.revision?.id ?? deployment.latest_revision_id ?? undefined;
      const attempted = this.#attempted.get(deploymentId);
      // A failed revision is not rolled out or reported again; if its objects were applied, a hand
      // edit of them is still undone (as Argo CD's self-heal and Flux do, whatever the health).
      const repairOnly = target.settled !== undefined && attempted?.fingerprint === entry.fingerprint;
      if (repairOnly && !attempted.applied) return this.#done(started, 'settled');

      // 1. Render: pure; a bad deployment fails alone, with every problem named.
      const rendered = renderDeployment(
        {
          deployment,
          revision: target.revision,
          listener: this.#o.listener(),
          allowedNamespaces: this.#o.allowedNamespaces,
        },
        this.#o.renderConfig,
      );
      if (!rendered.ok) throw new TerminalFailure(Reason.RenderInvalid, rendered.error.message);
      const { namespace, objects, specHash } = rendered.value;
      log = withDeploymentFields(log, { namespace });

      // 2. Record the union of old and new entries first, so that no applied object is ever unrecorded.
      const previous = this.#o.inventories.get(deploymentId);
      const previousEntries = previous.flatMap((p) => p.inventory.entries);
      const next: Inventory = { deploymentId, entries: entriesOf(objects), specHash, revisionId };
      const union = unionEntries(previousEntries, next.entries);
      const here = previous.find((p) => p.namespace === namespace);
      if (!here || !sameEntries(here.inventory.entries, union)) {
        await this.#o.inventories.write(
          namespace,
          { ...next, entries: union, specHash: here?.inventory.specHash ?? '' },
          signal,
        );
      }

      // 3. Apply what is missing or drifted; nothing is written when nothing changed.
      const live = new Map<string, LiveKubeObject>();
      for (const object of objects)
        live.set(entryId(entryOf(object)), await this.#ensure(object, log, signal));
      if (repairOnly) return this.#done(started, 'settled');

      // 4. Prune what left the desired set (inventory diff; only objects this listener owns).
      for (const stale of staleEntries(previousEntries, next.entries)) await this.#prune(stale, log, signal);
      for (const placed of previous) {
        if (placed.namespace !== namespace)
          await this.#o.inventories.remove(deploymentId, placed.namespace, signal);
      }
      const current = this.#o.inventories.get(deploymentId).find((p) => p.namespace === namespace)?.inventory;
      if (!sameInventory(current, next)) await this.#o.inventories.write(namespace, next, signal);

      // 5. Rollout status from the live objects and their pods.
      const status = await this.#rollout(deploymentId, namespace, objects, live, signal);
      const main = [...live.values()].find(
        (o) => o.kind === 'Deployment' && o.metadata.labels[LABEL_COMPONENT] === 'main',
      );
      await this.#report(deploymentId, revisionId, status, main, log);
      this.#attempted.set(deploymentId, { fingerprint: entry.fingerprint, applied: true });
      return status.revisionStatus === 'DEPLOYING'
        ? { result: 'requeue', afterMs: this.#o.config.rolloutRecheckMs }
        : this.#done(started, 'ok');
    } catch (error) {
      // Leadership lost or shutting down: whatever failed, it is not this deployment's failure,
      // and the next leader reconciles it again.
      if (isAborted(error) || signal?.aborted) {
        log.info('reconcile aborted');
        return { result: 'aborted' };
      }
      if (error instanceof TerminalFailure || (error instanceof KubeApiError && !isTransient(error))) {
        const reason = error instanceof TerminalFailure ? error.reason : Reason.ApplyRejected;
        log.warn({ reason, err: error }, 'deployment failed');
        this.#o.metrics.reconcileErrors.inc({ reason });
        const revisionId =
          entry?.kind === 'present'
            ? (entry.target.revision?.id ?? entry.deployment.latest_revision_id ?? undefined)
            : undefined;
        await this.#report(
          deploymentId,
          revisionId,
          { revisionStatus: 'DEPLOY_FAILED', deploymentStatus: undefined, reason, message: error.message },
          undefined,
          log,
        );
        if (isNamespaceUnavailable(error)) {
          // The namespace may be created (or finish terminating) later: keep trying, with backoff.
          this.#attempted.delete(deploymentId);
          return { result: 'retry', error };
        }
        if (entry?.kind === 'present')
          this.#attempted.set(deploymentId, { fingerprint: entry.fingerprint, applied: false });
        this.#done(started, 'failed');
        return { result: 'terminal', error };
      }
      // Not settled: the retry does the work again, even for a revision that already failed.
      this.#attempted.delete(deploymentId);
      this.#o.metrics.reconcileErrors.inc({ reason: 'transient' });
      this.#o.metrics.reconcileDuration.observe({ result: 'error' }, (performance.now() - started) / 1000);
      return { result: 'retry', error };
    }
  }

  #done(started: number, result: string): ReconcileOutcome {
    this.#o.metrics.reconcileDuration.observe({ result }, (performance.now() - started) / 1000);
    return { result: 'done' };
  }

  /** Makes one object as desired; returns it live. Writes only when missing or drifted. */
  async #ensure(object: KubeObject, log: Logger, signal?: AbortSignal): Promise<LiveKubeObject> {
    const ref = refOf(object);
    const live = await this.#read(ref, signal);
    if (live && live.metadata.labels[LABEL_LISTENER_ID] !== object.metadata.labels[LABEL_LISTENER_ID]) {
      // Never adopt: an object of the same name that another owner made stays theirs.
      throw new TerminalFailure(
        Reason.ApplyRejected,
        `${object.kind}/${ref.namespace}/${ref.name} exists and is not managed by this listener`,
      );
    }
    if (object.metadata.annotations[ANNOTATION_CREATE_ONLY] === 'true') {
      return live ?? this.#written(await this.#o.kube.create(withGeneratedKeys(object), { signal }));
    }
    const drift = live ? driftPath(object, live) : 'missing';
    const sameSpec =
      live?.metadata.annotations[ANNOTATION_SPEC_HASH] === object.metadata.annotations[ANNOTATION_SPEC_HASH];
    if (live && sameSpec && !drift) return live;
    log.info(
      { object: `${object.kind}/${ref.namespace}/${ref.name}`, drift: drift ?? 'spec changed' },
      'applying',
    );
    // Forced: the fields we set are ours (a hand edit of one is drift we undo); fields we do not
    // set stay with their managers, since an apply only claims what it contains.
    const applied = this.#written(await this.#o.kube.apply(object, { force: true, signal }));
    this.#o.metrics.objectsApplied.inc({ kind: object.kind });
    // Our spec did not change, the object did: someone else edited a field we set. Say which
    // field on the object (its path, never a value); the recorder folds repeats into one Event.
    if (live && sameSpec && drift) {
      await this.#o.events.record(applied, {
        type: 'Warning',
        reason: 'DriftCorrected',
        note: `${drift} was changed outside the agent and is restored; fields the agent does not set are kept`,
        action: 'Apply',
      });
    }
    return applied;
  }

  /** From the watch cache when it holds the object; a miss is no proof of absence, so it asks. */
  async #read(ref: ObjectRef, signal?: AbortSignal): Promise<LiveKubeObject | undefined> {
    return this.#o.cache?.get(ref) ?? (await this.#o.kube.get(ref, { signal }));
  }

  #written(object: LiveKubeObject): LiveKubeObject {
    this.#o.cache?.written(object);
    return object;
  }

  async #prune(entry: InventoryEntry, log: Logger, signal?: AbortSignal): Promise<void> {
    const ref = {
      apiVersion: entry.apiVersion,
      kind: entry.kind,
      namespace: entry.namespace,
      name: entry.name,
    };
    const live = await this.#o.kube.get(ref, { signal });
    if (!live || live.metadata.labels[LABEL_LISTENER_ID] !== this.#listenerId()) return;
    log.info({ object: `${entry.kind}/${entry.namespace}/${entry.name}` }, 'pruning');
    await this.#o.kube.delete(ref, {
      propagationPolicy: 'Background',
      preconditionUid: live.metadata.uid,
      signal,
    });
    this.#o.metrics.objectsPruned.inc();
  }

  async #deleteDeployment(deploymentId: string, signal: AbortSignal | undefined, log: Logger): Promise<void> {
    const placed = this.#o.inventories.get(deploymentId);
    for (const { namespace, inventory } of placed) {
      for (const entry of [...inventory.entries].reverse()) await this.#prune(entry, log, signal);
      if (!this.#o.config.prune.keepDatabaseVolumes) {
        const claims = await this.#o.kube.list('PersistentVolumeClaim', {
          namespace,
          labelSelector: `${LABEL_LISTENER_ID}=${this.#listenerId()},${LABEL_DEPLOYMENT_ID}=${deploymentId}`,
          signal,
        });
        for (const claim of claims) await this.#prune(entryOf(claim), log, signal);
      }
      await this.#o.inventories.remove(deploymentId, namespace, signal);
    }
    log.info({ namespaces: placed.map((p) => p.namespace) }, 'deployment deleted');
    this.#o.reporter.record({ deployment_id: deploymentId, deleted: true, message: 'resources removed' });
    this.#o.desired.delete(deploymentId);
    this.#attempted.delete(deploymentId);
    this.#statuses.delete(deploymentId);
    this.#podProblems.forget(deploymentId);
    this.#trackDeploying(deploymentId, undefined, undefined);
    for (const key of this.#deployed) if (key.startsWith(`${deploymentId}/`)) this.#deployed.delete(key);
    this.#updateStatusGauge();
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

  async #rollout(
    deploymentId: string,
    namespace: string,
    objects: readonly KubeObject[],
    live: Map<string, LiveKubeObject>,
    signal?: AbortSignal,
  ): Promise<RolloutStatus> {
    const tracked: { component: string; object: LiveKubeObject | undefined }[] = [];
    for (const object of objects) {
      if (!STATUS_KINDS.has(object.kind)) continue;
      // The status written since our apply: the watch has it, or a read does (without a cache).
      const ref = refOf(object);
      const fresh = this.#o.cache ? this.#o.cache.get(ref) : await this.#o.kube.get(ref, { signal });
      tracked.push({
        component: object.metadata.labels[LABEL_COMPONENT] ?? 'main',
        object: fresh ?? live.get(entryId(entryOf(object))),
      });
    }
    // Claims come only from a StatefulSet's volumeClaimTemplates (the database).
    if (objects.some((o) => o.kind === 'StatefulSet')) {
      const claims = await this.#o.kube.list('PersistentVolumeClaim', {
        namespace,
        labelSelector: `${LABEL_LISTENER_ID}=${this.#listenerId()},${LABEL_DEPLOYMENT_ID}=${deploymentId}`,
        signal,
      });
      for (const claim of claims)
        tracked.push({ component: claim.metadata.labels[LABEL_COMPONENT] ?? 'database', object: claim });
    }
    const rollout = (podProblems: PodProblem[]) =>
      computeRollout({
        objects: tracked,
        podProblems,
        now: Date.now(),
        failureGraceMs: this.#o.config.failureGraceMs,
      });
    // Pods only explain a rollout that is not done: with every workload current (kstatus), a
    // pod's back-off cannot change the verdict, and the listing is the costliest read here.
    const withoutPods = rollout([]);
    if (withoutPods.revisionStatus === 'DEPLOYED') {
      this.#podProblems.forget(deploymentId);
      return withoutPods;
    }
    const pods = await this.#o.kube.list('Pod', {
      namespace,
      labelSelector: `${LABEL_DEPLOYMENT_ID}=${deploymentId}`,
      signal,
    });
    return rollout(this.#podProblems.observe(deploymentId, pods, Date.now()));
  }

  async #report(
    deploymentId: string,
    revisionId: string | undefined,
    status: RolloutStatus,
    main: LiveKubeObject | undefined,
    log: Logger,
  ): Promise<void> {
    // A revision once DEPLOYED stays so through scaling (an HPA adding replicas); only a
    // failure or a new revision changes what is reported.
    const deployedKey = `${deploymentId}/${revisionId ?? ''}`;
    if (status.revisionStatus === 'DEPLOYED') this.#deployed.add(deployedKey);
    else if (status.revisionStatus === 'DEPLOYING' && this.#deployed.has(deployedKey)) return;
    const changed = this.#o.reporter.record({
      deployment_id: deploymentId,
      revision_id: revisionId ?? null,
      revision_status: status.revisionStatus,
      deployment_status: status.deploymentStatus ?? null,
      message: status.message,
    });
    if (!changed) return;
    this.#statuses.set(deploymentId, status.revisionStatus);
    this.#updateStatusGauge();
    this.#trackDeploying(deploymentId, revisionId, status.revisionStatus);
    log.info(
      {
        status: status.revisionStatus,
        reason: status.reason,
        message: status.message,
      },
      'rollout status',
    );
    if (!main) return;
    await this.#o.events.record(main, {
      type: status.revisionStatus === 'DEPLOY_FAILED' ? 'Warning' : 'Normal',
      reason:
        status.revisionStatus === 'DEPLOY_FAILED'
          ? 'RolloutFailed'
          : status.revisionStatus === 'DEPLOYED'
            ? 'RolloutComplete'
            : 'RollingOut',
      note: `revision ${revisionId ?? 'unknown'}: ${status.message}`,
    });
    // On the inventory ConfigMap, not the Deployment: the API server bumps a Deployment's
    // generation on any annotation change, which would restart the very rollout we report on.
    const inventory = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: main.metadata.namespace,
      name: inventoryName(deploymentId),
    };
    // `since` (the last transition, for `k8s-listener status`) survives restarts: it is kept from
    // the previous annotation unless the revision or its status changed.
    const previous = await this.#read(inventory).catch(() => undefined);
    const annotation = nextStatusAnnotation(
      previous?.metadata.annotations[ANNOTATION_STATUS],
      { revisionId, status: status.revisionStatus, reason: status.reason, message: status.message },
      new Date(),
    );
    await this.#o.kube
      .mergePatch(inventory, { metadata: { annotations: { [ANNOTATION_STATUS]: annotation } } })
      .then((patched) => this.#written(patched))
      .catch((error: unknown) => log.warn({ err: error }, 'could not write the status annotation'));
  }

  #listenerId(): string {
    return this.#o.listener().id;
  }
}

function entryOf(object: KubeObject): InventoryEntry {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    namespace: object.metadata.namespace ?? '',
    name: object.metadata.name,
  };
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

/** Fills the generated keys of a create-only Secret with random values; the values stay in the cluster. */
function withGeneratedKeys(object: KubeObject): KubeObject {
  const keys = (object.metadata.annotations[ANNOTATION_GENERATED_KEYS] ?? '').split(',').filter(Boolean);
  const stringData = { ...((object.stringData as Record<string, string> | undefined) ?? {}) };
  for (const key of keys) stringData[key] = randomBytes(24).toString('base64url');
  return { ...object, stringData };
}
