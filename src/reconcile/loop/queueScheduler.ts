// The clock and timers the work queue runs on, handed to it by its caller as controller-runtime's
// priority queue takes its clock: the agent passes the real one, tests a clock they move by hand.

/** Cancels a timer; calling it after the timer fired does nothing. */
export type CancelTimer = () => void;

export interface QueueScheduler {
  /** A monotonic clock in milliseconds. */
  now(): number;
  /**
   * Calls `callback` once, `delayMs` from now. A timer that `holdsProcess` keeps the process
   * alive until it fires; the others never delay the process's exit.
   */
  after(delayMs: number, callback: () => void, holdsProcess?: boolean): CancelTimer;
  /** Calls `callback` from a fresh turn of the event loop, once pending timers and I/O had theirs. */
  nextTurn(callback: () => void): void;
}

/** The process's own clock and timers. */
export const realQueueScheduler: QueueScheduler = {
  now: () => performance.now(),
  after: (delayMs, callback, holdsProcess = false) => {
    const timer = setTimeout(callback, delayMs);
    if (!holdsProcess) timer.unref();
    return () => clearTimeout(timer);
  },
  nextTurn: (callback) => {
    setImmediate(callback);
  },
};
