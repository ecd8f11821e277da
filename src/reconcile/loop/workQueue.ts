// A work queue in the manner of client-go's: one key per deployment, deduplicated, never worked
// on twice at once, bounded concurrency, per-key exponential backoff, and a bound on its size.
// Two priorities, as controller-runtime's priority queue: bulk work (the first listing, a resync)
// is low, so that changes and repairs go ahead of thousands of keys queued at once; a workload's
// status moving and a rollout's recheck are low too, so that while bulk work waits its moves gather
// into one run and no outcome is written ahead of a deployment not yet applied.
// It reports what client-go's workqueue reports, through the small interface it is given, and runs
// on the clock and timers its caller hands it.
import type { Logger } from 'pino';
import type { CancelTimer, QueueScheduler } from './queueScheduler.ts';

/** client-go's workqueue MetricsProvider, reduced to what this queue reports. */
export interface WorkQueueMetrics {
  /** A key became pending (not counted when it already was). */
  add(): void;
  /** Keys pending: queued, plus those added again while being processed. */
  depth(value: number): void;
  /** From becoming pending to being handed to the worker. */
  queueDuration(seconds: number): void;
  workDuration(seconds: number): void;
  retry(): void;
  /** Registers how to read the work in progress, sampled when the metrics are read. */
  sampleProcessing(sampler: () => { unfinishedSeconds: number; longestRunningSeconds: number }): void;
}

export interface WorkQueueOptions {
  readonly concurrency: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly maxKeys: number;
  readonly logger: Logger;
  readonly onDropped?: (key: string) => void;
  readonly random?: () => number;
  readonly metrics?: WorkQueueMetrics;
  /** The logger for lines about one key (a child logger carrying the key's own fields). */
  readonly keyLogger?: (key: string) => Logger;
  /** The clock and timers it runs on: `realQueueScheduler` in the agent, one moved by hand in tests. */
  readonly scheduler: QueueScheduler;
}

export type Worker = (key: string) => Promise<void>;

/** `low`: bulk work that waits while any `normal` key is pending. */
export type QueuePriority = 'normal' | 'low';

const PRIORITIES: readonly QueuePriority[] = ['normal', 'low'];

interface DelayedAdd {
  readonly cancel: CancelTimer;
  readonly due: number;
}

/** A delayed add's entry: the key and the priority it will be added at. */
function delayedKey(key: string, priority: QueuePriority): string {
  return `${priority}:${key}`;
}

export class WorkQueue {
  readonly #options: WorkQueueOptions;
  readonly #scheduler: QueueScheduler;
  readonly #queue: string[] = [];
  /** Low-priority keys, in order; an entry whose key was since raised or taken is skipped. */
  readonly #background: string[] = [];
  /** Each queued key and the priority it waits at. */
  readonly #queued = new Map<string, QueuePriority>();
  readonly #processing = new Set<string>();
  /** Added again while being processed: requeued, at the higher priority asked, once it finishes. */
  readonly #dirty = new Map<string, QueuePriority>();
  readonly #failures = new Map<string, number>();
  /** Delayed adds, one per key and priority: a low one never stands in for a normal one. */
  readonly #timers = new Map<string, DelayedAdd>();
  readonly #idle: (() => void)[] = [];
  /** When each pending key became pending, and when each key in progress started. */
  readonly #pendingSince = new Map<string, number>();
  readonly #startedAt = new Map<string, number>();
  #worker: Worker | undefined;
  #shuttingDown = false;
  #pumpScheduled = false;

  constructor(options: WorkQueueOptions) {
    this.#options = options;
    this.#scheduler = options.scheduler;
    options.metrics?.sampleProcessing(() => this.#processingSample());
  }

  /** Starts processing with `worker`; each key is handed to at most one call at a time. */
  start(worker: Worker): void {
    this.#worker = worker;
    this.#pump();
  }

  /**
   * Queues a key now; returns false when the queue is shutting down or full. A key waiting at low
   * priority is raised by a normal add; it is never lowered.
   */
  add(key: string, priority: QueuePriority = 'normal'): boolean {
    if (this.#shuttingDown) return false;
    if (this.#processing.has(key)) {
      const dirty = this.#dirty.get(key);
      if (dirty !== 'normal') this.#dirty.set(key, priority);
      if (dirty === undefined) this.#becamePending(key);
      return true;
    }
    const queued = this.#queued.get(key);
    if (queued !== undefined) {
      if (queued === 'low' && priority === 'normal') {
        this.#queued.set(key, 'normal');
        this.#queue.push(key);
        this.#pump();
      }
      return true;
    }
    if (!this.#enqueue(key, priority)) return false;
    this.#becamePending(key);
    this.#pump();
    return true;
  }

  /**
   * Queues a key after a delay, at `priority`; a shorter pending delay for the same key and
   * priority wins. Every delayed add of a key is dropped when the key is handed to the worker: the
   * run reads what they were waiting for, and its outcome asks for the next one.
   */
  addAfter(key: string, delayMs: number, priority: QueuePriority = 'normal'): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key, priority);
      return;
    }
    const timerKey = delayedKey(key, priority);
    const due = this.#now() + delayMs;
    const existing = this.#timers.get(timerKey);
    if (existing) {
      if (existing.due <= due) return;
      existing.cancel();
    }
    const cancel = this.#scheduler.after(delayMs, () => {
      this.#timers.delete(timerKey);
      this.add(key, priority);
    });
    this.#timers.set(timerKey, { cancel, due });
  }

  /** Queues a key after its next exponential, jittered backoff. */
  addRateLimited(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const ceiling = Math.min(this.#options.backoffMaxMs, this.#options.backoffBaseMs * 2 ** (failures - 1));
    // Half fixed, half jitter: spreads retries without ever retrying at once.
    const delay = Math.round(ceiling / 2 + (this.#options.random ?? Math.random)() * (ceiling / 2));
    this.#options.metrics?.retry();
    this.addAfter(key, delay);
    return delay;
  }

  /** Resets a key's backoff after a success. */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  get length(): number {
    return this.#queued.size;
  }

  get inFlight(): number {
    return this.#processing.size;
  }

  /** Stops taking keys, drops delayed ones, and waits (at most `drainMs`) for in-flight work. */
  async shutDown(drainMs: number): Promise<boolean> {
    this.#shuttingDown = true;
    for (const { cancel } of this.#timers.values()) cancel();
    this.#timers.clear();
    this.#queue.length = 0;
    this.#background.length = 0;
    this.#queued.clear();
    this.#dirty.clear();
    this.#pendingSince.clear();
    this.#reportDepth();
    if (this.#processing.size === 0) return true;
    let cancel: CancelTimer | undefined;
    const drained = await Promise.race([
      new Promise<boolean>((resolve) => this.#idle.push(() => resolve(true))),
      new Promise<boolean>((resolve) => {
        // Holds the process: the caller waits for the drain before it lets go of the Lease.
        cancel = this.#scheduler.after(drainMs, () => resolve(false), true);
      }),
    ]);
    cancel?.();
    return drained;
  }

  #pump(): void {
    const worker = this.#worker;
    if (!worker) return;
    while (!this.#shuttingDown && this.#processing.size < this.#options.concurrency) {
      const key = this.#next();
      if (key === undefined) break;
      this.#queued.delete(key);
      this.#processing.add(key);
      this.#dropDelayed(key);
      const now = this.#now();
      const since = this.#pendingSince.get(key);
      this.#pendingSince.delete(key);
      if (since !== undefined) this.#options.metrics?.queueDuration((now - since) / 1000);
      this.#startedAt.set(key, now);
      this.#reportDepth();
      void this.#run(worker, key);
    }
  }

  /**
   * Drops a key's delayed adds as it starts: a rollout recheck or a status settle due after a run
   * that has just read the cache would only run it again (the run's outcome sets the next).
   */
  #dropDelayed(key: string): void {
    for (const priority of PRIORITIES) {
      const timerKey = delayedKey(key, priority);
      const delayed = this.#timers.get(timerKey);
      if (delayed === undefined) continue;
      delayed.cancel();
      this.#timers.delete(timerKey);
    }
  }

  /** The next key to hand out: every normal one first, then low ones, each in order. */
  #next(): string | undefined {
    return this.#takeFrom(this.#queue, 'normal') ?? this.#takeFrom(this.#background, 'low');
  }

  /** The first key of `list` still waiting at `priority`; entries left by a raise are dropped. */
  #takeFrom(list: string[], priority: QueuePriority): string | undefined {
    while (list.length > 0) {
      const key = list.shift() as string;
      if (this.#queued.get(key) === priority) return key;
    }
    return undefined;
  }

  /** Appends a key unless the queue is full; the caller counts it. */
  #enqueue(key: string, priority: QueuePriority): boolean {
    if (this.#queued.size >= this.#options.maxKeys) {
      this.#logFor(key).warn({ maxKeys: this.#options.maxKeys }, 'work queue full; key dropped');
      this.#options.onDropped?.(key);
      this.#pendingSince.delete(key);
      this.#reportDepth();
      return false;
    }
    this.#queued.set(key, priority);
    (priority === 'normal' ? this.#queue : this.#background).push(key);
    return true;
  }

  #becamePending(key: string): void {
    this.#pendingSince.set(key, this.#now());
    this.#options.metrics?.add();
    this.#reportDepth();
  }

  #reportDepth(): void {
    this.#options.metrics?.depth(this.#queued.size + this.#dirty.size);
  }

  #processingSample(): { unfinishedSeconds: number; longestRunningSeconds: number } {
    const now = this.#now();
    let unfinished = 0;
    let longest = 0;
    for (const started of this.#startedAt.values()) {
      const seconds = (now - started) / 1000;
      unfinished += seconds;
      longest = Math.max(longest, seconds);
    }
    return { unfinishedSeconds: unfinished, longestRunningSeconds: longest };
  }

  #now(): number {
    return this.#scheduler.now();
  }

  #logFor(key: string): Logger {
    return this.#options.keyLogger?.(key) ?? this.#options.logger.child({ key });
  }

  async #run(worker: Worker, key: string): Promise<void> {
    try {
      await worker(key);
    } catch (error) {
      // Workers handle their own errors; this is a last line so the queue never stalls.
      this.#logFor(key).error({ err: error }, 'work queue worker threw');
    } finally {
      const started = this.#startedAt.get(key);
      this.#startedAt.delete(key);
      if (started !== undefined) this.#options.metrics?.workDuration((this.#now() - started) / 1000);
      this.#processing.delete(key);
      // Added again while it ran: queued now, already counted as an add (as client-go's Done).
      const dirty = this.#dirty.get(key);
      this.#dirty.delete(key);
      if (dirty !== undefined && !this.#shuttingDown) this.#enqueue(key, dirty);
      this.#reportDepth();
      if (this.#processing.size === 0 && this.#shuttingDown)
        for (const resolve of this.#idle.splice(0)) resolve();
      this.#pumpSoon();
    }
  }

  /**
   * The next keys after one finished, from a fresh turn of the event loop. A reconcile answered
   * wholly from the cache finishes without I/O, and each next one started at once would chain
   * microtasks that no timer or socket can interrupt: at the end of a cold sync of 10,000
   * deployments such a chain held the process for 28 s, past the Lease's renew deadline.
   */
  #pumpSoon(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    this.#scheduler.nextTurn(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }
}
