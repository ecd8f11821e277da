// All-or-nothing name locks: overlapping sets wait, disjoint ones do not, no deadlock across
// opposite orders, an aborted waiter leaves the queue.
import { describe, expect, it } from 'vitest';
import { NameLocks } from '../../../../src/reconcile/loop/nameLocks.ts';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('NameLocks', () => {
  it('makes an overlapping set wait until the holder releases, and lets a disjoint one through', async () => {
    const locks = new NameLocks();
    const releaseA = await locks.acquire(['ns_web_apps_Deployment', 'ns_web_Service']);
    let second = false;
    const waiting = locks.acquire(['ns_web_Service', 'ns_web-db_Service']).then((release) => {
      second = true;
      return release;
    });
    const releaseC = await locks.acquire(['ns_other_Service']);
    await tick();
    expect(second).toBe(false);
    releaseA();
    const releaseB = await waiting;
    expect(second).toBe(true);
    releaseB();
    releaseC();
    expect(locks.size).toBe(0);
  });

  it('never deadlocks on keys asked for in opposite orders', async () => {
    const locks = new NameLocks();
    const order: string[] = [];
    const work = async (name: string, keys: string[]) => {
      const release = await locks.acquire(keys);
      order.push(name);
      await tick();
      release();
    };
    await Promise.all(Array.from({ length: 50 }, (_, i) => work(`w${i}`, i % 2 ? ['a', 'b'] : ['b', 'a'])));
    expect(order).toHaveLength(50);
    expect(locks.size).toBe(0);
  });

  it('drops an aborted waiter, and a release twice is once', async () => {
    const locks = new NameLocks();
    const release = await locks.acquire(['a']);
    const controller = new AbortController();
    const waiting = locks.acquire(['a'], controller.signal);
    controller.abort(new Error('shutdown'));
    await expect(waiting).rejects.toThrow('shutdown');
    release();
    release();
    const again = await locks.acquire(['a']);
    expect(locks.size).toBe(1);
    again();
  });
});
