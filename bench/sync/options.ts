// bench:sync's flags, read and checked once: a wrong one exits 2 before anything starts.
import { parseArgs } from 'node:util';

export const PHASES = ['agent', 'floor', 'kubectl', 'flux'] as const;
export type Phase = (typeof PHASES)[number];

const SOURCE_MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;
const BUILT_MAIN = new URL('../../dist/cli/main.js', import.meta.url).pathname;

export interface SyncOptions {
  /** N: how many deployments. */
  readonly deployments: number;
  readonly concurrency: number;
  readonly pollMs: number;
  /** How many changes the change → applied latency is measured over. */
  readonly patches: number;
  readonly logLevel: string;
  readonly cpuProfile: boolean;
  readonly heapSnapshot: boolean;
  readonly strict: boolean;
  readonly note: string;
  /** Node flags for the agent process only, e.g. '--max-old-space-size=128' (space-separated). */
  readonly agentNodeOptions: string;
  /** Environment for the agent process only, over the image's, e.g. 'MALLOC_ARENA_MAX=1' (space-separated). */
  readonly agentEnv: string;
  /** The TypeScript sources instead of the bundle the image runs. */
  readonly fromSource: boolean;
  /** The agent's entry point: the bundle (built first), or the sources with --from-source. */
  readonly main: string;
  /** The agent's memory cgroup, in MiB (0: none). */
  readonly memoryLimitMiB: number;
  readonly controllerQps: number | undefined;
  readonly order: readonly Phase[];
  readonly agentOnly: boolean;
  /** Flux at its own defaults (concurrency, client rate limit) instead of the agent's. */
  readonly fluxDefaults: boolean;
  readonly untilApplied: boolean;
  readonly restart: boolean;
  readonly keepCluster: boolean;
  /** The run's series (its start), set by --runs on each of its runs. */
  readonly series: string | undefined;
  /** Every wait's bound. */
  readonly phaseTimeoutMs: number;
  /** With --until-applied: how long the rollouts run on after the last apply before the reading (3 min at N = 10,000). */
  readonly settleAfterAppliedMs: number;
  /**
   * The agent's `reconcile.resyncIntervalMs`: long enough that the first resync comes after the
   * cold sync, the steady state and the change latency, whose figures it would blur; the resync
   * phase then measures it.
   */
  readonly resyncIntervalMs: number;
}

/** The flags as given (for --runs, which hands them on to each of its runs). */
function parseFlags(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    options: {
      deployments: { type: 'string', default: '100' },
      concurrency: { type: 'string', default: '4' },
      'poll-interval-ms': { type: 'string', default: '2000' },
      patches: { type: 'string', default: '50' },
      'log-level': { type: 'string', default: 'info' },
      'cpu-prof': { type: 'boolean', default: false },
      // A heap snapshot of the agent once every figure is taken (it stops the agent's event loop and
      // raises its RSS, so it is taken after the memory reading).
      'heap-snapshot': { type: 'boolean', default: false },
      strict: { type: 'boolean', default: false },
      note: { type: 'string', default: '' },
      'agent-node-options': { type: 'string', default: '' },
      'agent-env': { type: 'string', default: '' },
      // As the image runs it: the compiled JavaScript (built first), not the TypeScript sources.
      'from-source': { type: 'boolean', default: false },
      // The chart's default memory limit: the agent runs in a memory cgroup of this size where one
      // can be made (cgroup v1 here), so that Node sizes its heap as in the pod. 0: no cgroup.
      'memory-limit-mib': { type: 'string', default: '384' },
      // The local cluster's controller manager request rate (burst twice that); unset, its own
      // default (qps 20, burst 30) brings up some 5 pods a second: at N = 3,000 most of an hour
      // before every revision is DEPLOYED.
      'controller-qps': { type: 'string' },
      // The order of the clients, each on the same cluster after the ones before it (the first
      // meets a cold API server, the later ones the pods of the earlier ones). Flux may be left
      // out (it is built from Go modules the first time it is asked for: minutes).
      order: { type: 'string', default: 'agent,floor,kubectl,flux' },
      // Flux at its own defaults (--concurrent 4, --kube-api-qps 50, --kube-api-burst 300) instead
      // of the agent's concurrency and client rate limit.
      'flux-defaults': { type: 'boolean', default: false },
      // The agent alone: no floor or kubectl copies (no ratios), as for N = 10,000.
      'agent-only': { type: 'boolean', default: false },
      // Stop the agent's phase once every object is applied and the rollouts have had a few minutes
      // (no DEPLOYED wait, steady state or changes): at N = 10,000 the two-core cluster brings the
      // pods up over hours, while the agent's memory is what the run is for.
      'until-applied': { type: 'boolean', default: false },
      // Day two: after the agent's phase, a new agent process on the same cluster (an upgrade, a
      // failover), timed until it has looked at every deployment; its peak RSS and writes.
      restart: { type: 'boolean', default: false },
      // The local cluster's directory (etcd data, each component's log) kept in the run's directory,
      // so that a long run that fails can be read from the API server's and etcd's side too.
      'keep-cluster': { type: 'boolean', default: false },
      // This many runs, each a fresh cluster, the order rotated so that each client goes first once
      // in every three; prints the medians (bench/syncRuns.ts).
      runs: { type: 'string', default: '1' },
      // Set by --runs on each of its runs: the series they belong to (its start), for the medians.
      series: { type: 'string' },
      // Every wait's bound, in minutes (default N × 0.6 s, at least 2 minutes): a long N = 10,000
      // cold sync on a slow evening may need more.
      'phase-timeout-min': { type: 'string' },
    },
  }).values;
}

function usage(message: string): never {
  console.error(message);
  process.exit(2);
}

/** The options of one run, and how many runs were asked for (more than one: a rotated series). */
export function readOptions(argv: readonly string[]): {
  readonly options: SyncOptions;
  readonly runs: number;
} {
  const flags = parseFlags(argv);
  const deployments = Number(flags.deployments);
  const concurrency = Number(flags.concurrency);
  const pollMs = Number(flags['poll-interval-ms']);
  const patches = Number(flags.patches);
  const controllerQps = flags['controller-qps'] === undefined ? undefined : Number(flags['controller-qps']);
  if (
    ![deployments, concurrency, pollMs, patches, controllerQps ?? 1].every(
      (n) => Number.isInteger(n) && n > 0,
    )
  )
    usage(
      '--deployments, --concurrency, --poll-interval-ms, --patches and --controller-qps take positive whole numbers',
    );
  const agentOnly = flags['agent-only'];
  const order: readonly Phase[] = agentOnly
    ? ['agent']
    : flags.order.split(',').filter((p): p is Phase => (PHASES as readonly string[]).includes(p));
  const required: readonly Phase[] = agentOnly ? ['agent'] : ['agent', 'floor', 'kubectl'];
  if (order.length !== new Set(order).size || !required.every((p) => order.includes(p)))
    usage('--order takes agent, floor and kubectl, each once, and flux at most once, comma-separated');
  const runs = Number(flags.runs);
  // Every wait is bounded: a stuck phase fails the run instead of hanging it.
  const phaseTimeoutMs =
    flags['phase-timeout-min'] === undefined
      ? Math.max(120_000, deployments * 600)
      : Number(flags['phase-timeout-min']) * 60_000;
  // A series hands its flags on to each run, which checks this one.
  if (runs <= 1 && !(phaseTimeoutMs > 0)) usage('--phase-timeout-min takes a positive number');
  return {
    runs,
    options: {
      deployments,
      concurrency,
      pollMs,
      patches,
      logLevel: flags['log-level'],
      cpuProfile: flags['cpu-prof'],
      heapSnapshot: flags['heap-snapshot'],
      strict: flags.strict,
      note: flags.note,
      agentNodeOptions: flags['agent-node-options'],
      agentEnv: flags['agent-env'],
      fromSource: flags['from-source'],
      main: flags['from-source'] ? SOURCE_MAIN : BUILT_MAIN,
      memoryLimitMiB: Number(flags['memory-limit-mib']),
      controllerQps,
      order,
      agentOnly,
      fluxDefaults: flags['flux-defaults'],
      untilApplied: flags['until-applied'],
      restart: flags.restart,
      keepCluster: flags['keep-cluster'],
      series: flags.series,
      phaseTimeoutMs,
      settleAfterAppliedMs: Math.min(180_000, Math.max(10_000, deployments * 18)),
      // A cold sync is DEPLOYED once the controller manager has made every pod: some 2,200 at
      // N = 1,000, 5 a second at its default rate, so 440 s; at 400 s the resync could come
      // before DEPLOYED (402 s in a run of 2026-11-27) or among the changes.
      resyncIntervalMs: Math.max(120_000, deployments * 600),
    },
  };
}
