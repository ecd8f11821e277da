// The work queue on a clock the test moves: order, priorities, deduplication, concurrency,
// backoff, delayed adds and the drain, with no real waiting.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { realQueueScheduler } from '../../../../src/reconcile/loop/queueScheduler.ts';
import { WorkQueue, type WorkQueueOptions } from '../../../../src/reconcile/loop/workQueue.ts';
import { ManualScheduler } from '../../../support/manualScheduler.ts';

const logger = pino({ level: 'silent' });

const queue = (options: Partial<WorkQueueOptions> = {}) => {
  const scheduler = new ManualScheduler();
  const q = new WorkQueue({
    concurrency: 2,
    backoffBaseMs: 10,
    backoffMaxMs: 80,
    maxKeys: 100,
    logger,
    scheduler,
    ...options,
  });
  /** Work that takes `ms` on the test's clock. */
  const work = (ms: number) => new Promise<void>((resolve) => scheduler.after(ms, resolve));
  return { q, scheduler, work };
};

/** A queue of one worker that records the keys it is handed, held on the first run of `held` until released. */
const recording = (held: string) => {
  const { q, scheduler } = queue({ concurrency: 1 });
  const seen: string[] = [];
  let release: () => void = () => {};
  const blocked = new Promise<void>((resolve) => {
    release = resolve;
  });
  q.start(async (key) => {
    const first = !seen.includes(key);
    seen.push(key);
    if (key === held && first) await blocked;
  });
  /** Lets the held run finish and every key queued behind it run. */
  const finish = async () => {
    release();
    await scheduler.settle();
  };
  return { q, scheduler, seen, finish };
};

describe('work queue: order', () => {
  it('hands out every normal key before low ones', async () => {
    const { q, seen, finish } = recording('first');
    q.add('first');
    for (const key of ['bulk-1', 'bulk-2']) q.add(key, 'low');
    q.add('change');
    await finish();
    expect(seen).toEqual(['first', 'change', 'bulk-1', 'bulk-2']);
  });

  it('raises a low key added again as normal', async () => {
    const { q, seen, finish } = recording('first');
    q.add('first');
    for (const key of ['bulk-1', 'bulk-2']) q.add(key, 'low');
    q.add('bulk-2'); // a change to a deployment the bulk had queued
    expect(q.length).toBe(2);
    await finish();
    expect(seen).toEqual(['first', 'bulk-2', 'bulk-1']);
  });

  it('never lowers a normal key added again as low', async () => {
    const { q, seen, finish } = recording('first');
    q.add('first');
    q.add('bulk', 'low');
    q.add('change');
    q.add('change', 'low');
    await finish();
    expect(seen).toEqual(['first', 'change', 'bulk']);
  });

  it('requeues a key added while it runs at the higher priority asked', async () => {
    const { q, scheduler, seen, finish } = recording('k');
    q.add('k');
    await scheduler.settle();
    q.add('bulk', 'low');
    q.add('k', 'low');
    q.add('k');
    await finish();
    expect(seen).toEqual(['k', 'k', 'bulk']);
  });

  it('hands out the next key from a fresh turn, not in the finishing one', async () => {
    const { q, scheduler } = queue({ concurrency: 1 });
    const seen: string[] = [];
    q.start(async (key) => {
      seen.push(key);
    });
    q.add('a');
    q.add('b');
    for (let i = 0; i < 20; i++) await Promise.resolve(); // 'a' has finished: only microtasks ran
    expect(seen).toEqual(['a']);
    await scheduler.settle();
    expect(seen).toEqual(['a', 'b']);
  });

  it('lets timers run between keys whose work finishes without I/O, on the real scheduler', async () => {
    // Reconciles answered from the cache settle in microtasks; chained, 10,000 of them held the
    // process for 28 s at the end of a cold sync and the Lease went unrenewed.
    const { q } = queue({ concurrency: 4, maxKeys: 1_000, scheduler: realQueueScheduler });
    let done = 0;
    let doneWhenTimerFired: number | undefined;
    setTimeout(() => {
      doneWhenTimerFired = done;
    }, 0);
    const all = new Promise<void>((resolve) => {
      q.start(async () => {
        const until = performance.now() + 1;
        while (performance.now() < until); // 1 ms of CPU, no I/O
        if (++done === 400) resolve();
      });
    });
    for (let i = 0; i < 400; i++) q.add(`k${i}`);
    await all;
    expect(doneWhenTimerFired).toBeDefined();
    expect(doneWhenTimerFired).toBeLessThan(50);
  });
});

describe('work queue: keys and workers', () => {
  it('deduplicates keys waiting in the queue', async () => {
    const { q, seen, finish } = recording('first');
    q.add('first');
    for (let i = 0; i < 5; i++) q.add('a');
    expect(q.length).toBe(1);
    await finish();
    expect(seen).toEqual(['first', 'a']);
  });

  it('never works on one key twice at once', async () => {
    const { q, scheduler, work } = queue({ concurrency: 4 });
    let running = 0;
    let maxRunning = 0;
    q.start(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await work(20);
      running--;
    });
    q.add('k');
    await scheduler.advance(5);
    q.add('k');
    q.add('k');
    await scheduler.advance(100);
    expect(maxRunning).toBe(1);
  });

  it('runs a key added while it runs once more after it finishes', async () => {
    const { q, scheduler, work } = queue({ concurrency: 4 });
    let runs = 0;
    q.start(async () => {
      runs++;
      await work(20);
    });
    q.add('k');
    await scheduler.advance(5);
    q.add('k');
    q.add('k');
    await scheduler.advance(100);
    expect(runs).toBe(2);
  });

  it('bounds concurrency across keys', async () => {
    const { q, scheduler, work } = queue({ concurrency: 2 });
    let running = 0;
    let maxRunning = 0;
    q.start(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await work(10);
      running--;
    });
    for (let i = 0; i < 10; i++) q.add(`k${i}`);
    await scheduler.advance(100);
    expect(maxRunning).toBe(2);
    expect(q.length).toBe(0);
  });

  it('cannot grow without bound', () => {
    const dropped: string[] = [];
    const { q } = queue({ maxKeys: 3, onDropped: (key) => dropped.push(key) });
    expect(['a', 'b', 'c', 'd', 'e'].map((k) => q.add(k))).toEqual([true, true, true, false, false]);
    expect(dropped).toEqual(['d', 'e']);
    expect(q.length).toBe(3);
  });
});

describe('work queue: backoff', () => {
  it('backs off exponentially per key, capped', () => {
    const { q } = queue({ random: () => 1 });
    expect([1, 2, 3, 4, 5].map(() => q.addRateLimited('k'))).toEqual([10, 20, 40, 80, 80]);
    expect(q.failures('k')).toBe(5);
    expect(q.addRateLimited('other')).toBe(10);
  });

  it('forgets a key’s backoff on success', () => {
    const { q } = queue({ random: () => 1 });
    for (let i = 0; i < 3; i++) q.addRateLimited('k');
    q.forget('k');
    expect(q.failures('k')).toBe(0);
    expect(q.addRateLimited('k')).toBe(10);
  });

  it('adds a rate-limited key once its backoff has passed', async () => {
    const { q, scheduler } = queue({ random: () => 1 });
    const seen: number[] = [];
    q.start(async () => {
      seen.push(scheduler.now());
    });
    q.addRateLimited('k');
    await scheduler.advance(9);
    expect(seen).toEqual([]);
    await scheduler.advance(1);
    expect(seen).toEqual([1_010]);
  });
});

describe('work queue: delayed adds', () => {
  it('lets a shorter delay for a pending key win over a longer one', async () => {
    const { q, scheduler } = queue();
    const seen: number[] = [];
    q.start(async () => {
      seen.push(scheduler.now());
    });
    q.addAfter('k', 1_000);
    q.addAfter('k', 20);
    q.addAfter('k', 500);
    await scheduler.advance(2_000);
    expect(seen).toEqual([1_020]);
  });

  it('adds a delayed key at the priority asked: a low one behind the bulk, a normal one ahead of it', async () => {
    const { q, scheduler, seen, finish } = recording('first');
    q.add('first');
    for (const key of ['bulk-1', 'bulk-2']) q.add(key, 'low');
    q.addAfter('status', 5, 'low');
    q.addAfter('recheck', 5);
    await scheduler.advance(60);
    await finish();
    expect(seen).toEqual(['first', 'recheck', 'bulk-1', 'bulk-2', 'status']);
  });

  it('keeps a pending normal delayed add when a shorter low one comes for the same key', async () => {
    // A workload's status settling (low) must not cancel its rollout recheck (normal) while the
    // low add waits behind bulk work.
    const { q, scheduler, seen, finish } = recording('first');
    q.add('first');
    for (const key of ['bulk-1', 'bulk-2']) q.add(key, 'low');
    q.addAfter('k', 40);
    q.addAfter('k', 5, 'low');
    await scheduler.advance(100);
    await finish();
    expect(seen).toEqual(['first', 'k', 'bulk-1', 'bulk-2']);
  });

  it("drops a key's delayed adds when it is handed out: its run reads what they waited for", async () => {
    const { q, scheduler } = queue();
    let runs = 0;
    q.start(async () => {
      runs++;
    });
    q.addAfter('k', 40);
    q.addAfter('k', 60, 'low');
    q.add('k');
    await scheduler.advance(120);
    expect(runs).toBe(1);
    expect(scheduler.pendingTimers).toBe(0);
  });

  it('keeps a delayed add asked for after the key was handed out', async () => {
    const { q, scheduler } = queue();
    let runs = 0;
    q.start(async () => {
      runs++;
    });
    q.add('k');
    await scheduler.settle();
    q.addAfter('k', 10);
    await scheduler.advance(10);
    expect(runs).toBe(2);
  });
});

describe('work queue: shutdown', () => {
  it('drains in-flight work within the bound', async () => {
    const { q, scheduler, work } = queue();
    let finished = 0;
    q.start(async () => {
      await work(30);
      finished++;
    });
    q.add('a');
    await scheduler.settle();
    const drained = q.shutDown(1_000);
    await scheduler.advance(30);
    expect(await drained).toBe(true);
    expect(finished).toBe(1);
  });

  it('takes no new keys once shutting down', async () => {
    const { q } = queue();
    expect(await q.shutDown(1_000)).toBe(true);
    expect(q.add('b')).toBe(false);
  });

  it('gives up the drain at its bound while work is still in flight', async () => {
    const { q, scheduler, work } = queue();
    q.start(async () => {
      await work(500);
    });
    q.add('a');
    await scheduler.settle();
    const drained = q.shutDown(20);
    await scheduler.advance(20);
    expect(await drained).toBe(false);
  });

  it('drops the delayed adds on shutdown', async () => {
    const { q, scheduler } = queue();
    q.addAfter('k', 50);
    q.addRateLimited('other');
    await q.shutDown(1_000);
    expect(scheduler.pendingTimers).toBe(0);
  });
});
