import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../../../src/kube/rateLimiter.ts';

describe('TokenBucket (client-go qps/burst)', () => {
  it('lets a burst through at once, then one request per 1/qps seconds', () => {
    let now = 0;
    const bucket = new TokenBucket({ qps: 10, burst: 3 }, () => now);
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 0]);
    expect(bucket.reserve()).toBeCloseTo(100);
    expect(bucket.reserve()).toBeCloseTo(200);
    now = 1_000; // refilled: 10 tokens earned, 2 owed, capped at the burst
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 0]);
    expect(bucket.reserve()).toBeCloseTo(100);
  });

  it('never holds more than the burst after a long quiet period', () => {
    let now = 0;
    const bucket = new TokenBucket({ qps: 100, burst: 2 }, () => now);
    now = 60_000;
    expect([bucket.reserve(), bucket.reserve()]).toEqual([0, 0]);
    expect(bucket.reserve()).toBeGreaterThan(0);
  });

  it('is no limit at qps 0', async () => {
    const bucket = new TokenBucket({ qps: 0, burst: 1 });
    for (let i = 0; i < 1_000; i++) expect(bucket.reserve()).toBe(0);
    await bucket.take();
    expect(bucket.waiting).toBe(0);
  });

  it('waits for its token, and an aborted signal ends the wait with its reason', async () => {
    const bucket = new TokenBucket({ qps: 20, burst: 1 });
    await bucket.take();
    const started = performance.now();
    await bucket.take();
    expect(performance.now() - started).toBeGreaterThanOrEqual(40);
    const controller = new AbortController();
    const waiting = bucket.take(controller.signal);
    expect(bucket.waiting).toBe(1);
    controller.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
    expect(bucket.waiting).toBe(0);
  });
});
