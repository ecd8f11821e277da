// One term of leadership: the poll loop, the queue workers, the watches on owned objects and the
// periodic resync, from the moment the lease is won until it is lost or the agent stops. Nothing of
// a session outlives it: the next term (here or in another replica) starts from what it observes.
import type { Logger } from 'pino';
import type { ControlPlaneClient } from '../controlplane/client.ts';
import type { Listener } from '../controlplane/schemas/index.ts';
import { EventRecorder, type KubeClient, ListGate, OwnedObjectWatcher } from '../kube/index.ts';
import { ObjectCache } from '../kube/objectCache.ts';
import {
  isAgentAnnotation,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  SHARED_ANNOTATIONS,
} from '../objects/ownership.ts';
import { AgentChangeGate } from '../reconcile/agentChangeGate.ts';
import { DesiredState } from '../reconcile/desiredState.ts';
import { InventoryStore, inventoryName } from '../reconcile/inventoryStore.ts';
import { managedNamespaces } from '../reconcile/managedNamespaces.ts';
import { Poller } from '../reconcile/poller.ts';
import type { ReconcileConfig } from '../reconcile/reconcileConfig.ts';
import { Reconciler } from '../reconcile/reconciler.ts';
import { reconcileWorker } from '../reconcile/reconcileWorker.ts';
import {
  changedSuspensions,
  describeEntry,
  describeSuspension,
  NO_SUSPENSIONS,
  observedAnnotation,
  readSuspensions,
  SUSPENSIONS_CONFIGMAP,
  type Suspensions,
  suspensionOf,
} from '../reconcile/suspensions.ts';
import { OBSERVED_KINDS, OWNED_LISTED_KINDS, watchedKinds } from '../reconcile/watchedKinds.ts';
import { WorkQueue } from '../reconcile/workQueue.ts';
import type { RenderConfig } from '../render/index.ts';
import { deploymentLogger } from '../report/deploymentLogger.ts';
import { type AgentMetrics, CONTROLLER_NAME, workQueueMetrics } from '../report/metrics.ts';
import { podSummary } from '../report/podProblems.ts';
import { DETAILED_CONDITIONS, STATUS_READ_KINDS } from '../report/rolloutStatus.ts';
import { StatusReporter } from '../report/statusReporter.ts';
import { sleep } from '../sleep.ts';
import { loadDigestKey } from './digestKey.ts';
import { type Registration, recordVersion } from './registration.ts';

/** How long a status change waits for the rest of its burst before it wakes its deployment. */
const STATUS_SETTLE_MS = 1_000;

export interface LeaderSessionOptions {
  readonly kube: KubeClient;
  readonly controlPlane: ControlPlaneClient;
  readonly registration: Registration;
  /** The agent's own allow-list; undefined lets the listener's namespaces stand. */
  readonly allowedNamespaces: readonly string[] | undefined;
  /** Never managed (see managedNamespaces). */
  readonly agentNamespace: string;
  readonly identity: string;
  readonly render: RenderConfig;
  readonly reconcile: ReconcileConfig;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
}

/** The parts of one session, built when it starts. */
interface Parts {
  readonly desired: DesiredState;
  readonly inventories: InventoryStore;
  readonly reporter: StatusReporter;
  readonly queue: WorkQueue;
  readonly cache: ObjectCache;
  readonly reconciler: Reconciler;
  readonly poller: Poller;
  readonly events: EventRecorder;
  /**
   * The watchers of each namespace (owned objects; pods): a namespace added to the listener gets
   * its own at once.
   */
  readonly watchers: Map<string, readonly OwnedObjectWatcher[]>;
  /** Every watcher's listings, two at a time (kube/listGate.ts). */
  readonly listGate: ListGate;
}

/** Listings of the watches at once: two keep both API-server cores busy (bench:sync). */
const LISTINGS_AT_ONCE = 2;

/**
 * What the watchers remember of each object for a missed deletion, and a pod summary keeps: the
 * labels that say whose it is (the deployment to wake, the cache's index, the component).
 */
const REMEMBERED_LABELS = [LABEL_LISTENER_ID, LABEL_DEPLOYMENT_ID, LABEL_COMPONENT];

export class LeaderSession {
  readonly #o: LeaderSessionOptions;
  readonly #log: Logger;
  /** The listener as last read, its namespaces cut to those this session serves. */
  #listener: Listener;
  /** Namespaces whose inventories are loaded and whose objects are watched. */
  #served: string[] = [];
  #lastLoopAt = Date.now();
  /** What operators suspended, as last read (before the first reconcile, then at each poll). */
  #suspensions: Suspensions = NO_SUSPENSIONS;

  constructor(options: LeaderSessionOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'agent', identity: options.identity });
    this.#listener = options.registration.listener;
  }

  /** When the poll loop last turned (for the liveness probe). */
  get lastLoopAt(): number {
    return this.#lastLoopAt;
  }

  /** The namespaces served: watched, with their inventories loaded. */
  get namespaces(): readonly string[] {
    return this.#served;
  }

  /**
   * Runs until `leadership` or `stop` aborts. After `stop` (a graceful shutdown) in-flight work
   * finishes within the drain bound and pending reports are sent; after a lost `leadership`
   * nothing waits and nothing more is sent: another replica may already be writing.
   */
  async run(leadership: AbortSignal, stop: AbortSignal): Promise<void> {
    const signal = AbortSignal.any([leadership, stop]);
    if (signal.aborted) return;
    const { metrics, reconcile: config } = this.#o;
    // Before anything is rendered: digests keyed as every replica and command keys them.
    const digestKey = await this.#loadDigestKey(signal);
    if (!digestKey) return;
    const parts = this.#build(digestKey);
    let pollTimer: NodeJS.Timeout | undefined;
    let resyncTimer: NodeJS.Timeout | undefined;
    let polling: Promise<void> = Promise.resolve();
    metrics.leader.set(1);
    try {
      // What is stored after the write, not what was read before it: an edit made meanwhile is followed.
      this.#listener = await recordVersion({
        client: this.#o.controlPlane,
        listener: this.#listener,
        logger: this.#log,
        metrics,
        events: parts.events,
        // Listener-wide Events go on the agent's own ConfigMap, as a suspension of the listener's does.
        eventSubject: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          namespace: this.#o.agentNamespace,
          name: SUSPENSIONS_CONFIGMAP,
        },
        signal,
      });
      // Before the first poll: which deployments have objects here (for deletions and the guard).
      if (!(await this.#loadInventories(parts.inventories, signal))) return;
      // Before the first reconcile too: a suspended deployment is not applied after a restart.
      if (!(await this.#loadSuspensions(signal))) return;
      this.#countSuspended(parts);
      // The workers get the lease's signal only: a graceful stop lets in-flight work finish.
      parts.queue.start(
        reconcileWorker({
          reconciler: parts.reconciler,
          queue: parts.queue,
          metrics,
          logger: this.#log,
          concurrency: config.concurrency,
          signal: leadership,
        }),
      );
      for (const namespace of this.#served) this.#watch(parts, namespace);
      resyncTimer = setInterval(() => {
        for (const id of parts.desired.ids()) parts.queue.add(id, 'low');
      }, config.resyncIntervalMs);
      resyncTimer.unref();
      const schedulePoll = (delayMs: number) => {
        if (signal.aborted) return;
        pollTimer = setTimeout(() => {
          polling = this.#pollOnce(parts, signal).finally(() => {
            this.#lastLoopAt = Date.now();
            metrics.queueDepth.set(parts.queue.length);
            schedulePoll(config.pollIntervalMs * (1 + (Math.random() * 2 - 1) * config.pollJitter));
          });
        }, delayMs);
      };
      schedulePoll(0);
      this.#log.info({ namespaces: this.#served }, 'leading: polling and reconciling');
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      clearTimeout(pollTimer);
      clearInterval(resyncTimer);
      const lost = leadership.aborted;
      // The poll takes the signal: it ends at once.
      await polling;
      const drainMs = lost ? 0 : config.shutdownDrainMs;
      const drained = await parts.queue.shutDown(drainMs);
      if (!drained && !lost) this.#log.warn({ drainMs }, 'in-flight work did not finish in time');
      await Promise.all([...parts.watchers.values()].flat().map((watcher) => watcher.stop()));
      // After a lost lease the next leader reports; this session sends nothing more.
      if (!lost) await parts.reporter.flush();
      metrics.leader.set(0);
    }
  }

  #build(digestKey: Uint8Array): Parts {
    const { kube, metrics, reconcile: config } = this.#o;
    const log = this.#log;
    const listenerId = this.#listener.id;
    const desired = new DesiredState();
    const inventories = new InventoryStore(kube, listenerId, (rejected) => {
      metrics.inventoriesRejected.inc();
      log.warn(rejected, 'inventory ignored: it does not hold together, so nothing is deleted by it');
    });
    const reporter = new StatusReporter({
      sink: this.#o.controlPlane,
      listenerId,
      logger: this.#o.logger,
      metrics,
    });
    const events = new EventRecorder({ client: kube, logger: this.#o.logger, identity: this.#o.identity });
    const queue = new WorkQueue({
      concurrency: config.concurrency,
      backoffBaseMs: config.backoffBaseMs,
      backoffMaxMs: config.backoffMaxMs,
      maxKeys: config.maxQueuedKeys,
      logger: this.#o.logger,
      onDropped: () => metrics.queueDropped.inc(),
      metrics: workQueueMetrics(metrics, CONTROLLER_NAME),
      keyLogger: (id) => deploymentLogger(log, { deploymentId: id }),
    });
    // Indexed by deployment: the kinds the reconciler lists a deployment's objects of.
    const cache = new ObjectCache({
      indexLabel: LABEL_DEPLOYMENT_ID,
      indexedKinds: OWNED_LISTED_KINDS,
      statusKinds: STATUS_READ_KINDS,
      detailedConditions: DETAILED_CONDITIONS,
      // The inventories: their store holds what they record; the cache, who owns them.
      bodylessKinds: ['ConfigMap'],
      keptAnnotations: isAgentAnnotation,
      sharedAnnotations: SHARED_ANNOTATIONS,
    });
    const reconciler = new Reconciler({
      kube,
      cache,
      desired,
      inventories,
      reporter,
      events,
      metrics,
      logger: this.#o.logger,
      renderConfig: this.#o.render,
      config,
      // The latest listener read: a namespace taken off it stops being a valid target at once.
      listener: () => this.#listener,
      allowedNamespaces: this.#o.allowedNamespaces,
      digestKey,
      suspension: (id) => suspensionOf(this.#suspensions, id),
      // Per session: a new leader starts with a new window (it cannot know the last one's).
      agentChanges: new AgentChangeGate({
        rate: config.agentChangeRate,
        windowMs: config.agentChangeWindowMs,
      }),
    });
    const poller = new Poller({
      client: this.#o.controlPlane,
      listenerId,
      desired,
      knownIds: () => inventories.deploymentIds(),
      enqueue: (id, priority) => queue.add(id, priority),
      reporter,
      metrics,
      logger: this.#o.logger,
      config,
    });
    return {
      desired,
      inventories,
      reporter,
      queue,
      cache,
      reconciler,
      poller,
      events,
      watchers: new Map(),
      listGate: new ListGate(LISTINGS_AT_ONCE),
    };
  }

  /** The digest key, made on the first start; retried (a permission is the usual cause, logged). */
  async #loadDigestKey(signal: AbortSignal): Promise<Uint8Array | undefined> {
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        const key = await loadDigestKey(this.#o.kube, this.#o.agentNamespace, { create: true, signal });
        if (key) return key;
      } catch (error) {
        if (signal.aborted) return undefined;
        this.#log.error({ err: error, attempt }, 'reading the digest key failed; retrying');
      }
      await sleep(Math.min(30_000, 500 * 2 ** attempt), signal).catch(() => undefined);
    }
    return undefined;
  }

  #readSuspensions(signal: AbortSignal): Promise<Suspensions> {
    return this.#o.kube
      .get(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          namespace: this.#o.agentNamespace,
          name: SUSPENSIONS_CONFIGMAP,
        },
        { signal },
      )
      .then((configMap) => readSuspensions(configMap, this.#listener.id));
  }

  /** The suspensions before the first reconcile, retrying; false when the signal ended it. */
  async #loadSuspensions(signal: AbortSignal): Promise<boolean> {
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        this.#suspensions = await this.#readSuspensions(signal);
        if (this.#suspensions.listener)
          this.#log.warn({ suspension: this.#suspensions.listener }, 'the whole listener is suspended');
        return true;
      } catch (error) {
        if (signal.aborted) return false;
        this.#log.warn({ err: error, attempt }, 'reading the suspensions failed; retrying');
        await sleep(Math.min(30_000, 500 * 2 ** attempt), signal).catch(() => undefined);
      }
    }
    return false;
  }

  #countSuspended(parts: Parts): void {
    const ids = new Set([...parts.desired.ids(), ...parts.inventories.deploymentIds()]);
    const suspended = [...ids].filter((id) => suspensionOf(this.#suspensions, id) !== undefined).length;
    this.#o.metrics.suspendedDeployments.set(suspended);
    this.#o.metrics.listenerSuspended.set(this.#suspensions.listener ? 1 : 0);
  }

  /**
   * Re-reads the suspensions: each deployment whose suspension changed is told (log, Event) and
   * reconciled, then the generation read is acknowledged, so that `suspend` returns once the agent
   * has stopped applying. A failed read keeps the last one (logged): nothing is resumed by error.
   */
  async #followSuspensions(parts: Parts, signal: AbortSignal): Promise<void> {
    let fresh: Suspensions;
    try {
      fresh = await this.#readSuspensions(signal);
    } catch (error) {
      if (!signal.aborted)
        this.#log.warn({ err: error }, 'reading the suspensions failed; keeping the last read');
      return;
    }
    const before = this.#suspensions;
    this.#suspensions = fresh;
    const ids = new Set([...parts.desired.ids(), ...parts.inventories.deploymentIds()]);
    // Each changed deployment is reconciled first: a resume re-applies, a suspension reports.
    for (const id of changedSuspensions(before, fresh, ids)) parts.queue.add(id);
    const suspensionsRef = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: this.#o.agentNamespace,
      name: SUSPENSIONS_CONFIGMAP,
    };
    // The listener told once (not an Event per deployment of a large listener)...
    if (describeEntry(before.listener) !== describeEntry(fresh.listener)) {
      const note = fresh.listener
        ? describeSuspension({ ...fresh.listener, scope: 'listener' })
        : 'the whole listener resumed: the agent applies and prunes again';
      this.#log.warn({ suspended: fresh.listener !== undefined }, note);
      await parts.events.record(suspensionsRef, {
        type: fresh.listener ? 'Warning' : 'Normal',
        reason: fresh.listener ? 'Suspended' : 'Resumed',
        note: `listener ${this.#listener.id}: ${note}`,
      });
    }
    // ...each deployment suspended or resumed on its own, on its inventory ConfigMap (where
    // `status DEPLOYMENT` finds its Events), else on the suspensions ConfigMap.
    for (const id of ids) {
      const was = before.deployments.get(id);
      const now = fresh.deployments.get(id);
      if (describeEntry(was) === describeEntry(now)) continue;
      const note = now
        ? describeSuspension({ ...now, scope: 'deployment' })
        : 'resumed: the agent applies and prunes it again';
      deploymentLogger(this.#log, { deploymentId: id }).warn(
        { suspended: now !== undefined },
        `deployment ${note}`,
      );
      const placement = parts.inventories.get(id)[0];
      await parts.events.record(
        placement
          ? { apiVersion: 'v1', kind: 'ConfigMap', namespace: placement.namespace, name: inventoryName(id) }
          : suspensionsRef,
        {
          type: now ? 'Warning' : 'Normal',
          reason: now ? 'Suspended' : 'Resumed',
          note: `deployment ${id} ${note}`,
        },
      );
    }
    this.#countSuspended(parts);
    await this.#acknowledge(fresh, signal);
  }

  /** Says which generation of the suspensions is in effect: `suspend` and `resume` wait for it. */
  async #acknowledge(suspensions: Suspensions, signal: AbortSignal): Promise<void> {
    if (suspensions.generation === suspensions.acknowledged) return;
    const ref = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: this.#o.agentNamespace,
      name: SUSPENSIONS_CONFIGMAP,
    };
    const annotations = { [observedAnnotation(this.#listener.id)]: String(suspensions.generation) };
    try {
      await this.#o.kube.mergePatch(ref, { metadata: { annotations } }, { signal });
    } catch (error) {
      if (!signal.aborted)
        this.#log.warn({ err: error }, 'acknowledging the suspensions failed; retrying at the next poll');
    }
  }

  /** Loads the inventories of the registered namespaces, retrying; false when the signal ended it. */
  async #loadInventories(inventories: InventoryStore, signal: AbortSignal): Promise<boolean> {
    const namespaces = this.#o.registration.namespaces;
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await inventories.load(namespaces, signal);
        this.#served = [...namespaces];
        return true;
      } catch (error) {
        if (signal.aborted) return false;
        this.#log.warn({ err: error, attempt }, 'reading inventories failed; retrying');
        await sleep(Math.min(30_000, 500 * 2 ** attempt), signal).catch(() => undefined);
      }
    }
    return false;
  }

  #watch(parts: Parts, namespace: string): void {
    const kinds = watchedKinds(this.#o.render);
    const labelSelector = `${LABEL_LISTENER_ID}=${this.#listener.id}`;
    const owned = new OwnedObjectWatcher({
      client: this.#o.kube,
      logger: this.#o.logger,
      kinds,
      namespaces: [namespace],
      labelSelector,
      keptLabels: REMEMBERED_LABELS,
      listGate: parts.listGate,
      // Handlers only record and enqueue: a hand edit or deletion of an owned object wakes its
      // deployment, whose reconcile then reads the object from the cache. The echo of the
      // agent's own write is no news (the cache has it already) and wakes nothing.
      onEvent: (event) => {
        const change = parts.cache.observe(event);
        const id = event.object.metadata.labels[LABEL_DEPLOYMENT_ID];
        if (change === 'none' || !id || !parts.desired.get(id)) return;
        // A workload's status moves in bursts (each replica updated, ready, available): one
        // reconcile a moment later reads them all. Any other change (a hand edit, a deletion)
        // is repaired at once.
        if (change === 'status') parts.queue.addAfter(id, STATUS_SETTLE_MS);
        else parts.queue.add(id);
      },
    });
    // The pods of the listener's workloads, for the rollout's pod problems: read at each status
    // recheck, they wake nothing (their workloads' status changes do).
    const pods = new OwnedObjectWatcher({
      client: this.#o.kube,
      logger: this.#o.logger,
      kinds: OBSERVED_KINDS,
      namespaces: [namespace],
      labelSelector,
      keptLabels: REMEMBERED_LABELS,
      listGate: parts.listGate,
      onEvent: (event) => {
        parts.cache.observe({ type: event.type, object: podSummary(event.object, REMEMBERED_LABELS) });
      },
    });
    parts.watchers.set(namespace, [owned, pods]);
    for (const [watcher, watched] of [
      [owned, kinds],
      [pods, OBSERVED_KINDS],
    ] as const) {
      watcher.start();
      void watcher.whenSynced().then((synced) => {
        if (synced) parts.cache.markSynced(watched, namespace);
      });
    }
  }

  async #pollOnce(parts: Parts, signal: AbortSignal): Promise<void> {
    try {
      await this.#followSuspensions(parts, signal);
      // Every deployment is judged again against the namespaces the listener has now.
      if (await this.#followListener(parts, signal)) {
        parts.reconciler.namespacesChanged();
        for (const id of parts.desired.ids()) parts.queue.add(id, 'low');
      }
      await parts.poller.pollOnce(signal);
    } catch (error) {
      if (!signal.aborted) this.#log.error({ err: error }, 'poll failed');
    }
  }

  /**
   * Re-reads the listener, so that a namespace taken off it is refused from the next render on
   * and one added is watched and served without a restart. Returns whether what is served changed.
   */
  async #followListener(parts: Parts, signal: AbortSignal): Promise<boolean> {
    let fresh: Listener;
    try {
      fresh = await this.#o.controlPlane.getListener(this.#listener.id, { signal });
    } catch (error) {
      if (!signal.aborted)
        this.#log.warn({ err: error }, 'reading the listener failed; keeping the last one read');
      return false;
    }
    const before = this.#listener.compute_config?.k8s_namespaces ?? [];
    let changed = false;
    const wanted = managedNamespaces(fresh, this.#o.allowedNamespaces, this.#o.agentNamespace);
    for (const namespace of wanted.filter((n) => !this.#served.includes(n))) {
      // Its inventories first: what this listener already has there must be known before the
      // first reconcile of a deployment there (for pruning).
      try {
        await parts.inventories.add(namespace, signal);
      } catch (error) {
        if (signal.aborted) return false;
        this.#log.warn(
          { err: error, namespace },
          'reading the inventories of an added namespace failed; retrying at the next poll',
        );
        continue;
      }
      this.#served = [...this.#served, namespace];
      this.#watch(parts, namespace);
      changed = true;
      this.#log.info({ namespace }, 'namespace added to the listener: watching and serving it');
    }
    // A namespace not served yet (its inventories unread) is not a target yet either. One taken
    // off keeps its watch (its objects stay, and a hand edit there still wakes its deployment,
    // which then fails with that reason), and the listener read refuses it as a target.
    const after = (fresh.compute_config?.k8s_namespaces ?? []).filter(
      (n) => !wanted.includes(n) || this.#served.includes(n),
    );
    this.#listener = { ...fresh, compute_config: { ...fresh.compute_config, k8s_namespaces: after } };
    if (before.join(',') !== after.join(',')) {
      this.#log.warn({ before, after }, 'the listener namespaces changed');
      changed = true;
    }
    return changed;
  }
}
