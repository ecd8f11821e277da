// The client-side request rate limit of client-go (`--kube-api-qps` / `--kube-api-burst`): a token
// bucket that lets `burst` requests through at once and `qps` per second after that, so that a
// large cold sync or a resync of every deployment cannot flood the API server. Watches do not
// take a token (client-go's limiter applies to requests, and a watch is a long-lived one).
import { sleep } from '../sleep.ts';

export interface RateLimit {
  /** Sustained requests per second. 0 or less: no limit. */
  readonly qps: number;
  /** Requests allowed at once after a quiet period. */
  readonly burst: number;
}

export class TokenBucket {
  readonly #qps: number;
  readonly #burst: number;
  readonly #now: () => number;
  #tokens: number;
  #updatedAt: number;
  /** Reservations queue in order: each waiter is handed the moment its token will exist. */
  #waiting = 0;

  constructor(limit: RateLimit, now: () => number = () => performance.now()) {
    this.#qps = limit.qps;
    this.#burst = Math.max(1, limit.burst);
    this.#now = now;
    this.#tokens = this.#burst;
    this.#updatedAt = now();
  }

  get unlimited(): boolean {
    return this.#qps <= 0;
  }

  /**
   * Takes a token now, or reserves the next one: returns how many milliseconds to wait for it.
   * A reservation cannot be given back, as with client-go's limiter.
   */
  reserve(): number {
    if (this.unlimited) return 0;
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#updatedAt) / 1000) * this.#qps);
    this.#updatedAt = now;
    this.#tokens -= 1;
    if (this.#tokens >= 0) return 0;
    return (-this.#tokens / this.#qps) * 1000;
  }

  /** Waits for a token; an aborted signal ends the wait with its reason. */
  async take(signal?: AbortSignal): Promise<void> {
    const waitMs = this.reserve();
    if (waitMs <= 0) return;
    this.#waiting++;
    try {
      await sleep(waitMs, signal);
    } finally {
      this.#waiting--;
    }
  }

  /** Requests waiting for a token now (for a gauge: a queue here means the limit is binding). */
  get waiting(): number {
    return this.#waiting;
  }
}
