// What the agent cannot work without is tried until it comes or the agent stops: each failure
// reported with a doubling wait, nothing reported for the abort itself, and a failure no retry
// fixes ending it at once.
import { describe, expect, it } from 'vitest';
import { retryUntilAborted } from '../../../src/manager/retryUntilAborted.ts';

type Failure = { error: unknown; attempt: number; delayMs: number };

/** An attempt that fails `failures` times (undefined answers as given), then returns `value`. */
function flaky<T>(answers: readonly ('fail' | 'nothing')[], value: T) {
  let calls = 0;
  const attempt = async (): Promise<T | undefined> => {
    const answer = answers[calls++];
    if (answer === 'fail') throw new Error(`failure ${calls}`);
    if (answer === 'nothing') return undefined;
    return value;
  };
  return { attempt, calls: () => calls };
}

describe('retryUntilAborted', () => {
  it('returns the first value, each failure reported with its attempt and a doubling wait up to the longest', async () => {
    const failures: Failure[] = [];
    const { attempt, calls } = flaky(['fail', 'fail', 'fail', 'fail'], 'key');
    const value = await retryUntilAborted(attempt, {
      signal: new AbortController().signal,
      firstDelayMs: 1,
      maxDelayMs: 4,
      onFailure: (error, attempt, delayMs) => failures.push({ error, attempt, delayMs }),
    });
    expect(value).toBe('key');
    expect(calls()).toBe(5);
    expect(failures.map(({ attempt, delayMs }) => [attempt, delayMs])).toEqual([
      [1, 1],
      [2, 2],
      [3, 4],
      [4, 4],
    ]);
    expect(failures.map(({ error }) => (error as Error).message)).toEqual([
      'failure 1',
      'failure 2',
      'failure 3',
      'failure 4',
    ]);
  });

  it('tries again after an attempt that has nothing yet, reporting no failure', async () => {
    const failures: Failure[] = [];
    const { attempt, calls } = flaky(['nothing', 'fail', 'nothing'], 7);
    const value = await retryUntilAborted(attempt, {
      signal: new AbortController().signal,
      firstDelayMs: 1,
      onFailure: (error, attempt, delayMs) => failures.push({ error, attempt, delayMs }),
    });
    expect(value).toBe(7);
    expect(calls()).toBe(4);
    expect(failures.map(({ attempt }) => attempt)).toEqual([2]);
  });

  it('ends with undefined when the signal aborts during a wait, without waiting it out', async () => {
    const stop = new AbortController();
    const failures: number[] = [];
    const started = performance.now();
    const result = retryUntilAborted(
      async () => {
        throw new Error('unreachable');
      },
      {
        signal: stop.signal,
        firstDelayMs: 60_000,
        onFailure: (_error, attempt) => {
          failures.push(attempt);
          setTimeout(() => stop.abort(), 10);
        },
      },
    );
    expect(await result).toBeUndefined();
    expect(failures).toEqual([1]);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('does not report the failure that comes with the abort', async () => {
    const stop = new AbortController();
    const failures: number[] = [];
    const result = await retryUntilAborted(
      async () => {
        stop.abort();
        throw new Error('aborted by the lost lease');
      },
      { signal: stop.signal, firstDelayMs: 1, onFailure: (_error, attempt) => failures.push(attempt) },
    );
    expect(result).toBeUndefined();
    expect(failures).toEqual([]);
  });

  it('makes no attempt once the signal has aborted', async () => {
    const stop = new AbortController();
    stop.abort();
    const { attempt, calls } = flaky([], 'never');
    expect(
      await retryUntilAborted(attempt, { signal: stop.signal, firstDelayMs: 1, onFailure: () => {} }),
    ).toBe(undefined);
    expect(calls()).toBe(0);
  });

  it('ends with what the failure report throws: a failure no retry fixes', async () => {
    const { attempt, calls } = flaky(['fail', 'fail'], 'late');
    const refused = new Error('refused for good');
    await expect(
      retryUntilAborted(attempt, {
        signal: new AbortController().signal,
        firstDelayMs: 1,
        onFailure: () => {
          throw refused;
        },
      }),
    ).rejects.toBe(refused);
    expect(calls()).toBe(1);
  });
});
