// One term of leadership: the poll loop, the queue workers, the watches on owned objects and the
// periodic resync, from the moment the lease is won until it is lost or the agent stops. Nothing of
// a session outlives it: the next term (here or in another replica) starts from what it observes.
import type { Logger } from 'pino';
import type { ControlPlaneClient } from '../controlplane/client.ts';
import { EventRecorder, type KubeClient, ListGate, OwnedObjectWatcher } from '../kube/index.ts';
import { ObjectCache } from '../kube/objectCache.ts';
import {
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  SHARED_ANNOTATIONS,
} from '../objects/ownership.ts';
import { DesiredState } from '../reconcile/loop/desiredState.ts';
import { Poller } from '../reconcile/loop/poller.ts';
import { realQueueScheduler } from '../reconcile/loop/queueScheduler.ts';
import { reconcileWorker } from '../reconcile/loop/reconcileWorker.ts';
import { WorkQueue } from '../reconcile/loop/workQueue.ts';
import { AgentChangeGate } from '../reconcile/policy/agentChangeGate.ts';
import type { ReconcileConfig } from '../reconcile/policy/reconcileConfig.ts';
import { suspensionsRef } from '../reconcile/policy/suspensions.ts';
import { OBSERVED_KINDS, OWNED_LISTED_KINDS, watchedKinds } from '../reconcile/policy/watchedKinds.ts';
import { Reconciler } from '../reconcile/reconciler.ts';
import { EvidenceReader } from '../reconcile/steps/evidenceReader.ts';
import { InventoryStore } from '../reconcile/steps/inventoryStore.ts';
import type { RenderConfig } from '../render/index.ts';
import { configuredAnnotations, ownedAnnotations } from '../render/ownedAnnotations.ts';
import { ControlPlaneReporter } from '../report/controlPlaneReporter.ts';
import { deploymentLogger } from '../report/deploymentLogger.ts';
import { type AgentMetrics, CONTROLLER_NAME, workQueueMetrics } from '../report/metrics.ts';
import { podSummary } from '../report/podProblems.ts';
import { ReportConfig } from '../report/reportConfig.ts';
import { DETAILED_CONDITIONS, STATUS_READ_KINDS } from '../report/rolloutHealth.ts';
import { sleep } from '../sleep.ts';
import { loadDigestKey } from './digestKey.ts';
import { type Registration, recordVersion } from './registration.ts';
import { retryUntilAborted } from './retryUntilAborted.ts';
import { ServedNamespaces } from './servedNamespaces.ts';
import { SuspensionFollower } from './suspensionFollower.ts';

/**
 * How long a status change waits for the rest of its burst before it wakes its deployment: a
 * workload's moves (updated, ready, available) come within tens of milliseconds of each other,
 * and a tenant waits for "deployed" no longer than this and REPORT_PROMPT_MS.
 */
const STATUS_SETTLE_MS = 500;
/** How soon an outcome (DEPLOYED, DEPLOY_FAILED) is sent to the control plane (controlPlaneReporter.ts). */
const REPORT_PROMPT_MS = 100;
/** How long the first reconciles wait for the watches to list (controller-runtime waits without bound). */
const CACHE_SYNC_WAIT_MS = 30_000;

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
  readonly report?: ReportConfig | undefined;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
}

/** The parts of one session, built when it starts. */
interface Parts {
  readonly desired: DesiredState;
  readonly inventories: InventoryStore;
  readonly reporter: ControlPlaneReporter;
  readonly queue: WorkQueue;
  readonly cache: ObjectCache;
  readonly reconciler: Reconciler;
  readonly poller: Poller;
  readonly events: EventRecorder;
  readonly suspensions: SuspensionFollower;
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
  readonly #namespaces: ServedNamespaces;
  #lastLoopAt = Date.now();

  constructor(options: LeaderSessionOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'agent', identity: options.identity });
    this.#namespaces = new ServedNamespaces({
      controlPlane: options.controlPlane,
      registration: options.registration,
      allowedNamespaces: options.allowedNamespaces,
      agentNamespace: options.agentNamespace,
      logger: this.#log,
    });
  }

  /** When the poll loop last turned (for the liveness probe). */
  get lastLoopAt(): number {
    return this.#lastLoopAt;
  }

  /** The namespaces served: watched, with their inventories loaded. */
  get namespaces(): readonly string[] {
    return this.#namespaces.served;
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
      this.#namespaces.recorded(
        await recordVersion({
          client: this.#o.controlPlane,
          listener: this.#namespaces.listener,
          logger: this.#log,
          metrics,
          events: parts.events,
          // Listener-wide Events go on the agent's own ConfigMap, as a suspension of the listener's does.
          eventSubject: suspensionsRef(this.#o.agentNamespace),
          signal,
        }),
      );
      // Before the first poll: which deployments have objects here (for deletions and the guard).
      if (!(await this.#namespaces.load(parts.inventories, signal))) return;
      // Before the first reconcile too: a suspended deployment is not applied after a restart.
      if (!(await parts.suspensions.load(signal))) return;
      // As controller-runtime's WaitForCacheSync: the watches list first, so that the first
      // reconciles read their objects from the cache (each one before it was a GET answering 404
      // for every object a cold sync had yet to make). Bounded: a namespace whose listing is
      // refused or slow delays nothing longer (its reads are requests until it lists).
      const synced = this.#namespaces.served.map((namespace) => this.#watch(parts, namespace));
      const waited = new AbortController();
      await Promise.race([
        Promise.all(synced),
        sleep(CACHE_SYNC_WAIT_MS, AbortSignal.any([signal, waited.signal])).catch(() => undefined),
      ]);
      waited.abort();
      if (signal.aborted) return;
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
      this.#log.info({ namespaces: this.#namespaces.served }, 'leading: polling and reconciling');
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
    const listenerId = this.#namespaces.listener.id;
    const desired = new DesiredState();
    // Indexed by deployment: the kinds the reconciler lists a deployment's objects of.
    const cache = new ObjectCache({
      indexLabel: LABEL_DEPLOYMENT_ID,
      indexedKinds: OWNED_LISTED_KINDS,
      statusKinds: STATUS_READ_KINDS,
      detailedConditions: DETAILED_CONDITIONS,
      // The inventories: their store holds what they record; the cache, who owns them.
      bodylessKinds: ['ConfigMap'],
      // What the spec view covers: every annotation the agent writes, and no other.
      keptAnnotations: ownedAnnotations(this.#o.render),
      sharedAnnotations: [...SHARED_ANNOTATIONS, ...configuredAnnotations(this.#o.render)],
    });
    const inventories = new InventoryStore(
      kube,
      listenerId,
      (rejected) => {
        metrics.inventoriesRejected.inc();
        log.warn(rejected, 'inventory ignored: it does not hold together, so nothing is deleted by it');
      },
      // Its watch event is then the echo of our own write: no wake (each had woken its deployment
      // for one more reconcile right after its first apply).
      (written) => cache.written(written),
    );
    const reporter = new ControlPlaneReporter({
      sink: this.#o.controlPlane,
      listenerId,
      logger: this.#o.logger,
      metrics,
      promptMs: REPORT_PROMPT_MS,
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
      scheduler: realQueueScheduler,
    });
    const suspensions = new SuspensionFollower({
      kube,
      agentNamespace: this.#o.agentNamespace,
      listenerId,
      desired,
      inventories,
      events,
      wake: (id) => queue.add(id),
      metrics,
      logger: log,
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
      listener: () => this.#namespaces.listener,
      allowedNamespaces: this.#o.allowedNamespaces,
      digestKey,
      evidence: new EvidenceReader({
        kube,
        listener: () => this.#namespaces.listener,
        config: this.#o.report ?? ReportConfig.parse({}),
      }),
      suspension: (id) => suspensions.of(id),
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
      suspensions,
      watchers: new Map(),
      listGate: new ListGate(LISTINGS_AT_ONCE),
    };
  }

  /** The digest key, made on the first start; retried (a permission is the usual cause, logged). */
  #loadDigestKey(signal: AbortSignal): Promise<Uint8Array | undefined> {
    return retryUntilAborted(
      () => loadDigestKey(this.#o.kube, this.#o.agentNamespace, { create: true, signal }),
      {
        signal,
        firstDelayMs: 1_000,
        onFailure: (error, attempt) =>
          this.#log.error({ err: error, attempt }, 'reading the digest key failed; retrying'),
      },
    );
  }

  /** Starts the watches of a namespace; resolves once they have all listed (false: stopped first). */
  #watch(parts: Parts, namespace: string): Promise<boolean> {
    const kinds = watchedKinds(this.#o.render);
    const labelSelector = `${LABEL_LISTENER_ID}=${this.#namespaces.listener.id}`;
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
        // reconcile a moment later reads them all, queued low: behind a cold sync's deployments
        // not yet applied its moves gather into one run (ahead of them, each burst of every
        // deployment applied so far was a run of its own), and with nothing else queued it runs
        // at once. Rollout rechecks wait there too. Any other change (a hand edit, a deletion) is
        // repaired at once.
        if (change === 'status') parts.queue.addAfter(id, STATUS_SETTLE_MS, 'low');
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
    const synced = (
      [
        [owned, kinds],
        [pods, OBSERVED_KINDS],
      ] as const
    ).map(([watcher, watched]) => {
      watcher.start();
      return watcher.whenSynced().then((listed) => {
        if (listed) parts.cache.markSynced(watched, namespace);
        return listed;
      });
    });
    return Promise.all(synced).then((listed) => listed.every(Boolean));
  }

  async #pollOnce(parts: Parts, signal: AbortSignal): Promise<void> {
    const timer = this.#o.metrics.pollDuration.startTimer();
    try {
      await parts.suspensions.follow(signal);
      // Every deployment is judged again against the namespaces the listener has now.
      const serve = (namespace: string) => void this.#watch(parts, namespace);
      if (await this.#namespaces.follow(parts.inventories, serve, signal)) {
        parts.reconciler.namespacesChanged();
        for (const id of parts.desired.ids()) parts.queue.add(id, 'low');
      }
      await parts.poller.pollOnce(signal);
    } catch (error) {
      if (!signal.aborted) this.#log.error({ err: error }, 'poll failed');
    } finally {
      timer();
    }
  }
}
