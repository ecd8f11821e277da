// The manager: registers with the control plane, campaigns for leadership, and while leading
// runs the poll loop, the queue workers, the watch on owned objects and the periodic resync.
import type { Logger } from 'pino';
import { ControlPlaneClient, type ControlPlaneClientOptions } from '../controlplane/client.ts';
import { isControlPlaneError } from '../controlplane/errors.ts';
import type { Listener } from '../controlplane/schemas/index.ts';
import { EventRecorder, KubeClient, LeaderElector, OwnedObjectWatcher } from '../kube/index.ts';
import { ObjectCache } from '../kube/objectCache.ts';
import type { RenderConfig } from '../render/index.ts';
import { LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../render/ownership.ts';
import { deploymentLogger } from '../report/deploymentLogger.ts';
import { type AgentMetrics, CONTROLLER_NAME, workQueueMetrics } from '../report/metrics.ts';
import { StatusReporter } from '../report/statusReporter.ts';
import { sleep } from '../sleep.ts';
import { AGENT_VERSION } from '../version.ts';
import { DesiredState } from './desiredState.ts';
import { InventoryStore } from './inventoryStore.ts';
import { Poller } from './poller.ts';
import type { ReconcileConfig } from './reconcileConfig.ts';
import { Reconciler } from './reconciler.ts';
import { reconcileWorker } from './reconcileWorker.ts';
import { WorkQueue } from './workQueue.ts';

export interface AgentOptions {
  readonly listenerId: string;
  readonly controlPlane: Omit<ControlPlaneClientOptions, 'logger'>;
  /** Undefined: in-cluster configuration. */
  readonly kubeconfigPath: string | undefined;
  /** The agent's own allow-list; undefined lets the listener's namespaces stand. */
  readonly allowedNamespaces: readonly string[] | undefined;
  readonly identity: string;
  /** Where the leader-election Lease lives (the agent's own namespace). */
  readonly agentNamespace: string;
  readonly render: RenderConfig;
  readonly reconcile: ReconcileConfig;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
}

/** Refused at start: a missing listener, a wrong compute type, refused credentials. */
export class RegistrationError extends Error {
  override readonly name = 'RegistrationError';
  readonly code = 'REGISTRATION';
}

/**
 * The kinds watched for hand edits: every kind the agent writes, so that a deletion by hand is
 * repaired at once rather than at the next resync (also what `check` asks list and watch
 * permission for). Ingresses only when rendered at all (see watchedKinds).
 */
export const WATCHED_KINDS = [
  'Deployment',
  'StatefulSet',
  'Service',
  'Secret',
  'PersistentVolumeClaim',
  'ConfigMap',
  'PodTemplate',
  'HorizontalPodAutoscaler',
  'PodDisruptionBudget',
  'Ingress',
] as const;

/** The kinds watched under this render configuration: no Ingress without an ingress class. */
export function watchedKinds(render: Pick<RenderConfig, 'ingress'>): (typeof WATCHED_KINDS)[number][] {
  return WATCHED_KINDS.filter((kind) => kind !== 'Ingress' || render.ingress.className !== undefined);
}

export class Agent {
  readonly #o: AgentOptions;
  readonly #log: Logger;
  readonly #client: ControlPlaneClient;
  #kube: KubeClient | undefined;
  #listener: Listener | undefined;
  #namespaces: string[] = [];
  #elector: LeaderElector | undefined;
  #leading: { stop(): Promise<void> } | undefined;
  #stopping = false;
  /** Aborted by stop() or the caller's signal: ends registration retries and every wait. */
  readonly #shutdown = new AbortController();
  #registered = false;
  #lastLoopAt = Date.now();

  constructor(options: AgentOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'agent', identity: options.identity });
    this.#client = new ControlPlaneClient({
      ...options.controlPlane,
      logger: options.logger,
      userAgent: `k8s-listener/${AGENT_VERSION}`,
      registry: options.metrics.registry,
    });
  }

  get namespaces(): readonly string[] {
    return this.#namespaces;
  }

  /** Registered and leading (or a healthy follower): what /readyz reports. */
  isReady(): boolean {
    return this.#registered && !this.#stopping;
  }

  /** The loops turn: what /healthz reports. */
  isLive(): boolean {
    return (
      this.#leading === undefined ||
      Date.now() - this.#lastLoopAt < this.#o.reconcile.pollIntervalMs * 6 + 60_000
    );
  }

  isLeader(): boolean {
    return this.#elector ? this.#elector.isLeader() : this.#leading !== undefined;
  }

  get metrics(): AgentMetrics {
    return this.#o.metrics;
  }

  /** The Kubernetes client, for request counts in tests. */
  get kube(): KubeClient | undefined {
    return this.#kube;
  }

  /**
   * Registers, then campaigns; resolves once registration is done (leading may come later).
   * `signal` (SIGTERM) ends a registration still retrying: start rejects with its reason.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (signal) {
      if (signal.aborted) this.#shutdown.abort(signal.reason);
      else signal.addEventListener('abort', () => this.#shutdown.abort(signal.reason), { once: true });
    }
    this.#kube = await KubeClient.fromKubeconfig(this.#o.kubeconfigPath, {
      logger: this.#o.logger,
      registry: this.#o.metrics.registry,
      userAgent: `k8s-listener/${AGENT_VERSION}`,
    });
    await this.#register();
    const leaderElection = this.#o.reconcile.leaderElection;
    if (!leaderElection.enabled) {
      this.#lead(new AbortController().signal);
      return;
    }
    const elector = new LeaderElector({
      client: this.#kube,
      logger: this.#o.logger,
      namespace: leaderElection.leaseNamespace ?? this.#o.agentNamespace,
      name: leaderElection.leaseName,
      identity: this.#o.identity,
      leaseDurationMs: leaderElection.leaseDurationMs,
      renewDeadlineMs: leaderElection.renewDeadlineMs,
      retryPeriodMs: leaderElection.retryPeriodMs,
    });
    this.#elector = elector;
    const campaign = async () => {
      while (!this.#stopping) {
        await elector.run({
          onStartedLeading: (signal) => this.#lead(signal),
          onStoppedLeading: () => {
            this.#o.metrics.leader.set(0);
            const leading = this.#leading;
            this.#leading = undefined;
            if (leading && !this.#stopping) {
              // Never two writers: stop every loop before campaigning again.
              this.#log.warn('leadership lost; stopping work');
              void leading.stop();
            }
          },
          onNewLeader: (identity) => this.#log.info({ leader: identity }, 'leader observed'),
        });
      }
    };
    void campaign().catch((error: unknown) => this.#log.error({ err: error }, 'leader election stopped'));
  }

  /** Graceful shutdown: stop polling, finish in-flight work within the bound, release the lease. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#shutdown.abort(new Error('the agent is stopping'));
    this.#log.info('shutting down');
    await this.#leading?.stop();
    this.#leading = undefined;
    await this.#elector
      ?.release()
      .catch((error: unknown) => this.#log.warn({ err: error }, 'could not release the lease'));
    await this.#elector?.stop();
    await this.#client.close();
    await this.#kube?.close();
    this.#log.info('stopped');
  }

  async #register(): Promise<void> {
    const { listenerId } = this.#o;
    const signal = this.#shutdown.signal;
    let listener: Listener;
    for (let attempt = 1; ; attempt++) {
      try {
        listener = await this.#client.getListener(listenerId, { signal });
        break;
      } catch (error) {
        if (isControlPlaneError(error, 404))
          throw new RegistrationError(`listener ${listenerId} does not exist at the control plane`, {
            cause: error,
          });
        if (isControlPlaneError(error, 401) || isControlPlaneError(error, 403)) {
          throw new RegistrationError('the control plane refused the API key', { cause: error });
        }
        if (signal.aborted) throw signal.reason;
        const delay = Math.min(30_000, 1_000 * 2 ** attempt);
        this.#log.warn({ err: error, attempt, delayMs: delay }, 'reading the listener failed; retrying');
        await sleep(delay, signal);
      }
    }
    if (listener.compute_type !== 'k8s') {
      throw new RegistrationError(
        `listener ${listenerId} has compute type ${listener.compute_type}, not k8s`,
      );
    }
    const listed = listener.compute_config?.k8s_namespaces ?? [];
    const allowed = this.#o.allowedNamespaces;
    this.#namespaces = allowed ? listed.filter((n) => allowed.includes(n)) : [...listed];
    if (this.#namespaces.length === 0) {
      throw new RegistrationError(
        `listener ${listenerId} leaves no namespace to manage (listener: ${listed.join(', ') || 'none'}; agent allow-list: ${allowed?.join(', ') ?? 'unset'})`,
      );
    }
    this.#listener = listener;
    this.#registered = true;
    this.#log.info(
      { listenerId, computeId: listener.compute_id, namespaces: this.#namespaces },
      'registered',
    );
  }

  /**
   * Re-reads the listener each poll, so that namespaces taken off it are refused from the next
   * render on. The watches keep the namespaces of the start; a namespace added needs a restart.
   */
  async #refreshListener(signal: AbortSignal): Promise<boolean> {
    const current = this.#listener;
    if (!current) return false;
    try {
      const fresh = await this.#client.getListener(current.id, { signal });
      const before = current.compute_config?.k8s_namespaces ?? [];
      const after = fresh.compute_config?.k8s_namespaces ?? [];
      if (before.join(',') !== after.join(',')) {
        const added = after.filter((n) => !before.includes(n));
        this.#log.warn(
          { before, after },
          added.length > 0
            ? 'the listener namespaces changed; namespaces added are watched only after a restart'
            : 'the listener namespaces changed; deployments outside them now fail with that reason',
        );
      }
      this.#listener = fresh;
      return before.join(',') !== after.join(',');
    } catch (error) {
      this.#log.warn({ err: error }, 'reading the listener failed; keeping the last one read');
      return false;
    }
  }

  /** Records this agent's version on the listener (leader only: one writer to the control plane). */
  async #recordVersion(): Promise<void> {
    const listener = this.#listener;
    if (!listener || listener.version === AGENT_VERSION) return;
    try {
      this.#listener = await this.#client.putListener(listener.id, {
        compute_type: listener.compute_type,
        compute_id: listener.compute_id,
        compute_config: listener.compute_config ?? null,
        version: AGENT_VERSION,
      });
    } catch (error) {
      this.#log.warn({ err: error }, 'could not record the agent version on the listener');
    }
  }

  #lead(signal: AbortSignal): void {
    const kube = this.#kube;
    const listener = this.#listener;
    if (!kube || !listener) return;
    this.#o.metrics.leader.set(1);
    const log = this.#log;
    const config = this.#o.reconcile;
    const desired = new DesiredState();
    const inventories = new InventoryStore(kube, listener.id);
    const reporter = new StatusReporter({
      sink: this.#client,
      listenerId: listener.id,
      logger: this.#o.logger,
      metrics: this.#o.metrics,
    });
    const events = new EventRecorder({ client: kube, logger: this.#o.logger, identity: this.#o.identity });
    const queue = new WorkQueue({
      concurrency: config.concurrency,
      backoffBaseMs: config.backoffBaseMs,
      backoffMaxMs: config.backoffMaxMs,
      maxKeys: config.maxQueuedKeys,
      logger: this.#o.logger,
      onDropped: () => this.#o.metrics.queueDropped.inc(),
      metrics: workQueueMetrics(this.#o.metrics, CONTROLLER_NAME),
      keyLogger: (id) => deploymentLogger(log, { deploymentId: id }),
    });
    const cache = new ObjectCache();
    const reconciler = new Reconciler({
      kube,
      cache,
      desired,
      inventories,
      reporter,
      events,
      metrics: this.#o.metrics,
      logger: this.#o.logger,
      renderConfig: this.#o.render,
      config,
      // The latest listener read: a namespace taken off it stops being a valid target at once.
      listener: () => this.#listener ?? listener,
      allowedNamespaces: this.#o.allowedNamespaces,
    });
    const poller = new Poller({
      client: this.#client,
      listenerId: listener.id,
      desired,
      knownIds: () => inventories.deploymentIds(),
      enqueue: (id) => queue.add(id),
      reporter,
      metrics: this.#o.metrics,
      logger: this.#o.logger,
      config,
    });
    const watcher = new OwnedObjectWatcher({
      client: kube,
      logger: this.#o.logger,
      kinds: watchedKinds(this.#o.render),
      namespaces: this.#namespaces,
      labelSelector: `${LABEL_LISTENER_ID}=${listener.id}`,
      // Handlers only record and enqueue: a hand edit or deletion of an owned object wakes its
      // deployment, whose reconcile then reads the object from the cache.
      onEvent: (event) => {
        cache.observe(event);
        const id = event.object.metadata.labels[LABEL_DEPLOYMENT_ID];
        if (id && desired.get(id)) queue.add(id);
      },
    });

    let pollTimer: NodeJS.Timeout | undefined;
    let resyncTimer: NodeJS.Timeout | undefined;
    let polling: Promise<void> = Promise.resolve();
    let stopped = false;
    // Ends this session's waits and control-plane calls (a poll in progress, retries) at once.
    const session = new AbortController();
    const sessionSignal = AbortSignal.any([signal, session.signal, this.#shutdown.signal]);
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      session.abort(new Error('leader session stopping'));
      clearTimeout(pollTimer);
      clearInterval(resyncTimer);
      await polling;
      const drained = await queue.shutDown(config.shutdownDrainMs);
      if (!drained) log.warn({ drainMs: config.shutdownDrainMs }, 'in-flight work did not finish in time');
      await watcher.stop();
      // After a lost lease the next leader reports; this session sends nothing more.
      if (!signal.aborted) await reporter.flush();
      this.#o.metrics.leader.set(0);
    };
    this.#leading = { stop };
    signal.addEventListener('abort', () => void stop(), { once: true });

    const schedulePoll = (delayMs: number) => {
      if (stopped) return;
      pollTimer = setTimeout(() => {
        polling = this.#refreshListener(sessionSignal)
          .then((changed) => {
            if (changed) for (const id of desired.ids()) queue.add(id);
            return poller.pollOnce(sessionSignal);
          })
          .then(
            () => undefined,
            (error: unknown) => log.error({ err: error }, 'poll failed'),
          )
          .finally(() => {
            this.#lastLoopAt = Date.now();
            this.#o.metrics.queueDepth.set(queue.length);
            const jitter = 1 + (Math.random() * 2 - 1) * config.pollJitter;
            schedulePoll(config.pollIntervalMs * jitter);
          });
      }, delayMs);
    };

    void (async () => {
      await this.#recordVersion();
      // Before the first poll: which deployments have objects here (for deletions and the guard).
      for (let attempt = 1; !stopped; attempt++) {
        try {
          await inventories.load(this.#namespaces);
          break;
        } catch (error) {
          if (sessionSignal.aborted) return;
          log.warn({ err: error, attempt }, 'reading inventories failed; retrying');
          await sleep(Math.min(30_000, 500 * 2 ** attempt), sessionSignal).catch(() => undefined);
        }
      }
      if (stopped) return;
      queue.start(
        reconcileWorker({
          reconciler,
          queue,
          metrics: this.#o.metrics,
          logger: log,
          concurrency: config.concurrency,
          signal,
        }),
      );
      watcher.start();
      resyncTimer = setInterval(() => {
        for (const id of desired.ids()) queue.add(id);
      }, config.resyncIntervalMs);
      resyncTimer.unref();
      schedulePoll(0);
      log.info({ namespaces: this.#namespaces }, 'leading: polling and reconciling');
    })();
  }
}
