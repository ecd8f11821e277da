import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { reconcileWorker } from '../../../../src/reconcile/loop/reconcileWorker.ts';
import { WorkQueue } from '../../../../src/reconcile/loop/workQueue.ts';
import { type ReconcileOutcome, TerminalError, WaitingError } from '../../../../src/reconcile/outcome.ts';
import { createMetrics } from '../../../../src/report/metrics.ts';
import { ManualScheduler } from '../../../support/manualScheduler.ts';

/** A real queue of one worker, on a clock the test moves. */
function queueOfOne(logger: Logger) {
  const scheduler = new ManualScheduler();
  const queue = new WorkQueue({
    concurrency: 1,
    backoffBaseMs: 50,
    backoffMaxMs: 50,
    maxKeys: 10,
    logger,
    scheduler,
  });
  return { queue, scheduler };
}

/** Runs one reconcile of `d1` with the given outcome through a real queue; returns what followed. */
async function settle(outcome: ReconcileOutcome | Error) {
  const metrics = createMetrics({ defaultMetrics: false });
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  const { queue, scheduler } = queueOfOne(logger);
  const calls: string[] = [];
  queue.start(
    reconcileWorker({
      reconciler: {
        reconcile: async (id) => {
          calls.push(id);
          if (outcome instanceof Error) throw outcome;
          // Only the first run has the outcome under test; a requeued or retried run is done.
          return calls.length === 1 ? outcome : { result: 'done', detail: 'ok' };
        },
      },
      queue,
      metrics,
      logger,
      concurrency: 3,
    }),
  );
  queue.add('d1');
  await scheduler.settle();
  const failuresAfterFirst = queue.failures('d1');
  const runsAfterFirst = calls.length;
  await scheduler.advance(120);
  await queue.shutDown(100);
  const text = [
    await metrics.registry.getSingleMetricAsString('controller_runtime_reconcile_total'),
    await metrics.registry.getSingleMetricAsString('controller_runtime_reconcile_errors_total'),
    await metrics.registry.getSingleMetricAsString('controller_runtime_terminal_reconcile_errors_total'),
    await metrics.registry.getSingleMetricAsString('controller_runtime_reconcile_time_seconds'),
    await metrics.registry.getSingleMetricAsString('controller_runtime_max_concurrent_reconciles'),
    await metrics.registry.getSingleMetricAsString('controller_runtime_active_workers'),
    await metrics.registry.getSingleMetricAsString('k8s_listener_reconcile_duration_seconds'),
    await metrics.registry.getSingleMetricAsString('k8s_listener_reconcile_errors_total'),
  ].join('\n');
  const count = (series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  return { failuresAfterFirst, runsAfterFirst, runs: calls.length, count, lines };
}

const total = (result: string) =>
  `controller_runtime_reconcile_total{controller="deployment",result="${result}"}`;

describe('reconcile worker: one outcome → one queue action and one controller-runtime result', () => {
  it.each([
    // outcome, result label, runs in all (a requeue or retry runs again), backoff failures, error counted, terminal counted
    ['done', { result: 'done', detail: 'ok' }, 'success', 1, 0, 0, 0],
    ['requeue after', { result: 'requeue', afterMs: 30 }, 'requeue_after', 2, 0, 0, 0],
    ['retry (transient)', { result: 'retry', error: new Error('503') }, 'error', 2, 1, 1, 0],
    [
      'terminal',
      { result: 'terminal', error: new TerminalError('RenderInvalid', 'invalid spec') },
      'error',
      1,
      0,
      1,
      1,
    ],
    // A lost lease or a shutdown: no result counted at all, no error, no retry.
    ['aborted', { result: 'aborted' }, undefined, 1, 0, 0, 0],
  ] as const)('%s', async (_name, outcome, label, runs, failures, errors, terminal) => {
    const seen = await settle(outcome as ReconcileOutcome);
    expect(seen.runsAfterFirst).toBe(1);
    expect(seen.failuresAfterFirst).toBe(failures);
    expect(seen.runs).toBe(runs);
    // The first run is counted with its label; any later run was a success.
    if (label !== undefined) expect(seen.count(total(label))).toBe(label === 'success' ? runs : 1);
    for (const other of ['success', 'error', 'requeue', 'requeue_after'].filter((l) => l !== label))
      expect(seen.count(total(other))).toBe(other === 'success' ? runs - 1 : 0);
    expect(seen.count('controller_runtime_reconcile_errors_total{controller="deployment"}')).toBe(errors);
    expect(seen.count('controller_runtime_terminal_reconcile_errors_total{controller="deployment"}')).toBe(
      terminal,
    );
    expect(seen.count('controller_runtime_reconcile_time_seconds_count{controller="deployment"}')).toBe(runs);
    expect(seen.count('controller_runtime_max_concurrent_reconciles{controller="deployment"}')).toBe(3);
    expect(seen.count('controller_runtime_active_workers{controller="deployment"}')).toBe(0);
  });

  it.each([
    // outcome, the agent's own duration label, its error reason (none: not counted)
    ['done', { result: 'done', detail: 'settled' }, 'settled', undefined],
    ['requeue after', { result: 'requeue', afterMs: 30 }, 'requeue', undefined],
    ['retry (transient)', { result: 'retry', error: new Error('503') }, 'error', 'transient'],
    [
      'retry (waiting)',
      { result: 'retry', error: new WaitingError('ReferenceMissing', 'd1', 'Secret/s does not exist yet') },
      'error',
      'ReferenceMissing',
    ],
    [
      'terminal',
      { result: 'terminal', error: new TerminalError('ApplyRejected', 'refused') },
      'failed',
      'ApplyRejected',
    ],
  ] as const)(
    '%s counts in the agent’s own metrics from the same place',
    async (_name, outcome, result, reason) => {
      const seen = await settle(outcome as ReconcileOutcome);
      expect(seen.count(`k8s_listener_reconcile_duration_seconds_count{result="${result}"}`)).toBe(1);
      if (reason) expect(seen.count(`k8s_listener_reconcile_errors_total{reason="${reason}"}`)).toBe(1);
      else expect(seen.count('k8s_listener_reconcile_errors_total')).toBeUndefined();
    },
  );

  it('an aborted reconcile counts nowhere in the agent’s own metrics', async () => {
    const seen = await settle({ result: 'aborted' });
    expect(seen.count('k8s_listener_reconcile_duration_seconds_count')).toBeUndefined();
    expect(seen.count('k8s_listener_reconcile_errors_total')).toBeUndefined();
  });

  it('logs a retried failure with the deployment_id field', async () => {
    const seen = await settle({ result: 'retry', error: new Error('503') });
    const line = seen.lines.find((l) => l.msg === 'reconcile failed; retrying with backoff');
    expect(line).toMatchObject({ deployment_id: 'd1', retryInMs: expect.any(Number) });
    expect(line).not.toHaveProperty('deploymentId');
  });

  it('treats a reconciler that throws as an error to retry', async () => {
    const seen = await settle(new Error('bug'));
    expect(seen.failuresAfterFirst).toBe(1);
    expect(seen.count(total('error'))).toBeGreaterThanOrEqual(1);
  });
});

describe('reconcile worker: where a requeue waits', () => {
  /** `first` runs once with `outcome`; three keys of a first listing are queued low behind it. */
  async function order(outcome: ReconcileOutcome): Promise<string[]> {
    const logger = pino({ level: 'silent' });
    const { queue, scheduler } = queueOfOne(logger);
    const runs: string[] = [];
    queue.start(
      reconcileWorker({
        reconciler: {
          reconcile: async (id) => {
            runs.push(id);
            if (id === 'first' && runs.length === 1) {
              for (const bulk of ['b1', 'b2', 'b3']) queue.add(bulk, 'low');
              return outcome;
            }
            // Each bulk key takes a while, so that a requeue due meanwhile has to choose its place.
            await new Promise<void>((resolve) => scheduler.after(15, resolve));
            return { result: 'done', detail: 'ok' };
          },
        },
        queue,
        metrics: createMetrics({ defaultMetrics: false }),
        logger,
        concurrency: 1,
      }),
    );
    queue.add('first');
    await scheduler.advance(150);
    await queue.shutDown(100);
    return runs;
  }

  it('a rollout’s recheck waits behind the deployments not yet applied', async () => {
    expect(await order({ result: 'requeue', afterMs: 1, background: true })).toEqual([
      'first',
      'b1',
      'b2',
      'b3',
      'first',
    ]);
  });

  it('any other requeue goes ahead of them', async () => {
    const runs = await order({ result: 'requeue', afterMs: 1 });
    expect(runs.indexOf('first', 1)).toBeLessThan(runs.indexOf('b3'));
  });
});
