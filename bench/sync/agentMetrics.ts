// What a run reads from the agent's own metrics: its requests by verb and kind, its polls and
// reconciles, and, over a series of readings, its peaks (heap, event-loop stalls, major GCs).
import type { Sample } from '../../test/support/metricSamples.ts';
import type { AgentUnderTest } from './agentUnderTest.ts';

const KUBE_REQUESTS = 'k8s_listener_kube_requests_total';
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete']);

/** The sum of the samples named `name` whose labels `keep` accepts. */
export const total = (
  samples: readonly Sample[],
  name: string,
  keep: (labels: Readonly<Record<string, string>>) => boolean = () => true,
) => samples.filter((s) => s.name === name && keep(s.labels)).reduce((sum, s) => sum + s.value, 0);

export const reconciles = (samples: readonly Sample[]) =>
  total(samples, 'controller_runtime_reconcile_total');
/** Reconciles by path (`full`: render, plan, apply; `status`: the rollout read and reported). */
export const reconcilesByPath = (samples: readonly Sample[], path: 'full' | 'status') =>
  total(samples, 'k8s_listener_reconcile_paths_total', (l) => l.path === path);
export const objectsApplied = (samples: readonly Sample[]) =>
  total(samples, 'k8s_listener_objects_applied_total');
export const polls = (samples: readonly Sample[]) => total(samples, 'k8s_listener_polls_total');
export const controlPlaneRequests = (samples: readonly Sample[]) =>
  total(samples, 'k8s_listener_control_plane_requests_total');

/** Kubernetes API requests by verb. */
export function requestsByVerb(samples: readonly Sample[]): Record<string, number> {
  const verbs: Record<string, number> = {};
  for (const s of samples)
    if (s.name === KUBE_REQUESTS) verbs[s.labels.verb ?? '?'] = (verbs[s.labels.verb ?? '?'] ?? 0) + s.value;
  return verbs;
}

/** Kubernetes API requests by `kind verb`, those made at least once. */
export function requestsByKindAndVerb(samples: readonly Sample[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of samples)
    if (s.name === KUBE_REQUESTS && s.value > 0) {
      const key = `${s.labels.kind ?? '?'} ${s.labels.verb ?? '?'}`;
      counts[key] = (counts[key] ?? 0) + s.value;
    }
  return counts;
}

/** Writes to the API, the leader's Lease renewals aside. */
export const writesExceptLease = (samples: readonly Sample[]) =>
  total(samples, KUBE_REQUESTS, (l) => WRITE_VERBS.has(l.verb ?? '') && l.kind !== 'Lease');

/** The leader's Lease writes. */
export const leaseWrites = (samples: readonly Sample[]) =>
  total(samples, KUBE_REQUESTS, (l) => l.kind === 'Lease' && WRITE_VERBS.has(l.verb ?? ''));

/** The agent's metrics, read again and again, with what only the series of readings shows. */
export class AgentMeter {
  peakHeapMiB = 0;
  /** Objects applied at the last reading. */
  appliedSoFar = 0;
  /**
   * The longest event-loop stall (prom-client resets its delay monitor at each read, so each
   * reading gives the worst since the one before): a leader stalled past its renew deadline gives
   * up its lease and exits.
   */
  longestStallS = 0;
  /** The longest since the progress line last cleared it. */
  minuteStallS = 0;
  /** Time in major GCs so far. */
  majorGcS = 0;

  readonly #agent: AgentUnderTest;

  constructor(agent: AgentUnderTest) {
    this.#agent = agent;
  }

  async read(): Promise<Sample[]> {
    const samples = await this.#agent.readMetrics();
    this.peakHeapMiB = Math.max(
      this.peakHeapMiB,
      total(samples, 'k8s_listener_nodejs_heap_size_used_bytes') / 2 ** 20,
    );
    const stallS = total(samples, 'k8s_listener_nodejs_eventloop_lag_max_seconds');
    this.longestStallS = Math.max(this.longestStallS, stallS);
    this.minuteStallS = Math.max(this.minuteStallS, stallS);
    this.majorGcS = total(samples, 'k8s_listener_nodejs_gc_duration_seconds_sum', (l) => l.kind === 'major');
    this.appliedSoFar = objectsApplied(samples);
    return samples;
  }
}
