import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../../../src/reconcile/loop/workQueue.ts';
import { createMetrics, workQueueMetrics } from '../../../../src/report/metrics.ts';
import { ManualScheduler } from '../../../support/manualScheduler.ts';

const logger = pino({ level: 'silent' });

/** A queue on its own registry, with a clock the test moves. */
function instrumented(options: { concurrency?: number; maxKeys?: number } = {}) {
  const metrics = createMetrics({ defaultMetrics: false });
  const clock = new ManualScheduler();
  const queue = new WorkQueue({
    concurrency: options.concurrency ?? 1,
    backoffBaseMs: 10,
    backoffMaxMs: 40,
    maxKeys: options.maxKeys ?? 100,
    logger,
    metrics: workQueueMetrics(metrics, 'deployment'),
    scheduler: clock,
  });
  const text = (name: string) => metrics.registry.getSingleMetricAsString(name);
  /** The value of the one series of `name` whose labels include `match` (a substring). */
  const value = async (name: string, match = 'name="deployment"') => {
    const family = metrics.registry.getSingleMetric(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    const line = (await text(family)).split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(match));
    if (line === undefined) throw new Error(`no series ${name} with ${match}`);
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  return { metrics, clock, queue, text, value };
}

/** A worker that holds each key until the test releases it. */
function gate() {
  const held = new Map<string, () => void>();
  const worker = (key: string) =>
    new Promise<void>((resolve) => {
      held.set(key, resolve);
    });
  const release = (key: string) => {
    held.get(key)?.();
    held.delete(key);
  };
  return { held, worker, release };
}

describe('work queue metrics (client-go workqueue names)', () => {
  it('exposes every series from the start, labelled name and controller', async () => {
    const { text } = instrumented();
    expect(await text('workqueue_depth')).toContain(
      'workqueue_depth{name="deployment",controller="deployment"} 0',
    );
    expect(await text('workqueue_adds_total')).toContain(
      'workqueue_adds_total{name="deployment",controller="deployment"} 0',
    );
    expect(await text('workqueue_retries_total')).toContain(
      'workqueue_retries_total{name="deployment",controller="deployment"} 0',
    );
    expect(await text('workqueue_unfinished_work_seconds')).toContain(
      'workqueue_unfinished_work_seconds{name="deployment",controller="deployment"} 0',
    );
  });

  it('counts adds once per pending key and reports the depth, including a key added again while it runs', async () => {
    const { queue, value, clock } = instrumented({ concurrency: 1 });
    const { worker, release, held } = gate();
    queue.add('a');
    queue.add('a'); // already pending: not an add
    queue.add('b');
    expect(await value('workqueue_adds_total')).toBe(2);
    expect(await value('workqueue_depth')).toBe(2);
    queue.start(worker);
    expect(held.has('a')).toBe(true);
    expect(await value('workqueue_depth')).toBe(1);
    queue.add('a'); // while processing: pending again, counted once
    queue.add('a');
    expect(await value('workqueue_adds_total')).toBe(3);
    expect(await value('workqueue_depth')).toBe(2);
    release('a');
    await clock.settle();
    // b runs now; a waits behind it, not counted as a new add.
    expect(held.has('b')).toBe(true);
    expect(await value('workqueue_adds_total')).toBe(3);
    expect(await value('workqueue_depth')).toBe(1);
    release('b');
    await clock.settle();
    release('a');
    await clock.settle();
    expect(await value('workqueue_depth')).toBe(0);
  });

  it('grows unfinished work and the longest running processor while a worker is stuck, and clears them when it finishes', async () => {
    const { queue, value, clock } = instrumented({ concurrency: 2 });
    const { worker, release } = gate();
    queue.start(worker);
    queue.add('stuck');
    await clock.advance(10_000);
    queue.add('other');
    await clock.advance(5_000);
    expect(await value('workqueue_longest_running_processor_seconds')).toBe(15);
    expect(await value('workqueue_unfinished_work_seconds')).toBe(20); // 15 + 5
    await clock.advance(30_000);
    expect(await value('workqueue_longest_running_processor_seconds')).toBe(45);
    expect(await value('workqueue_unfinished_work_seconds')).toBe(80);
    release('other');
    release('stuck');
    await clock.settle();
    expect(await value('workqueue_unfinished_work_seconds')).toBe(0);
    expect(await value('workqueue_longest_running_processor_seconds')).toBe(0);
    // Work durations observed: 45 s and 35 s land in the 100 s bucket, not the 10 s one.
    expect(await value('workqueue_work_duration_seconds_count')).toBe(2);
    expect(await value('workqueue_work_duration_seconds_sum')).toBe(80);
    expect(await value('workqueue_work_duration_seconds_bucket', 'le="10"')).toBe(0);
    expect(await value('workqueue_work_duration_seconds_bucket', 'le="100"')).toBe(2);
  });

  it('observes the time a key waited before a worker took it', async () => {
    const { queue, value, clock } = instrumented({ concurrency: 1 });
    const { worker, release } = gate();
    queue.start(worker);
    queue.add('first'); // taken at once: waited 0 s
    queue.add('second');
    await clock.advance(2_500);
    release('first');
    await clock.settle();
    expect(await value('workqueue_queue_duration_seconds_count')).toBe(2);
    expect(await value('workqueue_queue_duration_seconds_sum')).toBe(2.5);
    expect(await value('workqueue_queue_duration_seconds_bucket', 'le="1e-8"')).toBe(1);
    release('second');
  });

  it('counts each rate-limited retry', async () => {
    const { queue, value } = instrumented();
    queue.addRateLimited('a');
    queue.addRateLimited('a');
    queue.addRateLimited('b');
    expect(await value('workqueue_retries_total')).toBe(3);
    await queue.shutDown(10);
  });

  it('does not count a key refused by a full queue', async () => {
    const { queue, value, metrics } = instrumented({ maxKeys: 1 });
    queue.add('a');
    expect(queue.add('b')).toBe(false);
    expect(await value('workqueue_adds_total')).toBe(1);
    expect(await value('workqueue_depth')).toBe(1);
    expect(metrics.registry.getSingleMetric('workqueue_adds_total')).toBeDefined();
  });
});
