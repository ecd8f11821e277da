// The agent's one retry of what it cannot work without (the listener at registration, the digest
// key, the inventories, the suspensions): tried again and again, with a doubling wait, until it
// succeeds or the agent stops or loses its lease. There is no last attempt: without it, the agent
// can only wait, and each failure is reported so that an operator sees why.
import { sleep } from '../sleep.ts';

export interface RetryUntilAbortedOptions {
  /** Ends the retries, and a wait at once. */
  readonly signal: AbortSignal;
  /** The wait after the first failure; each next one doubles. */
  readonly firstDelayMs: number;
  /** The longest wait. */
  readonly maxDelayMs?: number;
  /**
   * Told of each failure, before its wait: not of one that came with the abort (the abort's own).
   * What it throws ends the retries with that error (a failure no retry fixes).
   */
  readonly onFailure: (error: unknown, attempt: number, delayMs: number) => void;
}

const MAX_DELAY_MS = 30_000;

/**
 * Calls `attempt` until it returns a value or the signal aborts; undefined (nothing yet) is tried
 * again after the wait, unreported. Returns the value, or undefined once the signal has ended it.
 */
export async function retryUntilAborted<T>(
  attempt: () => Promise<T | undefined>,
  options: RetryUntilAbortedOptions,
): Promise<T | undefined> {
  const { signal, firstDelayMs, maxDelayMs = MAX_DELAY_MS, onFailure } = options;
  for (let attempts = 1; !signal.aborted; attempts++) {
    const delayMs = Math.min(maxDelayMs, firstDelayMs * 2 ** (attempts - 1));
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      if (signal.aborted) return undefined;
      onFailure(error, attempts, delayMs);
    }
    await sleep(delayMs, signal).catch(() => undefined);
  }
  return undefined;
}
