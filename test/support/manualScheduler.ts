// A work queue scheduler whose clock moves only when the test moves it: delayed adds and drain
// bounds fire in `advance`, the queue's next turns run in `settle`, and no test waits in real time.
import type { CancelTimer, QueueScheduler } from '../../src/reconcile/loop/queueScheduler.ts';

interface PendingTimer {
  readonly due: number;
  readonly order: number;
  readonly callback: () => void;
}

export class ManualScheduler implements QueueScheduler {
  #now: number;
  #order = 0;
  readonly #timers = new Set<PendingTimer>();
  readonly #turns: (() => void)[] = [];

  constructor(startMs = 1_000) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  after(delayMs: number, callback: () => void): CancelTimer {
    const timer = { due: this.#now + delayMs, order: this.#order++, callback };
    this.#timers.add(timer);
    return () => {
      this.#timers.delete(timer);
    };
  }

  nextTurn(callback: () => void): void {
    this.#turns.push(callback);
  }

  /** Timers not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /**
   * Lets every settled promise's callbacks run, then the next turns they asked for, until the
   * queue asks for no more. A worker awaiting something the test has not released stays waiting.
   */
  async settle(): Promise<void> {
    for (;;) {
      // One real turn of the event loop runs every pending promise callback; no time passes here.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const turns = this.#turns.splice(0);
      if (turns.length === 0) return;
      for (const turn of turns) turn();
    }
  }

  /** Moves the clock by `ms`, firing each timer that falls due in order, settling after each. */
  async advance(ms: number): Promise<void> {
    const until = this.#now + ms;
    await this.settle();
    for (;;) {
      const next = this.#earliest();
      if (next === undefined || next.due > until) break;
      this.#timers.delete(next);
      this.#now = Math.max(this.#now, next.due);
      next.callback();
      await this.settle();
    }
    this.#now = until;
  }

  #earliest(): PendingTimer | undefined {
    let earliest: PendingTimer | undefined;
    for (const timer of this.#timers)
      if (
        earliest === undefined ||
        timer.due < earliest.due ||
        (timer.due === earliest.due && timer.order < earliest.order)
      )
        earliest = timer;
    return earliest;
  }
}
