// The agent-change rate: how many deployments may start a rollout that comes from the agent itself
// (a new version or render configuration that renders their pod templates differently), not from
// a new revision. At most `rate` start in any window (a sliding window: one minute unless told),
// in the order they were first held; the rest wait, each told when its turn should come.

/** The shortest wait a held deployment is told: it asks again no sooner. */
const MIN_RETRY_MS = 100;

export interface AgentChangeGateOptions {
  /** Agent changes started in any window; 0: unlimited. */
  readonly rate: number;
  /** The window's length (default one minute). */
  readonly windowMs?: number | undefined;
  readonly now?: (() => number) | undefined;
}

/** The answer to a deployment asking to start its agent change now. */
export type AgentChangeTurn =
  | { readonly admitted: true /** How long it was held first (0: not at all). */; readonly heldMs: number }
  | {
      readonly admitted: false;
      /** When to ask again: when its turn should come, as the window stands now. */
      readonly retryAfterMs: number;
      /** How many wait ahead of it. */
      readonly ahead: number;
    };

interface Waiting {
  /** When it was first held: its place in line. */
  readonly since: number;
  /** When it was told to ask again. */
  dueAt: number;
}

export class AgentChangeGate {
  readonly #rate: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  /** Start times within the window, oldest first. */
  #started: number[] = [];
  /** Deployments held, in the order first held (a Map keeps insertion order). */
  readonly #waiting = new Map<string, Waiting>();

  constructor(options: AgentChangeGateOptions) {
    if (!Number.isInteger(options.rate) || options.rate < 0)
      throw new RangeError(`the agent change rate must be a whole number ≥ 0, not ${options.rate}`);
    this.#rate = options.rate;
    this.#windowMs = options.windowMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** How many deployments wait for their turn. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Whether this deployment waits for its turn. */
  isWaiting(deploymentId: string): boolean {
    return this.#waiting.has(deploymentId);
  }

  /**
   * A deployment asks to start its agent change now: admitted (counted in the window) when fewer
   * than the rate started in the last window and no deployment held before it still waits;
   * otherwise held, in line, with the time to ask again.
   */
  ask(deploymentId: string): AgentChangeTurn {
    const now = this.#now();
    if (this.#rate === 0) {
      this.#waiting.delete(deploymentId);
      return { admitted: true, heldMs: 0 };
    }
    while (this.#started.length > 0 && (this.#started[0] ?? 0) <= now - this.#windowMs) this.#started.shift();
    this.#dropStale(deploymentId, now);
    const own = this.#waiting.get(deploymentId) ?? { since: now, dueAt: now };
    this.#waiting.set(deploymentId, own);
    let ahead = 0;
    for (const id of this.#waiting.keys()) {
      if (id === deploymentId) break;
      ahead += 1;
    }
    const free = this.#rate - this.#started.length;
    if (ahead < free) {
      this.#waiting.delete(deploymentId);
      this.#started.push(now);
      return { admitted: true, heldMs: now - own.since };
    }
    const retryAfterMs = Math.max(MIN_RETRY_MS, this.#turnAt(ahead - free, free, now) - now);
    own.dueAt = now + retryAfterMs;
    return { admitted: false, retryAfterMs, ahead };
  }

  /** The deployment no longer waits (its change was applied otherwise, or it is gone). */
  forget(deploymentId: string): void {
    this.#waiting.delete(deploymentId);
  }

  /**
   * When the k-th slot after the free ones opens: the slots of the window open one window after
   * their start (the free ones are taken now, by those ahead), and each later round a window later.
   */
  #turnAt(k: number, free: number, now: number): number {
    const opens = [...this.#started, ...Array<number>(Math.max(0, free)).fill(now)]
      .sort((a, b) => a - b)
      .map((start) => start + this.#windowMs);
    const round = Math.floor(k / this.#rate);
    return (opens[k % this.#rate] ?? now + this.#windowMs) + round * this.#windowMs;
  }

  /**
   * A deployment that did not come back a window after it was told to (suspended, deleted, its
   * change made moot) gives up its place, so that it holds up no one behind it.
   */
  #dropStale(asking: string, now: number): void {
    for (const [id, waiting] of this.#waiting)
      if (id !== asking && waiting.dueAt + this.#windowMs < now) this.#waiting.delete(id);
  }
}
