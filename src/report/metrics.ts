// The agent's Prometheus metrics. Label values are bounded sets (statuses, reasons, verbs):
// never ids, names or timestamps. The work-queue and reconcile metrics carry controller-runtime's
// names, help texts and buckets, so dashboards made for controllers work here unchanged.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { AGENT_VERSION } from '../version.ts';

/** The one controller (and work queue) of the agent, as controller-runtime labels it. */
export const CONTROLLER_NAME = 'deployment';

/** Reconcile results as controller-runtime counts them. */
export type ReconcileResultLabel = 'success' | 'error' | 'requeue' | 'requeue_after';

type QueueLabels = 'name' | 'controller';

export interface AgentMetrics {
  readonly registry: Registry;
  readonly deploymentsByStatus: Gauge<'status'>;
  readonly reconcileDuration: Histogram<'result'>;
  readonly reconcileErrors: Counter<'reason'>;
  readonly polls: Counter<'result'>;
  readonly pollDuration: Histogram;
  readonly queueDepth: Gauge;
  readonly queueDropped: Counter;
  readonly leader: Gauge;
  readonly insecureTransport: Gauge<'target' | 'reason'>;
  readonly statusReports: Counter<'result'>;
  readonly pruneRefusals: Counter;
  readonly inventoriesRejected: Counter;
  /** Deployments the agent neither applies nor prunes: suspended, each or by their listener. */
  readonly suspendedDeployments: Gauge;
  /** 1 while the whole listener is suspended. */
  readonly listenerSuspended: Gauge;
  /** Version records after which the listener held other namespaces than the agent had read. */
  readonly listenerEditConflicts: Counter;
  /** Deployments whose change from the agent itself waits for the agent change rate. */
  readonly agentChangesWaiting: Gauge;
  /** Changes from the agent itself applied (each counted once, held first or not). */
  readonly agentChangesApplied: Counter;
  readonly objectsPruned: Counter;
  /** Reconciles by path: `full` (render, plan, apply) or `status` (the rollout read and reported). */
  readonly reconcilePaths: Counter<'path'>;
  readonly objectsApplied: Counter<'kind'>;
  /** Since when each deployment's current revision is DEPLOYING (epoch ms), for the age gauge. */
  readonly deployingSince: Map<string, number>;
  readonly workqueue: {
    readonly depth: Gauge<QueueLabels>;
    readonly adds: Counter<QueueLabels>;
    readonly queueDuration: Histogram<QueueLabels>;
    readonly workDuration: Histogram<QueueLabels>;
    readonly unfinishedWork: Gauge<QueueLabels>;
    readonly longestRunningProcessor: Gauge<QueueLabels>;
    readonly retries: Counter<QueueLabels>;
    /** Per queue name: what is in progress, read when the unfinished-work gauges are scraped. */
    readonly processing: Map<string, () => ProcessingSample>;
  };
  readonly controllerRuntime: {
    readonly reconcileTotal: Counter<'controller' | 'result'>;
    readonly reconcileErrors: Counter<'controller'>;
    readonly terminalReconcileErrors: Counter<'controller'>;
    readonly reconcileTime: Histogram<'controller'>;
    readonly maxConcurrentReconciles: Gauge<'controller'>;
    readonly activeWorkers: Gauge<'controller'>;
  };
}

/** A sample of the work in progress, read at scrape time. */
export interface ProcessingSample {
  readonly unfinishedSeconds: number;
  readonly longestRunningSeconds: number;
}

/** client-go's ExponentialBuckets(10e-9, 10, 12), as controller-runtime's work-queue histograms use. */
const WORKQUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => Number((10e-9 * 10 ** i).toPrecision(1)));

/** controller-runtime's buckets of controller_runtime_reconcile_time_seconds. */
const RECONCILE_TIME_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

export function createMetrics(options: { defaultMetrics?: boolean } = {}): AgentMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry, prefix: 'k8s_listener_' });
    // Gauges named like counters (Prometheus's lint, `promtool check metrics`, refuses them); the
    // same counts by type remain, in k8s_listener_nodejs_active_{handles,requests,resources}.
    for (const total of ['active_handles_total', 'active_requests_total', 'active_resources_total'])
      registry.removeSingleMetric(`k8s_listener_nodejs_${total}`);
  }
  const registers = [registry];
  const deployingSince = new Map<string, number>();
  new Gauge({
    name: 'k8s_listener_build_info',
    help: 'Always 1; the version label says which agent version runs',
    labelNames: ['version'],
    registers,
  }).set({ version: AGENT_VERSION }, 1);
  new Gauge({
    name: 'k8s_listener_rollout_oldest_deploying_seconds',
    help: 'Age of the oldest rollout still DEPLOYING on this replica (0 when none): a stuck rollout grows it',
    registers,
    collect() {
      const now = Date.now();
      let oldest = now;
      for (const since of deployingSince.values()) oldest = Math.min(oldest, since);
      this.set((now - oldest) / 1000);
    },
  });
  const queueLabels: QueueLabels[] = ['name', 'controller'];
  // Sampled when scraped, where client-go updates these two gauges every 500 ms.
  const processing = new Map<string, () => ProcessingSample>();
  const sampleProcessing = (pick: (sample: ProcessingSample) => number) =>
    function (this: Gauge<QueueLabels>) {
      for (const [name, sample] of processing) this.set({ name, controller: name }, pick(sample()));
    };
  return {
    registry,
    deployingSince,
    workqueue: {
      depth: new Gauge({
        name: 'workqueue_depth',
        help: 'Current depth of workqueue',
        labelNames: queueLabels,
        registers,
      }),
      adds: new Counter({
        name: 'workqueue_adds_total',
        help: 'Total number of adds handled by workqueue',
        labelNames: queueLabels,
        registers,
      }),
      queueDuration: new Histogram({
        name: 'workqueue_queue_duration_seconds',
        help: 'How long in seconds an item stays in workqueue before being requested',
        labelNames: queueLabels,
        buckets: WORKQUEUE_BUCKETS,
        registers,
      }),
      workDuration: new Histogram({
        name: 'workqueue_work_duration_seconds',
        help: 'How long in seconds processing an item from workqueue takes.',
        labelNames: queueLabels,
        buckets: WORKQUEUE_BUCKETS,
        registers,
      }),
      unfinishedWork: new Gauge({
        name: 'workqueue_unfinished_work_seconds',
        help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
        labelNames: queueLabels,
        registers,
        collect: sampleProcessing((sample) => sample.unfinishedSeconds),
      }),
      longestRunningProcessor: new Gauge({
        name: 'workqueue_longest_running_processor_seconds',
        help: 'How many seconds has the longest running processor for workqueue been running.',
        labelNames: queueLabels,
        registers,
        collect: sampleProcessing((sample) => sample.longestRunningSeconds),
      }),
      retries: new Counter({
        name: 'workqueue_retries_total',
        help: 'Total number of retries handled by workqueue',
        labelNames: queueLabels,
        registers,
      }),
      processing,
    },
    controllerRuntime: {
      reconcileTotal: new Counter({
        name: 'controller_runtime_reconcile_total',
        help: 'Total number of reconciliations per controller',
        labelNames: ['controller', 'result'],
        registers,
      }),
      reconcileErrors: new Counter({
        name: 'controller_runtime_reconcile_errors_total',
        help: 'Total number of reconciliation errors per controller',
        labelNames: ['controller'],
        registers,
      }),
      terminalReconcileErrors: new Counter({
        name: 'controller_runtime_terminal_reconcile_errors_total',
        help: 'Total number of terminal reconciliation errors per controller',
        labelNames: ['controller'],
        registers,
      }),
      reconcileTime: new Histogram({
        name: 'controller_runtime_reconcile_time_seconds',
        help: 'Length of time per reconciliation per controller',
        labelNames: ['controller'],
        buckets: RECONCILE_TIME_BUCKETS,
        registers,
      }),
      maxConcurrentReconciles: new Gauge({
        name: 'controller_runtime_max_concurrent_reconciles',
        help: 'Maximum number of concurrent reconciles per controller',
        labelNames: ['controller'],
        registers,
      }),
      activeWorkers: new Gauge({
        name: 'controller_runtime_active_workers',
        help: 'Number of currently used workers per controller',
        labelNames: ['controller'],
        registers,
      }),
    },
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
    // The next poll is timed from the end of this one: a change waits for half the interval plus
    // this, on average, before a listing can see it.
    pollDuration: new Histogram({
      name: 'k8s_listener_poll_duration_seconds',
      help: 'Duration of one poll cycle: suspensions, namespaces, the listing, revision reads and the status flush',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
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
    insecureTransport: new Gauge({
      name: 'k8s_listener_insecure_transport',
      help: '1 for a connection without TLS or without certificate verification, by target and reason',
      labelNames: ['target', 'reason'],
      registers,
    }),
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
    inventoriesRejected: new Counter({
      name: 'k8s_listener_inventories_rejected_total',
      help: 'Inventory ConfigMaps that do not hold together, ignored for pruning',
      registers,
    }),
    suspendedDeployments: new Gauge({
      name: 'k8s_listener_suspended_deployments',
      help: 'Deployments the agent neither applies nor prunes: suspended by an operator, each or by their listener',
      registers,
    }),
    listenerSuspended: new Gauge({
      name: 'k8s_listener_listener_suspended',
      help: '1 while the whole listener is suspended by an operator',
      registers,
    }),
    listenerEditConflicts: new Counter({
      name: 'k8s_listener_listener_edit_conflicts_total',
      help: 'Times the listener, re-read right after the agent recorded its version on it, held other namespaces (or compute configuration) than the agent read before that write: someone edited it meanwhile',
      registers,
    }),
    agentChangesWaiting: new Gauge({
      name: 'k8s_listener_agent_changes_waiting',
      help: 'Deployments whose pod-template change from the agent itself (a new version or render configuration) waits for reconcile.agentChangeRate',
      registers,
    }),
    agentChangesApplied: new Counter({
      name: 'k8s_listener_agent_changes_applied_total',
      help: 'Changes from the agent itself (not from a new revision) applied to a deployment',
      registers,
    }),
    objectsPruned: new Counter({
      name: 'k8s_listener_objects_pruned_total',
      help: 'Objects deleted because they left the desired set',
      registers,
    }),
    reconcilePaths: new Counter({
      name: 'k8s_listener_reconcile_paths_total',
      help: 'Reconciles of a deployment by path: full (render, plan, apply) or status (nothing to apply changed: the rollout read and reported)',
      labelNames: ['path'],
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

/**
 * The work queue's metrics for the queue `name`, in the shape the queue takes (`WorkQueueMetrics`
 * in src/reconcile/loop/workQueue.ts): client-go's MetricsProvider, on prom-client.
 */
export function workQueueMetrics(metrics: AgentMetrics, name: string) {
  const labels = { name, controller: name };
  const { workqueue } = metrics;
  // Present from the start, so that rate() and alerts see a zero rather than nothing.
  workqueue.depth.set(labels, 0);
  workqueue.adds.inc(labels, 0);
  workqueue.retries.inc(labels, 0);
  return {
    add: () => workqueue.adds.inc(labels),
    depth: (value: number) => workqueue.depth.set(labels, value),
    queueDuration: (seconds: number) => workqueue.queueDuration.observe(labels, seconds),
    workDuration: (seconds: number) => workqueue.workDuration.observe(labels, seconds),
    retry: () => workqueue.retries.inc(labels),
    /** The latest queue of this name replaces an earlier one (one per leader session). */
    sampleProcessing: (sampler: () => ProcessingSample) => {
      workqueue.processing.set(name, sampler);
    },
  };
}
