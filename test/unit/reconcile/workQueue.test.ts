import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../../src/reconcile/workQueue.ts';

const logger = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A queue of one worker that records the keys it is handed, held on the first run of `held` until released. */
const recording = (held: string) => {
  const q = queue({ concurrency: 1 });
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
  return { q, seen, release };
};
const queue = (options: Partial<ConstructorParameters<typeof WorkQueue>[0]> = {}) =>
  new WorkQueue({ concurrency: 2, backoffBaseMs: 10, backoffMaxMs: 80, maxKeys: 100, logger, ...options });

describe('work queue', () => {
  it('hands out every normal key before low ones, raises a low key added as normal, and never lowers one', async () => {
    const { q, seen, release } = recording('first');
    q.add('first');
    for (const key of ['bulk-1', 'bulk-2', 'bulk-3']) q.add(key, 'low');
    q.add('change');
    q.add('bulk-3'); // raised: a change to a deployment the bulk had queued
    q.add('change', 'low'); // stays normal
    expect(q.length).toBe(4);
    release();
    await sleep(20);
    expect(seen).toEqual(['first', 'change', 'bulk-3', 'bulk-1', 'bulk-2']);
    expect(q.length).toBe(0);
  });

  it('requeues a key added while it runs at the higher priority asked', async () => {
    const { q, seen, release } = recording('k');
    q.add('k');
    await sleep(1);
    q.add('bulk', 'low');
    q.add('k', 'low');
    q.add('k');
    release();
    await sleep(20);
    expect(seen).toEqual(['k', 'k', 'bulk']);
  });

  it('lets timers run between keys whose work finishes without I/O', async () => {
    // Reconciles answered from the cache settle in microtasks; chained, 10,000 of them held the
    // process for 28 s at the end of a cold sync and the Lease went unrenewed.
    const q = queue({ concurrency: 4, maxKeys: 1_000 });
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

  it('deduplicates keys waiting in the queue', async () => {
    const { q, seen, release } = recording('first');
    q.add('first');
    for (let i = 0; i < 5; i++) q.add('a');
    expect(q.length).toBe(1);
    release();
    await sleep(20);
    expect(seen).toEqual(['first', 'a']);
  });

  it('never works on one key twice at once, and requeues a key added while it runs', async () => {
    const q = queue({ concurrency: 4 });
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    q.start(async () => {
      running++;
      runs++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(20);
      running--;
    });
    q.add('k');
    await sleep(5);
    q.add('k');
    q.add('k');
    await sleep(80);
    expect(maxRunning).toBe(1);
    expect(runs).toBe(2);
  });

  it('bounds concurrency across keys', async () => {
    const q = queue({ concurrency: 2 });
    let running = 0;
    let maxRunning = 0;
    q.start(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(10);
      running--;
    });
    for (let i = 0; i < 10; i++) q.add(`k${i}`);
    await sleep(100);
    expect(maxRunning).toBe(2);
  });

  it('backs off exponentially per key, capped, and forgets on success', () => {
    const q = queue({ random: () => 1 });
    expect([1, 2, 3, 4, 5].map(() => q.addRateLimited('k'))).toEqual([10, 20, 40, 80, 80]);
    expect(q.failures('k')).toBe(5);
    q.forget('k');
    expect(q.addRateLimited('k')).toBe(10);
    expect(q.addRateLimited('other')).toBe(10);
  });

  it('cannot grow without bound', () => {
    const dropped: string[] = [];
    const q = queue({ maxKeys: 3, onDropped: (key) => dropped.push(key) });
    expect(['a', 'b', 'c', 'd', 'e'].map((k) => q.add(k))).toEqual([true, true, true, false, false]);
    expect(dropped).toEqual(['d', 'e']);
    expect(q.length).toBe(3);
  });

  it('drains in-flight work on shutdown within the bound, and takes no new keys', async () => {
    const q = queue();
    let finished = 0;
    q.start(async () => {
      await sleep(30);
      finished++;
    });
    q.add('a');
    await sleep(5);
    expect(await q.shutDown(1_000)).toBe(true);
    expect(finished).toBe(1);
    expect(q.add('b')).toBe(false);

    const slow = queue();
    slow.start(async () => {
      await sleep(500);
    });
    slow.add('a');
    await sleep(5);
    expect(await slow.shutDown(20)).toBe(false);
  });

  it('lets a shorter delay for a pending key win over a longer one', async () => {
    const q = queue();
    const seen: number[] = [];
    const started = Date.now();
    q.start(async () => {
      seen.push(Date.now() - started);
    });
    q.addAfter('k', 1_000);
    q.addAfter('k', 20);
    q.addAfter('k', 500);
    await sleep(150);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeLessThan(150);
  });

  it('adds a delayed key at the priority asked: a low one behind the bulk, a normal one ahead of it', async () => {
    const { q, seen, release } = recording('first');
    q.add('first');
    for (const key of ['bulk-1', 'bulk-2']) q.add(key, 'low');
    q.addAfter('status', 5, 'low');
    q.addAfter('recheck', 5);
    await sleep(60);
    release();
    await sleep(20);
    expect(seen).toEqual(['first', 'recheck', 'bulk-1', 'bulk-2', 'status']);
  });

  it('keeps a pending normal delayed add when a shorter low one comes for the same key', async () => {
    // A workload's status settling (low) must not cancel its rollout recheck (normal) while the
    // low add waits behind bulk work.
    const { q, seen, release } = recording('first');
    q.add('first');
    for (const key of ['bulk-1', 'bulk-2']) q.add(key, 'low');
    q.addAfter('k', 40);
    q.addAfter('k', 5, 'low');
    await sleep(100);
    release();
    await sleep(20);
    expect(seen).toEqual(['first', 'k', 'bulk-1', 'bulk-2']);
  });

  it("drops a key's delayed adds when it is handed out: its run reads what they waited for", async () => {
    const q = queue();
    let runs = 0;
    q.start(async () => {
      runs++;
    });
    q.addAfter('k', 40);
    q.addAfter('k', 60, 'low');
    q.add('k');
    await sleep(120);
    expect(runs).toBe(1);
    // One asked for after the run started is kept.
    q.addAfter('k', 10);
    await sleep(60);
    expect(runs).toBe(2);
  });
});
