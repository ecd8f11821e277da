// A run's record (bench/results/<time>-<N>.json), the targets it is judged by, and the table it
// prints.
import { AGENT_VERSION } from '../../src/version.ts';
import { type CpuProfile, readProfiles, summarize, summaryMarkdown } from '../cpuProfile.ts';
import { machine, writeProfileSummary, writeRecord } from '../record.ts';
import {
  controlPlaneRequests,
  leaseWrites,
  polls,
  reconciles,
  reconcilesByPath,
  requestsByKindAndVerb,
  requestsByVerb,
} from './agentMetrics.ts';
import type { AgentRun } from './agentRun.ts';
import type { FluxRun } from './fluxRun.ts';
import { seconds } from './log.ts';
import type { SyncOptions } from './options.ts';
import type { Restart } from './restart.ts';

export interface RunFigures {
  readonly options: SyncOptions;
  readonly startedAt: Date;
  readonly loadAtStart: readonly number[];
  /** How many objects the fleet renders to. */
  readonly objects: number;
  readonly agentRun: AgentRun;
  readonly floorMs: number | undefined;
  readonly kubectlMs: number | undefined;
  readonly fluxRun: FluxRun | undefined;
  readonly restart: Restart | undefined;
  readonly versions: { serverVersion?: { gitVersion?: string }; clientVersion?: { gitVersion?: string } };
  readonly inMemoryCgroup: boolean;
  readonly profileDir: string | undefined;
  readonly snapshotDir: string | undefined;
}

/**
 * The agent's profile, the cold sync apart (the CPU target's) and then the whole phase, as the
 * text of bench/profiles/<record's name>.md.
 */
export function profileMarkdown(
  run: { readonly deployments: number; readonly startedAt: Date; readonly appliedMs: number },
  profiles: readonly CpuProfile[],
): string {
  const appliedS = seconds(run.appliedMs);
  return [
    `# The agent's CPU profile: bench:sync, N = ${run.deployments.toLocaleString('en-US')}, ${run.startedAt.toISOString()}`,
    '',
    'From `npm run bench:sync -- --cpu-prof`, summarized by bench/cpuProfile.ts: self time by area',
    'and by function.',
    '',
    `## The cold sync: the process's first ${appliedS} s, until every object was applied`,
    '',
    summaryMarkdown(summarize(profiles, undefined, run.appliedMs), 25),
    '## The whole agent phase: cold sync, rollouts to DEPLOYED, steady state, changes, resync',
    '',
    summaryMarkdown(summarize(profiles), 25),
  ].join('\n');
}

/** The agent's profile as bench/profiles/<record's name>.md; its path relative to bench/. */
async function profileSummary(
  { options, startedAt, agentRun }: RunFigures,
  profileDir: string,
): Promise<string> {
  const text = profileMarkdown(
    { deployments: options.deployments, startedAt, appliedMs: agentRun.appliedMs },
    readProfiles(profileDir),
  );
  return writeProfileSummary(startedAt, String(options.deployments), text);
}

const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined ? undefined : Number((a / b).toFixed(2));

/** The targets against Flux, each judged as the median of --runs 3. */
function fluxTargets(
  flux: FluxRun,
  fluxOverAgentHealthy: number | undefined,
  agent: {
    readonly cpuMsPerDeployment: number;
    readonly changeP99Ms: number | undefined;
    readonly peakRssMiB: number | undefined;
    readonly n: number;
  },
) {
  return [
    {
      target: 'Flux ≥ 1.5 × the agent, cold sync to healthy (judged as the median of --runs 3)',
      pass: (fluxOverAgentHealthy ?? 0) >= 1.5,
    },
    {
      target: "the agent's change → applied p99 below Flux's",
      pass: (agent.changeP99Ms ?? Number.POSITIVE_INFINITY) < flux.changeToApplied.p99Ms,
    },
    {
      target: "the agent's peak RSS below the two Flux controllers' together",
      pass: (agent.peakRssMiB ?? Number.POSITIVE_INFINITY) < flux.peakRssMiB.both,
    },
    {
      target: "the agent's CPU per deployment (cold, to applied) below Flux's",
      pass: agent.cpuMsPerDeployment < (flux.cpuAtAppliedS * 1000) / agent.n,
    },
  ];
}

/** Writes the run's record and prints its table and targets; says whether a target was missed. */
export async function report(figures: RunFigures): Promise<{ readonly missedTarget: boolean }> {
  const { options, agentRun, restart, floorMs, kubectlMs, fluxRun, loadAtStart, profileDir, snapshotDir } =
    figures;
  const { deployments: n, pollMs } = options;
  const { appliedMs, appliedCpuS, afterCold, steady, latency, memory, atStart } = agentRun;
  const growthKiB = (((memory?.hwmMiB ?? Number.NaN) - (atStart?.rssMiB ?? Number.NaN)) * 1024) / n;
  const verbs = requestsByVerb(afterCold);
  const result = {
    startedAt: figures.startedAt.toISOString(),
    deployments: n,
    objects: figures.objects,
    concurrency: options.concurrency,
    pollIntervalMs: pollMs,
    clusterControllerManagerQps: options.controllerQps,
    note: options.note || undefined,
    series: options.series,
    agent: {
      ran: options.fromSource ? 'src/cli/main.ts (TypeScript, type stripping)' : 'dist/cli/main.js (bundled)',
      memoryCgroupMiB: figures.inMemoryCgroup ? options.memoryLimitMiB : undefined,
      nodeOptions: options.agentNodeOptions || undefined,
      env: options.agentEnv || undefined,
    },
    machine: machine(loadAtStart),
    versions: {
      agent: AGENT_VERSION,
      node: process.version,
      kubeApiserver: figures.versions.serverVersion?.gitVersion,
      kubectl: figures.versions.clientVersion?.gitVersion,
    },
    coldSync: {
      appliedS: seconds(appliedMs),
      agentCpuAtAppliedS: appliedCpuS,
      reconcilesAtApplied: agentRun.appliedReconciles,
      fullReconcilesAtApplied: agentRun.appliedFullReconciles,
      reconcilesAtDeployed: reconciles(afterCold),
      fullReconcilesAtDeployed: reconcilesByPath(afterCold, 'full'),
      deployedS: agentRun.deployedMs === undefined ? null : seconds(agentRun.deployedMs),
      // With --until-applied: how many were DEPLOYED when the reading was taken.
      deployedAtEnd: agentRun.deployedAtEnd,
      // With --until-applied: the pods of the agent's namespaces at the reading (the cache holds
      // a summary of each).
      podsAtReading: agentRun.podsAtReading,
      liveDeploymentsInFirstNamespace: agentRun.live,
    },
    order: options.order,
    floorS: floorMs === undefined ? null : seconds(floorMs),
    kubectlS: kubectlMs === undefined ? null : seconds(kubectlMs),
    ratios: {
      agentOverFloor: ratio(appliedMs, floorMs),
      kubectlOverAgent: ratio(kubectlMs, appliedMs),
      fluxOverAgentApplied: ratio(fluxRun?.appliedS, seconds(appliedMs)),
      fluxOverAgentHealthy: ratio(
        fluxRun?.healthyS,
        agentRun.deployedMs === undefined ? undefined : seconds(agentRun.deployedMs),
      ),
    },
    flux: fluxRun,
    coldRequestsPerDeployment: Object.fromEntries(
      Object.entries(verbs).map(([verb, count]) => [verb, Number((count / n).toFixed(2))]),
    ),
    coldRequestsByKindAndVerb: requestsByKindAndVerb(afterCold),
    // What the wall time costs, not the deployments: a Lease renewal every retry period and a read
    // of the suspensions at every poll, however long the cluster takes to make the pods ready.
    coldTimedRequests: { leaseWrites: leaseWrites(afterCold), suspensionReads: polls(afterCold) },
    coldControlPlanePerCycle: Number(
      (controlPlaneRequests(afterCold) / Math.max(1, polls(afterCold))).toFixed(1),
    ),
    coldPollCycles: polls(afterCold),
    untilApplied: options.untilApplied || undefined,
    steady: steady && { ...steady, controlPlanePerCycle: Number(steady.controlPlanePerCycle.toFixed(1)) },
    changeToApplied: latency,
    resync: agentRun.resync,
    restart,
    memory: {
      peakRssMiB: Number((memory?.hwmMiB ?? Number.NaN).toFixed(1)),
      rssAtStartMiB: Number((atStart?.rssMiB ?? Number.NaN).toFixed(1)),
      peakGrowthKiBPerDeployment: Number(growthKiB.toFixed(1)),
      rssAtEndMiB: Number((memory?.rssMiB ?? Number.NaN).toFixed(1)),
      peakHeapUsedMiB: Number(agentRun.peakHeapMiB.toFixed(1)),
    },
    // Until the reading: the longest event-loop stall and the time spent in major GCs.
    longestEventLoopStallS: Number(agentRun.longestStallS.toFixed(2)),
    majorGcS: Number(agentRun.majorGcS.toFixed(1)),
    totalRequests: requestsByVerb(agentRun.final),
    // The agent's CPU profile over its whole phase, summarized where the record can point to it.
    cpuProfile: profileDir && (await profileSummary(figures, profileDir)),
  };

  // The targets for one run (its ratios are judged as the median of three runs in rotated order).
  const requestsPerDeployment = Object.values(result.coldRequestsPerDeployment).reduce(
    (sum, count) => sum + count,
    0,
  );
  const targets = [
    ...(options.agentOnly
      ? []
      : [
          {
            target: 'cold sync to applied ≤ 1.5 × floor (judged as the median of --runs 3)',
            pass: (result.ratios.agentOverFloor ?? Number.POSITIVE_INFINITY) <= 1.5,
          },
          {
            target: 'kubectl ≥ 1.2 × the agent (judged as the median of --runs 3; ≥ 1.0 in every run)',
            pass: (result.ratios.kubectlOverAgent ?? 0) >= 1.2,
          },
        ]),
    ...(fluxRun
      ? fluxTargets(fluxRun, result.ratios.fluxOverAgentHealthy, {
          cpuMsPerDeployment: ((appliedCpuS ?? Number.NaN) * 1000) / n,
          changeP99Ms: latency?.p99Ms,
          peakRssMiB: memory?.hwmMiB,
          n,
        })
      : []),
    { target: 'API requests per deployment in the cold sync ≤ 10', pass: requestsPerDeployment <= 10 },
    {
      target: 'agent CPU in the cold sync ≤ 15 ms per deployment',
      pass: (appliedCpuS ?? Number.POSITIVE_INFINITY) * 1000 <= 15 * n,
    },
    {
      target: 'full reconciles in the cold sync ≤ 2 per deployment',
      pass: reconcilesByPath(afterCold, 'full') <= 2 * n,
    },
    ...(agentRun.resync
      ? [
          {
            target: 'a full resync of the converged fleet ≤ 1 ms of agent CPU per deployment',
            pass: agentRun.resync.cpuMsPerDeployment <= 1,
          },
        ]
      : []),
    ...(steady && latency
      ? [
          { target: '0 writes in steady state (Lease aside)', pass: steady.writesExceptLease === 0 },
          {
            target: `change → applied p99 ≤ poll interval + 1 s (${pollMs + 1000} ms)`,
            pass: latency.p99Ms <= pollMs + 1000,
          },
        ]
      : []),
    { target: 'peak RSS growth ≤ 25 KiB per deployment', pass: growthKiB <= 25 },
    {
      target: "peak RSS within the chart's 384 MiB",
      pass: (memory?.hwmMiB ?? Number.POSITIVE_INFINITY) <= 384,
    },
  ];
  const path = await writeRecord(figures.startedAt, String(n), { ...result, targets });

  const rows: [string, string][] = [
    ['deployments / objects', `${n} / ${figures.objects}`],
    ['concurrency, poll interval', `${options.concurrency}, ${pollMs} ms`],
    [
      'cold sync: every object applied',
      `${result.coldSync.appliedS} s (agent CPU ${result.coldSync.agentCpuAtAppliedS} s, ${agentRun.appliedReconciles} reconciles, ${agentRun.appliedFullReconciles} full)`,
    ],
    [
      'cold sync: every revision DEPLOYED',
      result.coldSync.deployedS === null
        ? `not waited for (${agentRun.deployedAtEnd} of ${n} DEPLOYED and ${agentRun.podsAtReading} pods at the reading)`
        : `${result.coldSync.deployedS} s (${result.coldSync.reconcilesAtDeployed} reconciles, ${result.coldSync.fullReconcilesAtDeployed} full)`,
    ],
    ['order', options.order.join(', ')],
    ['floor (bare SSA loop)', `${result.floorS ?? '–'} s`],
    ['kubectl apply --server-side (per namespace)', `${result.kubectlS ?? '–'} s`],
    [
      `Flux ${fluxRun?.version ?? ''} (${fluxRun ? `${fluxRun.settingsFrom === 'agent' ? "the agent's" : 'its default'} concurrency ${fluxRun.settings.concurrent}, qps ${fluxRun.settings.kubeApiQps}` : 'not run'})`,
      fluxRun
        ? `applied ${fluxRun.appliedS} s, Ready ${fluxRun.healthyS} s (controllers' CPU ${fluxRun.cpuAtAppliedS} / ${fluxRun.cpuAtHealthyS} s)`
        : '–',
    ],
    ['agent / floor', `${result.ratios.agentOverFloor ?? '–'}`],
    ['kubectl / agent', `${result.ratios.kubectlOverAgent ?? '–'}`],
    [
      'flux / agent: applied, healthy (DEPLOYED)',
      `${result.ratios.fluxOverAgentApplied ?? '–'}, ${result.ratios.fluxOverAgentHealthy ?? '–'}`,
    ],
    [
      'Flux: CPU per deployment (to applied), requests per deployment (to Ready)',
      fluxRun
        ? `${((fluxRun.cpuAtAppliedS * 1000) / n).toFixed(1)} ms, ${Object.entries(
            fluxRun.coldRequestsPerDeployment,
          )
            .map(([method, count]) => `${method} ${count}`)
            .join(', ')}`
        : '–',
    ],
    [
      'Flux: steady writes, change → applied p50 / p99, resync CPU per deployment',
      fluxRun
        ? `${fluxRun.steady.writes} in ${fluxRun.steady.seconds} s, ${fluxRun.changeToApplied.p50Ms} / ${fluxRun.changeToApplied.p99Ms} ms, ${fluxRun.resync.cpuMsPerDeployment} ms`
        : '–',
    ],
    [
      'Flux: peak RSS source / kustomize (both)',
      fluxRun
        ? `${fluxRun.peakRssMiB.sourceController} / ${fluxRun.peakRssMiB.kustomizeController} (${fluxRun.peakRssMiB.both}) MiB`
        : '–',
    ],
    [
      'agent CPU per deployment (cold, to applied)',
      `${(((appliedCpuS ?? Number.NaN) * 1000) / n).toFixed(1)} ms`,
    ],
    [
      'API requests per deployment (cold)',
      Object.entries(result.coldRequestsPerDeployment)
        .map(([verb, count]) => `${verb} ${count}`)
        .join(', '),
    ],
    ['control-plane requests per poll (cold)', `${result.coldControlPlanePerCycle}`],
    [
      'steady (5 polls): writes, Lease aside',
      steady ? `${steady.writesExceptLease} (Lease writes ${steady.leaseWrites})` : '–',
    ],
    ['steady: control-plane requests per poll', `${result.steady?.controlPlanePerCycle ?? '–'}`],
    [
      'API requests per deployment (cold), timed ones aside',
      `${(requestsPerDeployment - (leaseWrites(afterCold) + polls(afterCold)) / n).toFixed(2)} (Lease renewals ${leaseWrites(afterCold)}, suspension reads ${polls(afterCold)})`,
    ],
    [
      'change → applied p50 / p99',
      latency ? `${latency.p50Ms} / ${latency.p99Ms} ms (${latency.patches} changes)` : '–',
    ],
    [
      "change → applied, the agent's means: polls, poll, queue wait, reconcile",
      latency
        ? `${latency.parts.polls}, ${latency.parts.pollMs} ms, ${latency.parts.queueWaitMs} ms, ${latency.parts.reconcileMs} ms`
        : '–',
    ],
    [
      'full resync: agent CPU per deployment, status / full paths',
      agentRun.resync
        ? `${agentRun.resync.cpuMsPerDeployment} ms, ${agentRun.resync.statusPath} / ${agentRun.resync.fullPath} (${agentRun.resync.writesExceptLease} writes)`
        : '–',
    ],
    ['peak RSS / peak heap used', `${result.memory.peakRssMiB} / ${result.memory.peakHeapUsedMiB} MiB`],
    [
      'peak RSS growth',
      `${result.memory.peakGrowthKiBPerDeployment} KiB per deployment (from ${result.memory.rssAtStartMiB} MiB at start)`,
    ],
    [
      'restart: caught up (CPU), writes, peak RSS',
      restart
        ? `${restart.caughtUpS} s (${restart.cpuS} s), ${restart.writesExceptLease}, ${restart.peakRssMiB} MiB (from ${restart.rssAtStartMiB})`
        : '–',
    ],
    [
      'machine',
      `${result.machine.cores} cores, ${result.machine.memoryGiB} GiB, load ${loadAtStart.join(' ')} → ${result.machine.loadAverageAtEnd.join(' ')}`,
    ],
    [
      'versions',
      `agent ${AGENT_VERSION}, node ${process.version}, kube-apiserver ${result.versions.kubeApiserver}`,
    ],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n'));
  console.log(`\nTargets (stated at N = 1,000${n === 1000 ? '' : `; this run is N = ${n}`}):`);
  for (const { target, pass } of targets) console.log(`  ${pass ? 'PASS' : 'FAIL'}  ${target}`);
  console.log(`\nResults: ${path}${profileDir ? `\nCPU profile: ${profileDir}` : ''}`);
  if (snapshotDir) console.log(`Heap snapshot: ${snapshotDir}`);
  return { missedTarget: targets.some((t) => !t.pass) };
}
