// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: optimistic concurrency
// on resourceVersion, expiry judged by local observation time, and leadership given up (signal
// aborted) once renewals fail for longer than the renew deadline, before any rival can take over.
import type { Logger } from 'pino';
import { z } from 'zod';
import { isConflict } from './errors.ts';
import type { KubeClient, LiveKubeObject } from './kubeClient.ts';
import { formatMicroTime } from './microTime.ts';

export interface LeaderElectorOptions {
  readonly client: Pick<KubeClient, 'get' | 'create' | 'update'>;
  readonly logger: Logger;
  readonly namespace: string;
  readonly name: string;
  /** This replica's identity, usually the Pod name. */
  readonly identity: string;
  /** How long a lease lasts without renewal. Default 15 s (whole seconds on the Lease). */
  readonly leaseDurationMs?: number;
  /** The leader gives up when it has not renewed for this long. Default 10 s. */
  readonly renewDeadlineMs?: number;
  /** Pause between attempts (jittered for candidates). Default 2 s. */
  readonly retryPeriodMs?: number;
}

export interface LeaderCallbacks {
  /** Leadership acquired; `signal` aborts the moment it is lost, released or stopped. */
  onStartedLeading(signal: AbortSignal): void;
  /** Leadership ended (after the signal aborted). */
  onStoppedLeading(): void;
  /** The observed holder changed (this replica included). */
  onNewLeader?(identity: string): void;
}

export class LeaderElectionConfigError extends Error {
  override readonly name = 'LeaderElectionConfigError';
  readonly code = 'LEADER_ELECTION_CONFIG';
}

const LeaseSpec = z.looseObject({
  holderIdentity: z.string().nullish(),
  leaseDurationSeconds: z.number().int().nullish(),
  acquireTime: z.string().nullish(),
  renewTime: z.string().nullish(),
  leaseTransitions: z.number().int().nullish(),
});
type LeaseSpec = z.infer<typeof LeaseSpec>;

// client-go's JitterFactor for candidates' retries.
const JITTER_FACTOR = 1.2;

export class LeaderElector {
  readonly #client: LeaderElectorOptions['client'];
  readonly #logger: Logger;
  readonly #namespace: string;
  readonly #name: string;
  readonly #identity: string;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  #stopping = new AbortController();
  #running = false;
  /** Aborted when leadership ends; undefined when not leading. */
  #leading: AbortController | undefined;
  #callbacks: LeaderCallbacks | undefined;
  /** When the last successful renewal was sent (conservatively, before the request). */
  #renewedAt = 0;
  /** How long the last successful write of the lease took: a slow API server shows here. */
  #lastRenewalTookMs = 0;
  /** The lease as last read or written by us: its resourceVersion lets the leader renew with one request. */
  #lease: LiveKubeObject | undefined;
  /** The record last seen, and when (local clock): expiry is judged from observation, not renewTime. */
  #observed: { key: string; holder: string; durationMs: number; at: number } | undefined;
  #reportedLeader: string | undefined;

  constructor(options: LeaderElectorOptions) {
    this.#client = options.client;
    this.#namespace = options.namespace;
    this.#name = options.name;
    this.#identity = options.identity;
    this.#leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.#retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.#logger = options.logger.child({
      component: 'leader-election',
      lease: `${options.namespace}/${options.name}`,
      identity: options.identity,
    });
    if (!options.identity) throw new LeaderElectionConfigError('leader election needs a non-empty identity');
    if (this.#leaseDurationMs <= this.#renewDeadlineMs) {
      throw new LeaderElectionConfigError('leaseDuration must be greater than renewDeadline');
    }
    if (this.#renewDeadlineMs <= JITTER_FACTOR * this.#retryPeriodMs) {
      throw new LeaderElectionConfigError('renewDeadline must be greater than retryPeriod × 1.2');
    }
  }

  /**
   * Campaigns until this replica leads, then renews until leadership ends. Resolves when it ends
   * (lost, released or stopped) or when stopped before ever leading; call again to campaign again.
   */
  async run(callbacks: LeaderCallbacks): Promise<void> {
    if (this.#running) throw new LeaderElectionConfigError('LeaderElector.run is already running');
    this.#running = true;
    this.#callbacks = callbacks;
    if (this.#stopping.signal.aborted) this.#stopping = new AbortController();
    try {
      if (!(await this.#acquire())) return;
      const leading = new AbortController();
      this.#leading = leading;
      this.#logger.info('became leader');
      try {
        callbacks.onStartedLeading(leading.signal);
      } catch (error) {
        this.#logger.error({ err: error }, 'onStartedLeading threw');
      }
      await this.#renewLoop(leading);
    } finally {
      this.#running = false;
    }
  }

  /** Leading, and renewed recently enough that no rival can have taken over. */
  isLeader(): boolean {
    return this.#leading !== undefined && Date.now() - this.#renewedAt < this.#renewDeadlineMs;
  }

  /**
   * For a graceful shutdown: ends leadership (signal aborted first) and hands the lease back, so a
   * successor takes over at once instead of waiting for it to expire. Stop writing before calling.
   */
  async release(): Promise<void> {
    const wasLeading = this.#leading !== undefined;
    this.#stopping.abort();
    this.#endLeadership('released');
    if (!wasLeading) return;
    const timeoutMs = this.#renewDeadlineMs;
    try {
      let lease = this.#lease ?? (await this.#client.get(this.#ref(), { timeoutMs }));
      for (let attempt = 0; lease !== undefined && attempt < 2; attempt++) {
        const spec = LeaseSpec.safeParse(lease.spec ?? {});
        // Only our own lease: a successor's is left alone.
        if (!spec.success || spec.data.holderIdentity !== this.#identity) return;
        const now = Date.now();
        try {
          this.#lease = await this.#client.update(
            {
              ...lease,
              spec: {
                ...spec.data,
                holderIdentity: '',
                leaseDurationSeconds: 1,
                acquireTime: formatMicroTime(now),
                renewTime: formatMicroTime(now),
              },
            },
            { timeoutMs },
          );
          this.#logger.info('released the lease');
          return;
        } catch (error) {
          // A renewal that was in flight when we stopped may have moved the resourceVersion.
          if (!isConflict(error)) throw error;
          lease = await this.#client.get(this.#ref(), { timeoutMs });
        }
      }
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not release the lease; it will expire instead');
    }
  }

  /** Ends the campaign or leadership without touching the lease (it expires after leaseDuration). */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#endLeadership('stopped');
  }

  async #acquire(): Promise<boolean> {
    while (!this.#stopping.signal.aborted) {
      if (await this.#tryAcquireOrRenew()) return !this.#stopping.signal.aborted;
      await this.#sleep(this.#retryPeriodMs * (1 + Math.random() * JITTER_FACTOR));
    }
    return false;
  }

  async #renewLoop(leading: AbortController): Promise<void> {
    while (!leading.signal.aborted) {
      const sleptAt = Date.now();
      await this.#sleep(this.#retryPeriodMs);
      if (leading.signal.aborted) return;
      // A timer that fires late means the process itself was stalled (GC, CPU starvation, a
      // blocked event loop), not the API server: the log says which, for whoever reads it.
      const timerLateMs = Date.now() - sleptAt - this.#retryPeriodMs;
      const deadline = this.#renewedAt + this.#renewDeadlineMs;
      let renewed = false;
      while (!renewed && !leading.signal.aborted && Date.now() < deadline) {
        renewed = await this.#tryAcquireOrRenew(deadline);
        if (!renewed)
          await this.#sleep(Math.min(this.#retryPeriodMs / 4, Math.max(0, deadline - Date.now())));
      }
      if (!renewed && !leading.signal.aborted) {
        this.#logger.error(
          {
            renewDeadlineMs: this.#renewDeadlineMs,
            sinceRenewalMs: Date.now() - this.#renewedAt,
            lastRenewalTookMs: this.#lastRenewalTookMs,
            timerLateMs,
          },
          'failed to renew the lease in time',
        );
        this.#endLeadership('lost');
      }
    }
  }

  /** One attempt; true when this replica holds the lease afterwards. Never throws. */
  async #tryAcquireOrRenew(deadline?: number): Promise<boolean> {
    const started = Date.now();
    const timeoutMs = deadline === undefined ? this.#renewDeadlineMs : Math.max(1, deadline - started);
    const signal = this.#stopping.signal;
    try {
      // The leader renews straight from its last write: one request, guarded by resourceVersion.
      if (this.#leading !== undefined && this.#lease !== undefined) {
        try {
          return this.#wrote(
            await this.#client.update(this.#renewed(this.#lease, started), { timeoutMs, signal }),
            started,
          );
        } catch (error) {
          if (!isConflict(error)) throw error;
        }
      }
      const lease = await this.#client.get(this.#ref(), { timeoutMs, signal });
      if (lease === undefined) {
        const created = await this.#client.create(this.#newLease(started), { timeoutMs, signal });
        return this.#wrote(created, started);
      }
      this.#lease = lease;
      const spec = LeaseSpec.safeParse(lease.spec ?? {});
      const record: LeaseSpec = spec.success ? spec.data : {};
      const holder = record.holderIdentity ?? '';
      this.#observe(record, lease.metadata.resourceVersion);
      const observed = this.#observed;
      if (this.#leading !== undefined && holder !== this.#identity) {
        // Someone else wrote the lease while we believed we led: stop at once.
        this.#endLeadership('lost');
        return false;
      }
      if (holder !== '' && holder !== this.#identity && observed !== undefined) {
        if (observed.at + observed.durationMs > Date.now()) return false;
        this.#logger.info({ previous: holder }, 'lease expired; taking it over');
      }
      return this.#wrote(
        await this.#client.update(this.#renewed(lease, started), { timeoutMs, signal }),
        started,
      );
    } catch (error) {
      if (isConflict(error)) {
        this.#logger.debug('lease changed concurrently');
      } else if (!signal.aborted) {
        this.#logger.warn({ err: error }, 'lease request failed');
      }
      this.#lease = undefined;
      return false;
    }
  }

  #wrote(lease: LiveKubeObject, started: number): boolean {
    this.#lease = lease;
    this.#renewedAt = started;
    this.#lastRenewalTookMs = Date.now() - started;
    const spec = LeaseSpec.safeParse(lease.spec ?? {});
    if (spec.success) this.#observe(spec.data, lease.metadata.resourceVersion);
    return true;
  }

  #observe(record: LeaseSpec, resourceVersion: string): void {
    const holder = record.holderIdentity ?? '';
    const key = `${resourceVersion}|${holder}|${record.renewTime ?? ''}`;
    if (this.#observed?.key !== key) {
      this.#observed = { key, holder, durationMs: (record.leaseDurationSeconds ?? 0) * 1000, at: Date.now() };
    }
    if (holder !== '' && holder !== this.#reportedLeader) {
      this.#reportedLeader = holder;
      if (holder !== this.#identity) this.#logger.info({ leader: holder }, 'new leader observed');
      try {
        this.#callbacks?.onNewLeader?.(holder);
      } catch (error) {
        this.#logger.error({ err: error }, 'onNewLeader threw');
      }
    }
  }

  /** The lease with this replica as holder, renewed now (acquired now if it held it not). */
  #renewed(lease: LiveKubeObject, now: number): LiveKubeObject {
    const parsed = LeaseSpec.safeParse(lease.spec ?? {});
    const record: LeaseSpec = parsed.success ? parsed.data : {};
    const holding = record.holderIdentity === this.#identity;
    return {
      ...lease,
      spec: {
        ...record,
        holderIdentity: this.#identity,
        leaseDurationSeconds: this.#leaseSeconds(),
        renewTime: formatMicroTime(now),
        acquireTime: holding && record.acquireTime ? record.acquireTime : formatMicroTime(now),
        leaseTransitions: (record.leaseTransitions ?? 0) + (holding || !record.holderIdentity ? 0 : 1),
      },
    };
  }

  #newLease(now: number) {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.#name, namespace: this.#namespace, labels: {}, annotations: {} },
      spec: {
        holderIdentity: this.#identity,
        leaseDurationSeconds: this.#leaseSeconds(),
        acquireTime: formatMicroTime(now),
        renewTime: formatMicroTime(now),
        leaseTransitions: 0,
      },
    };
  }

  #leaseSeconds(): number {
    return Math.max(1, Math.ceil(this.#leaseDurationMs / 1000));
  }

  #ref() {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: this.#namespace,
      name: this.#name,
    };
  }

  #endLeadership(why: 'lost' | 'released' | 'stopped'): void {
    const leading = this.#leading;
    if (leading === undefined) return;
    this.#leading = undefined;
    leading.abort(new Error(`leadership ${why}`));
    this.#logger.info({ why }, 'stopped leading');
    try {
      this.#callbacks?.onStoppedLeading();
    } catch (error) {
      this.#logger.error({ err: error }, 'onStoppedLeading threw');
    }
  }

  #sleep(ms: number): Promise<void> {
    const signal = this.#stopping.signal;
    const leading = this.#leading?.signal;
    return new Promise((resolve) => {
      if (signal.aborted || leading?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        leading?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      leading?.addEventListener('abort', done, { once: true });
    });
  }
}
