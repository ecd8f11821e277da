// The agent's Prometheus metrics. Label values are bounded sets (statuses, reasons, verbs):
// never ids, names or timestamps.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export interface AgentMetrics {
  readonly registry: Registry;
  readonly deploymentsByStatus: Gauge<'status'>;
  readonly reconcileDuration: Histogram<'result'>;
  readonly reconcileErrors: Counter<'reason'>;
  readonly polls: Counter<'result'>;
  readonly queueDepth: Gauge;
  readonly queueDropped: Counter;
  readonly leader: Gauge;
  readonly statusReports: Counter<'result'>;
  readonly pruneRefusals: Counter;
  readonly objectsPruned: Counter;
  readonly objectsApplied: Counter<'kind'>;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): AgentMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'k8s_listener_' });
  const registers = [registry];
  return {
    registry,
    deploymentsByStatus: new Gauge({
      name: 'k8s_listener_deployments',
      help: 'Deployments by last rollout status',
      labelNames: ['status'],
      registers,
    }),
    reconcileDuration: new Histogram({
      name: 'k8s_listener_reconcile_duration_seconds',
      help: 'Duration of one reconcile of one deployment',
      labelNames: ['result'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    reconcileErrors: new Counter({
      name: 'k8s_listener_reconcile_errors_total',
      help: 'Failed reconciles by reason',
      labelNames: ['reason'],
      registers,
    }),
    polls: new Counter({
      name: 'k8s_listener_polls_total',
      help: 'Control-plane poll cycles by result',
      labelNames: ['result'],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'k8s_listener_queue_depth',
      help: 'Deployments waiting in the work queue',
      registers,
    }),
    queueDropped: new Counter({
      name: 'k8s_listener_queue_dropped_total',
      help: 'Keys refused by a full work queue',
      registers,
    }),
    leader: new Gauge({ name: 'k8s_listener_leader', help: '1 while this replica is the leader', registers }),
    statusReports: new Counter({
      name: 'k8s_listener_status_reports_total',
      help: 'Status-report requests to the control plane by result',
      labelNames: ['result'],
      registers,
    }),
    pruneRefusals: new Counter({
      name: 'k8s_listener_prune_refusals_total',
      help: 'Deletions refused by the mass-disappearance guard',
      registers,
    }),
    objectsPruned: new Counter({
      name: 'k8s_listener_objects_pruned_total',
      help: 'Objects deleted because they left the desired set',
      registers,
    }),
    objectsApplied: new Counter({
      name: 'k8s_listener_objects_applied_total',
      help: 'Objects written with server-side apply',
      labelNames: ['kind'],
      registers,
    }),
  };
}
