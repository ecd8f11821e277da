// The queue's worker: runs one reconcile and settles its outcome — what the queue does next, how
// controller-runtime's metrics and the agent's own count it — in this one place.
import type { Logger } from 'pino';
import { deploymentLogger } from '../../report/deploymentLogger.ts';
import { type AgentMetrics, CONTROLLER_NAME, type ReconcileResultLabel } from '../../report/metrics.ts';
import { type ReconcileOutcome, TerminalError, WaitingError } from '../outcome.ts';
import type { QueuePriority, Worker } from './workQueue.ts';

export interface ReconcileFn {
  reconcile(deploymentId: string, signal?: AbortSignal): Promise<ReconcileOutcome>;
}

/** What the worker asks of the queue after a reconcile. */
export interface SettlingQueue {
  forget(key: string): void;
  addAfter(key: string, delayMs: number, priority?: QueuePriority): void;
  addRateLimited(key: string): number;
}

export interface ReconcileWorkerOptions {
  readonly reconciler: ReconcileFn;
  readonly queue: SettlingQueue;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  readonly concurrency: number;
  readonly signal?: AbortSignal;
}

export function reconcileWorker(options: ReconcileWorkerOptions): Worker {
  const { reconciler, queue, metrics, logger, signal } = options;
  const cr = metrics.controllerRuntime;
  const controller = { controller: CONTROLLER_NAME };
  cr.maxConcurrentReconciles.set(controller, options.concurrency);
  cr.activeWorkers.set(controller, 0);
  for (const result of ['success', 'error', 'requeue', 'requeue_after'] satisfies ReconcileResultLabel[])
    cr.reconcileTotal.inc({ ...controller, result }, 0);
  cr.reconcileErrors.inc(controller, 0);
  cr.terminalReconcileErrors.inc(controller, 0);

  return async (deploymentId) => {
    cr.activeWorkers.inc(controller);
    const started = performance.now();
    let outcome: ReconcileOutcome;
    try {
      outcome = await reconciler.reconcile(deploymentId, signal);
    } catch (error) {
      // The reconciler turns failures into outcomes; a throw is a bug, retried like an error.
      outcome = { result: 'retry', error };
    } finally {
      cr.activeWorkers.dec(controller);
      cr.reconcileTime.observe(controller, (performance.now() - started) / 1000);
    }
    const seconds = (performance.now() - started) / 1000;
    const label = settle(outcome, deploymentId, queue, logger);
    if (label === undefined) return;
    cr.reconcileTotal.inc({ ...controller, result: label });
    if (label === 'error') cr.reconcileErrors.inc(controller);
    if (outcome.result === 'terminal') cr.terminalReconcileErrors.inc(controller);
    metrics.reconcileDuration.observe({ result: durationLabel(outcome) }, seconds);
    if (outcome.result === 'terminal') metrics.reconcileErrors.inc({ reason: outcome.error.reason });
    if (outcome.result === 'retry') metrics.reconcileErrors.inc({ reason: retryReason(outcome.error) });
  };
}

/**
 * Acts on the queue for an outcome and returns its controller-runtime result label; none for an
 * aborted reconcile, which is neither a success nor an error of the deployment.
 */
function settle(
  outcome: ReconcileOutcome,
  deploymentId: string,
  queue: SettlingQueue,
  logger: Logger,
): ReconcileResultLabel | undefined {
  switch (outcome.result) {
    case 'done':
      queue.forget(deploymentId);
      return 'success';
    case 'requeue':
      queue.forget(deploymentId);
      queue.addAfter(deploymentId, outcome.afterMs, outcome.background ? 'low' : 'normal');
      return 'requeue_after';
    case 'retry': {
      const delay = queue.addRateLimited(deploymentId);
      deploymentLogger(logger, { deploymentId }).warn(
        { err: outcome.error, retryInMs: delay },
        'reconcile failed; retrying with backoff',
      );
      return 'error';
    }
    case 'terminal':
      // Reported as failed; the next change of the deployment wakes it, not a backoff.
      queue.forget(deploymentId);
      return 'error';
    case 'aborted':
      // The session is ending (lost lease, shutdown): the next leader reconciles it afresh.
      queue.forget(deploymentId);
      return undefined;
  }
}

/** The `result` label of k8s_listener_reconcile_duration_seconds. */
function durationLabel(outcome: ReconcileOutcome): string {
  switch (outcome.result) {
    case 'done':
      return outcome.detail;
    case 'requeue':
      return 'requeue';
    case 'retry':
      return 'error';
    case 'terminal':
      return 'failed';
    case 'aborted':
      return 'aborted';
  }
}

/** The `reason` label of k8s_listener_reconcile_errors_total for a retried failure. */
function retryReason(error: unknown): string {
  return error instanceof TerminalError || error instanceof WaitingError ? error.reason : 'transient';
}
