// A work queue in the manner of client-go's: one key per deployment, deduplicated, never worked
// on twice at once, bounded concurrency, per-key exponential backoff, and a bound on its size.
import type { Logger } from 'pino';

export interface WorkQueueOptions {
  readonly concurrency: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly maxKeys: number;
  readonly logger: Logger;
  readonly onDropped?: (key: string) => void;
  readonly random?: () => number;
}

export type Worker = (key: string) => Promise<void>;

export class WorkQueue {
  readonly #options: WorkQueueOptions;
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  readonly #processing = new Set<string>();
  /** Added again while being processed: requeued once it finishes. */
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Map<string, { readonly timer: NodeJS.Timeout; readonly due: number }>();
  readonly #idle: (() => void)[] = [];
  #worker: Worker | undefined;
  #shuttingDown = false;

  constructor(options: WorkQueueOptions) {
    this.#options = options;
  }

  /** Starts processing with `worker`; each key is handed to at most one call at a time. */
  start(worker: Worker): void {
    this.#worker = worker;
    this.#pump();
  }

  /** Queues a key now; returns false when the queue is shutting down or full. */
  add(key: string): boolean {
    if (this.#shuttingDown) return false;
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      return true;
    }
    if (this.#queued.has(key)) return true;
    if (this.#queued.size >= this.#options.maxKeys) {
      this.#options.logger.warn({ key, maxKeys: this.#options.maxKeys }, 'work queue full; key dropped');
      this.#options.onDropped?.(key);
      return false;
    }
    this.#queued.add(key);
    this.#queue.push(key);
    this.#pump();
    return true;
  }

  /** Queues a key after a delay; a shorter pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const due = Date.now() + delayMs;
    const existing = this.#timers.get(key);
    if (existing) {
      if (existing.due <= due) return;
      clearTimeout(existing.timer);
    }
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.#timers.set(key, { timer, due });
  }

  /** Queues a key after its next exponential, jittered backoff. */
  addRateLimited(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const ceiling = Math.min(this.#options.backoffMaxMs, this.#options.backoffBaseMs * 2 ** (failures - 1));
    // Half fixed, half jitter: spreads retries without ever retrying at once.
    const delay = Math.round(ceiling / 2 + (this.#options.random ?? Math.random)() * (ceiling / 2));
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
    return this.#queue.length;
  }

  get inFlight(): number {
    return this.#processing.size;
  }

  /** Stops taking keys, drops delayed ones, and waits (at most `drainMs`) for in-flight work. */
  async shutDown(drainMs: number): Promise<boolean> {
    this.#shuttingDown = true;
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#queue.length = 0;
    this.#queued.clear();
    this.#dirty.clear();
    if (this.#processing.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      new Promise<boolean>((resolve) => this.#idle.push(() => resolve(true))),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), drainMs);
      }),
    ]);
    clearTimeout(timer);
    return drained;
  }

  #pump(): void {
    const worker = this.#worker;
    if (!worker) return;
    while (
      !this.#shuttingDown &&
      this.#processing.size < this.#options.concurrency &&
      this.#queue.length > 0
    ) {
      const key = this.#queue.shift() as string;
      this.#queued.delete(key);
      this.#processing.add(key);
      void this.#run(worker, key);
    }
  }

  async #run(worker: Worker, key: string): Promise<void> {
    try {
      await worker(key);
    } catch (error) {
      // Workers handle their own errors; this is a last line so the queue never stalls.
      this.#options.logger.error({ err: error, key }, 'work queue worker threw');
    } finally {
      this.#processing.delete(key);
      if (this.#dirty.delete(key)) this.add(key);
      if (this.#processing.size === 0 && this.#shuttingDown)
        for (const resolve of this.#idle.splice(0)) resolve();
      this.#pump();
    }
  }
}
