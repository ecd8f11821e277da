// The manager: registers with the control plane, campaigns for leadership and runs one leader
// session for the term it wins. A term lost (not given up) is fatal, as in controller-runtime:
// the work stops at once and `failed` settles, so that the process exits and restarts clean.
import type { Logger } from 'pino';
import { ControlPlaneClient, type ControlPlaneClientOptions } from '../controlplane/client.ts';
import { KubeClient, LeaderElector } from '../kube/index.ts';
import type { RateLimit } from '../kube/rateLimiter.ts';
import type { ReconcileConfig } from '../reconcile/policy/reconcileConfig.ts';
import type { RenderConfig } from '../render/index.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import type { ReportConfig } from '../report/reportConfig.ts';
import { AGENT_VERSION } from '../version.ts';
import { LeaderSession } from './leaderSession.ts';
import { type Registration, register } from './registration.ts';
import { transportWeaknesses } from './transportSecurity.ts';

export interface AgentOptions {
  readonly listenerId: string;
  readonly controlPlane: Omit<ControlPlaneClientOptions, 'logger'>;
  /** Undefined: in-cluster configuration. */
  readonly kubeconfigPath: string | undefined;
  /** Client-side request rate limit; absent: none. */
  readonly kubeApi?: RateLimit;
  /** The agent's own allow-list; undefined lets the listener's namespaces stand. */
  readonly allowedNamespaces: readonly string[] | undefined;
  readonly identity: string;
  /** Where the leader-election Lease lives (the agent's own namespace). */
  readonly agentNamespace: string;
  readonly render: RenderConfig;
  readonly reconcile: ReconcileConfig;
  /** What evidence of a failure reaches the tenant; absent: the defaults. */
  readonly report?: ReportConfig | undefined;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
}

/** Leadership ended without the agent giving it up: another holder took the lease, or renewals failed. */
export class LeadershipLostError extends Error {
  override readonly name = 'LeadershipLostError';
  readonly code = 'LEADERSHIP_LOST';
}

export class Agent {
  readonly #o: AgentOptions;
  readonly #log: Logger;
  readonly #client: ControlPlaneClient;
  #kube: KubeClient | undefined;
  #registration: Registration | undefined;
  #elector: LeaderElector | undefined;
  #session: LeaderSession | undefined;
  /** Settles when the running session has stopped. */
  #sessionDone: Promise<void> | undefined;
  #stopping = false;
  /** Aborted by stop() or the caller's signal: ends registration retries, every wait, the session. */
  readonly #shutdown = new AbortController();
  readonly #failed: Promise<Error>;
  #fail: (error: Error) => void = () => {};

  constructor(options: AgentOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'agent', identity: options.identity });
    this.#client = new ControlPlaneClient({
      ...options.controlPlane,
      logger: options.logger,
      userAgent: `k8s-listener/${AGENT_VERSION}`,
      registry: options.metrics.registry,
    });
    this.#failed = new Promise((resolve) => {
      this.#fail = resolve;
    });
  }

  /**
   * Settles (never rejects) with the error that ended the agent's work for good: leadership lost.
   * The agent has stopped by then; the caller exits non-zero.
   */
  get failed(): Promise<Error> {
    return this.#failed;
  }

  /** The namespaces served: those of the registration, and those added to the listener since. */
  get namespaces(): readonly string[] {
    return this.#session?.namespaces.length
      ? this.#session.namespaces
      : (this.#registration?.namespaces ?? []);
  }

  /** Registered and not stopping (a leader, or a healthy follower): what /readyz reports. */
  isReady(): boolean {
    return this.#registration !== undefined && !this.#stopping;
  }

  /** The loops turn: what /healthz reports. */
  isLive(): boolean {
    const session = this.#session;
    return (
      session === undefined || Date.now() - session.lastLoopAt < this.#o.reconcile.pollIntervalMs * 6 + 60_000
    );
  }

  isLeader(): boolean {
    return this.#elector ? this.#elector.isLeader() : this.#session !== undefined;
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
    const kube = await KubeClient.fromKubeconfig(this.#o.kubeconfigPath, {
      logger: this.#o.logger,
      registry: this.#o.metrics.registry,
      userAgent: `k8s-listener/${AGENT_VERSION}`,
      ...(this.#o.kubeApi === undefined ? {} : { rateLimit: this.#o.kubeApi }),
    });
    this.#kube = kube;
    for (const weakness of transportWeaknesses({
      controlPlaneUrl: this.#o.controlPlane.baseUrl,
      kubeServer: kube.server,
      kubeVerifiesTls: kube.verifiesTls,
    })) {
      this.#log.warn({ target: weakness.target, reason: weakness.reason }, weakness.message);
      this.#o.metrics.insecureTransport.set({ target: weakness.target, reason: weakness.reason }, 1);
    }
    this.#registration = await register({
      client: this.#client,
      listenerId: this.#o.listenerId,
      allowedNamespaces: this.#o.allowedNamespaces,
      agentNamespace: this.#o.agentNamespace,
      logger: this.#log,
      signal: this.#shutdown.signal,
    });
    const leaderElection = this.#o.reconcile.leaderElection;
    if (!leaderElection.enabled) {
      this.#lead(new AbortController().signal);
      return;
    }
    const elector = new LeaderElector({
      client: kube,
      logger: this.#o.logger,
      namespace: leaderElection.leaseNamespace ?? this.#o.agentNamespace,
      name: leaderElection.leaseName,
      identity: this.#o.identity,
      leaseDurationMs: leaderElection.leaseDurationMs,
      renewDeadlineMs: leaderElection.renewDeadlineMs,
      retryPeriodMs: leaderElection.retryPeriodMs,
    });
    this.#elector = elector;
    // One campaign: a term ends either with stop() or, lost, with the whole agent.
    void elector
      .run({
        onStartedLeading: (lease) => this.#lead(lease),
        onStoppedLeading: () => {
          this.#o.metrics.leader.set(0);
          if (!this.#stopping) void this.#lost();
        },
        onNewLeader: (identity) => this.#log.info({ leader: identity }, 'leader observed'),
      })
      .catch((error: unknown) => this.#log.error({ err: error }, 'leader election stopped'));
  }

  /** Graceful shutdown: stop polling, finish in-flight work within the bound, release the lease. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#shutdown.abort(new Error('the agent is stopping'));
    this.#log.info('shutting down');
    await this.#sessionDone;
    await this.#elector
      ?.release()
      .catch((error: unknown) => this.#log.warn({ err: error }, 'could not release the lease'));
    await this.#elector?.stop();
    await this.#close();
    this.#log.info('stopped');
  }

  #lead(lease: AbortSignal): void {
    const kube = this.#kube;
    const registration = this.#registration;
    if (!kube || !registration) return;
    const session = new LeaderSession({
      kube,
      controlPlane: this.#client,
      registration,
      allowedNamespaces: this.#o.allowedNamespaces,
      agentNamespace: this.#o.agentNamespace,
      identity: this.#o.identity,
      render: this.#o.render,
      reconcile: this.#o.reconcile,
      report: this.#o.report,
      metrics: this.#o.metrics,
      logger: this.#o.logger,
    });
    this.#session = session;
    this.#sessionDone = session
      .run(lease, this.#shutdown.signal)
      .catch((error: unknown) => this.#log.error({ err: error }, 'leader session failed'))
      .finally(() => {
        if (this.#session === session) this.#session = undefined;
      });
  }

  /** Lost, not given up: stop at once (no drain, no report, no release) and fail the agent. */
  async #lost(): Promise<void> {
    this.#stopping = true;
    this.#log.error('leadership lost; stopping at once so that the process restarts clean');
    this.#shutdown.abort(new LeadershipLostError('leadership lost'));
    await this.#sessionDone;
    await this.#elector?.stop();
    await this.#close();
    this.#fail(new LeadershipLostError('leadership lost: another replica may hold the lease'));
  }

  async #close(): Promise<void> {
    await this.#client.close();
    await this.#kube?.close();
  }
}
