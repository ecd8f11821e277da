// Every wait of a run is bounded: a stuck phase fails the run instead of hanging it.
import { sleep } from '../../src/sleep.ts';

/**
 * Polls `probe` until it gives a value. Unlike the tests' `eventually`, a probe that throws ends
 * the wait at once: an agent that is gone fails a run of hours now, not at its timeout.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
