// The benchmark tables of bench/README.md, generated from the runs' own records in
// bench/results/*.json, so no figure is copied by hand.
import { z } from 'zod';

const SyncResult = z.looseObject({
  startedAt: z.string(),
  deployments: z.number(),
  objects: z.number().optional(),
  note: z.string().optional(),
  /** The start of the `--runs` series the run belongs to (each run's order of clients rotated). */
  series: z.string().optional(),
  /** Which client went first: the first meets a quiet cluster, the later ones the pods of the earlier. */
  order: z.array(z.string()).optional(),
  /** The local controller manager's request rate (unset: its default, 20). */
  clusterControllerManagerQps: z.number().optional(),
  coldSync: z.looseObject({
    appliedS: z.number(),
    agentCpuAtAppliedS: z.number().optional(),
    deployedS: z.number().nullable().optional(),
  }),
  floorS: z.number().nullable().optional(),
  kubectlS: z.number().nullable().optional(),
  coldRequestsPerDeployment: z.record(z.string(), z.number()).optional(),
  steady: z.looseObject({ writesExceptLease: z.number() }).optional(),
  changeToApplied: z.looseObject({ p99Ms: z.number() }).optional(),
  memory: z.looseObject({
    peakRssMiB: z.number(),
    peakHeapUsedMiB: z.number().optional(),
    peakGrowthKiBPerDeployment: z.number().nullable().optional(),
  }),
  /** `--restart`: a second agent process over what the first made. */
  restart: z.looseObject({ peakRssMiB: z.number(), caughtUpS: z.number() }).optional(),
  /**
   * `--cpu-prof`: where the profile was (older records) or its summary under bench/profiles/; the
   * profiler adds to the agent's CPU and slows its cold sync.
   */
  cpuProfileDir: z.string().optional(),
  cpuProfile: z.string().optional(),
  resync: z.looseObject({ cpuMsPerDeployment: z.number() }).optional(),
  /** Flux's phase (bench/sync/fluxRun.ts). */
  flux: z
    .looseObject({
      version: z.string(),
      settingsFrom: z.enum(['agent', 'defaults']),
      appliedS: z.number(),
      healthyS: z.number(),
      cpuAtAppliedS: z.number(),
      coldRequestsPerDeployment: z.record(z.string(), z.number()),
      steady: z.looseObject({ writes: z.number() }),
      changeToApplied: z.looseObject({ p99Ms: z.number() }),
      resync: z.looseObject({ cpuMsPerDeployment: z.number() }),
      peakRssMiB: z.looseObject({
        sourceController: z.number(),
        kustomizeController: z.number(),
        both: z.number(),
      }),
    })
    .optional(),
});
export type SyncResult = z.infer<typeof SyncResult>;

const MicroResult = z.looseObject({
  benchmark: z.enum(['render', 'poll', 'resync']),
  startedAt: z.string(),
  deployments: z.number(),
  medianMs: z.number(),
  p99Ms: z.number().optional(),
  maxMs: z.number().optional(),
  heldHeapMiB: z.number().optional(),
  machine: z.looseObject({ loadAverageAtStart: z.array(z.number()) }),
});
export type MicroResult = z.infer<typeof MicroResult>;

/** A `bench:render-size` record: one deployment grown along each shape, timed at each size. */
const RenderSizeResult = z.looseObject({
  benchmark: z.literal('render-size'),
  startedAt: z.string(),
  rows: z.array(
    z.looseObject({
      shape: z.string(),
      size: z.number(),
      inputKiB: z.number(),
      parseMs: z.number(),
      renderMs: z.number(),
      outcome: z.enum(['rendered', 'parse', 'render']),
    }),
  ),
  machine: z.looseObject({ loadAverageAtStart: z.array(z.number()) }),
});
export type RenderSizeResult = z.infer<typeof RenderSizeResult>;

const NodeDaemon = z.looseObject({ cpuPercent: z.number(), rssMiB: z.number() });

/** A `bench:node` record: the LangGraph path timed on the real node, and the node at rest. */
const RealNodeResult = z.looseObject({
  kind: z.literal('real-node'),
  startedAt: z.string(),
  runs: z.number(),
  restSeconds: z.number(),
  medianFirstAnsweredRunS: z.number(),
  medianNewRevisionAnsweredRunS: z.number(),
  firstAnsweredRunS: z.array(z.number()),
  newRevisionAnsweredRunS: z.array(z.number()),
  nodeAtRest: z.record(z.string(), NodeDaemon),
  /** Each phase of deploy → first answered run, its median over the runs (bench/deployTimeline.ts). */
  medianDeployPhasesS: z.record(z.string(), z.number().nullable()).optional(),
});
export type RealNodeResult = z.infer<typeof RealNodeResult>;

const TransportFigures = z.looseObject({
  clientCpuMsPerRequest: z.number(),
  apiServerCpuMsPerRequest: z.number(),
  requestsPerSecond: z.number(),
  connections: z.number(),
});

/** A `bench:transport` record: the agent's HTTP/1.1 pool against HTTP/2. */
const TransportResult = z.looseObject({
  benchmark: z.literal('transport'),
  startedAt: z.string(),
  requestsPerRound: z.number(),
  concurrency: z.number(),
  rounds: z.array(z.looseObject({ protocol: z.string() })),
  medians: z.record(z.string(), TransportFigures),
  machine: z.looseObject({ loadAverageAtStart: z.array(z.number()) }),
});
export type TransportResult = z.infer<typeof TransportResult>;

export class BenchResultError extends Error {
  override readonly name = 'BenchResultError';
  readonly file: string;
  constructor(file: string, cause: unknown) {
    super(`${file} is not a bench:sync result`, { cause });
    this.file = file;
  }
}

export type BenchResult =
  | { readonly kind: 'sync'; readonly result: SyncResult }
  | { readonly kind: 'micro'; readonly result: MicroResult }
  | { readonly kind: 'real-node'; readonly result: RealNodeResult }
  | { readonly kind: 'render-size'; readonly result: RenderSizeResult }
  | { readonly kind: 'transport'; readonly result: TransportResult };

/**
 * A record of bench/results: `<time>-render.json`, `<time>-poll.json`, `<time>-real-node.json`,
 * `<time>-render-size.json`, `<time>-transport.json`, else a bench:sync run.
 */
export function parseBenchResult(file: string, text: string): BenchResult {
  const json: unknown = JSON.parse(text);
  if (file.endsWith('-transport.json')) {
    const transport = TransportResult.safeParse(json);
    if (!transport.success) throw new BenchResultError(file, transport.error);
    return { kind: 'transport', result: transport.data };
  }
  if (file.endsWith('-render-size.json')) {
    const sized = RenderSizeResult.safeParse(json);
    if (!sized.success) throw new BenchResultError(file, sized.error);
    return { kind: 'render-size', result: sized.data };
  }
  if (file.endsWith('-real-node.json')) {
    const node = RealNodeResult.safeParse(json);
    if (!node.success) throw new BenchResultError(file, node.error);
    return { kind: 'real-node', result: node.data };
  }
  const micro = /-(render|poll|resync)\.json$/.test(file);
  const parsed = micro ? MicroResult.safeParse(json) : SyncResult.safeParse(json);
  if (!parsed.success) throw new BenchResultError(file, parsed.error);
  return micro
    ? { kind: 'micro', result: parsed.data as MicroResult }
    : { kind: 'sync', result: parsed.data as SyncResult };
}

/** A record's start to the minute, as the tables show it: `2026-11-28 02:53`. */
const minute = (startedAt: string) => startedAt.slice(0, 16).replace('T', ' ');

/** The one-minute load average when a run started. */
const loadAtStart = (r: { readonly machine: { readonly loadAverageAtStart: readonly number[] } }) =>
  r.machine.loadAverageAtStart[0]?.toFixed(2) ?? '–';

/** The newest record of each group, newest first: the tables show current figures; bench/results keeps every record. */
function newestOf<T extends { readonly startedAt: string }>(
  results: readonly T[],
  group: (r: T) => string,
): T[] {
  const newest = new Map<string, T>();
  for (const r of results) {
    const held = newest.get(group(r));
    if (!held || r.startedAt > held.startedAt) newest.set(group(r), r);
  }
  return [...newest.values()].sort((a, b) => b.startedAt.localeCompare(a.startedAt));
}

/** `npm run bench`'s newest render run and newest poll run; `bench:resync`'s newest of each N. */
export function microTableMarkdown(results: readonly MicroResult[]): string {
  const group = (r: MicroResult) => (r.benchmark === 'resync' ? `resync-${r.deployments}` : r.benchmark);
  const rows = newestOf(results, group).map((r) => {
    const n = r.deployments.toLocaleString('en-US');
    const figures =
      r.benchmark === 'render'
        ? `median ${fixed(r.medianMs, 2)} ms, p99 ${fixed(r.p99Ms, 2)} ms per deployment; ${fixed(r.heldHeapMiB, 1)} MiB held for ${n}`
        : r.benchmark === 'poll'
          ? `median ${fixed(r.medianMs, 1)} ms, max ${fixed(r.maxMs, 1)} ms per complete listing of ${n}`
          : `median ${fixed(r.medianMs, 3)} ms, max ${fixed(r.maxMs, 3)} ms of CPU per deployment, a full resync of ${n} converged deployments`;
    return `| ${minute(r.startedAt)} | ${r.benchmark} | ${figures} | ${loadAtStart(r)} |`;
  });
  return ['| run (UTC) | benchmark | figures | load at start |', '|---|---|---|---|', ...rows, ''].join('\n');
}

const fixed = (value: number | null | undefined, digits: number) =>
  value === null || value === undefined ? '–' : value.toFixed(digits);

const controllerQps = (result: SyncResult) => String(result.clusterControllerManagerQps ?? 20);

function requestsPerDeployment(result: SyncResult): string {
  const counts = result.coldRequestsPerDeployment;
  if (!counts) return '–';
  return Object.values(counts)
    .reduce((sum, n) => sum + n, 0)
    .toFixed(1);
}

/** A profiled run is no figure: the profiler's overhead is in its times. */
const profiled = (r: SyncResult) => r.cpuProfileDir !== undefined || r.cpuProfile !== undefined;

/** Whether a run timed the floor and kubectl too, so that its ratios exist. */
const compared = (r: SyncResult) => Boolean(r.floorS && r.kubectlS);

/**
 * Per N (largest first), the newest run of each kind — the agent alone, or beside the floor and
 * kubectl (the only kind with ratios) — at each controller rate.
 */
export function benchTableMarkdown(results: readonly SyncResult[]): string {
  const unprofiled = results.filter((r) => !profiled(r));
  const runs = newestOf(unprofiled, (r) => `${r.deployments} ${compared(r)} ${controllerQps(r)}`).sort(
    (a, b) => b.deployments - a.deployments,
  );
  const rows = runs.map((r) => {
    const floor = r.floorS ?? undefined;
    const kubectl = r.kubectlS ?? undefined;
    const applied = r.coldSync.appliedS;
    return [
      r.deployments.toLocaleString('en-US'),
      minute(r.startedAt),
      `${r.order?.join(' ') ?? 'agent floor kubectl'}, ${controllerQps(r)}`,
      `${fixed(applied, 1)} (${fixed(r.coldSync.agentCpuAtAppliedS, 1)})`,
      `${fixed(floor, 1)} / ${fixed(kubectl, 1)}`,
      floor ? fixed(applied / floor, 2) : '–',
      kubectl ? fixed(kubectl / applied, 2) : '–',
      requestsPerDeployment(r),
      r.steady ? String(r.steady.writesExceptLease) : '–',
      r.changeToApplied ? fixed(r.changeToApplied.p99Ms / 1000, 1) : '–',
      `${fixed(r.memory.peakRssMiB, 0)} / ${fixed(r.memory.peakHeapUsedMiB, 0)}${
        r.restart
          ? `; restarted: ${fixed(r.restart.peakRssMiB, 0)} RSS, caught up in ${fixed(r.restart.caughtUpS, 0)} s`
          : ''
      }`,
    ]
      .join(' | ')
      .replace(/^/, '| ')
      .concat(' |');
  });
  return [
    '| N | run (UTC) | order, controller qps | applied s (agent CPU s) | floor / kubectl s | agent / floor | kubectl / agent | requests / deployment | steady writes | change → applied p99 s | peak RSS / heap MiB (and a restart’s) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

function median(values: readonly number[]): number | undefined {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/** The newest complete `--runs` series (its runs' orders rotated) of each N: the medians the targets judge. */
export function benchMediansMarkdown(results: readonly SyncResult[]): string {
  const series = new Map<string, SyncResult[]>();
  for (const r of results) if (r.series) series.set(r.series, [...(series.get(r.series) ?? []), r]);
  // A series cut short (a run that failed) has no median of rotated orders: not tabled here.
  const complete = [...series.entries()].filter(([, runs]) => runs.length >= 3);
  const rows = newestOf(
    complete.map(([startedAt, runs]) => ({ startedAt, runs })),
    ({ runs }) => String(runs[0]?.deployments),
  ).map(({ startedAt: start, runs }) => {
    const n = runs[0]?.deployments ?? 1;
    const of = (pick: (r: SyncResult) => number | null | undefined) =>
      median(runs.map((r) => pick(r) ?? Number.NaN));
    return [
      minute(start),
      n.toLocaleString('en-US'),
      String(runs.length),
      [...new Set(runs.map(controllerQps))].join(', '),
      fixed(
        of((r) => r.coldSync.appliedS),
        1,
      ),
      fixed(
        of((r) => (r.floorS ? r.coldSync.appliedS / r.floorS : undefined)),
        2,
      ),
      fixed(
        of((r) => (r.kubectlS ? r.kubectlS / r.coldSync.appliedS : undefined)),
        2,
      ),
      fixed(
        of((r) => (r.flux && r.coldSync.deployedS ? r.flux.healthyS / r.coldSync.deployedS : undefined)),
        2,
      ),
      fixed(
        of((r) => Number(requestsPerDeployment(r))),
        1,
      ),
      fixed(
        of((r) => ((r.coldSync.agentCpuAtAppliedS ?? Number.NaN) * 1000) / n),
        1,
      ),
      fixed(
        of((r) => r.memory.peakRssMiB),
        0,
      ),
      fixed(
        of((r) => r.memory.peakGrowthKiBPerDeployment),
        1,
      ),
    ]
      .join(' | ')
      .replace(/^/, '| ')
      .concat(' |');
  });
  return [
    '| series (UTC) | N | runs | controller qps | applied s | agent / floor | kubectl / agent | flux / agent, healthy | requests / deployment | agent CPU ms / deployment | peak RSS MiB | peak RSS growth KiB / deployment |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

const sumOf = (counts: Readonly<Record<string, number>>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** Per N and Flux's settings (the agent's, or its defaults), the newest unprofiled run with Flux beside the agent. */
export function fluxTableMarkdown(results: readonly SyncResult[]): string {
  const withFlux = results.filter((r) => r.flux !== undefined && !profiled(r));
  const runs = newestOf(withFlux, (r) => `${r.deployments} ${r.flux?.settingsFrom}`).sort(
    (a, b) => b.deployments - a.deployments,
  );
  const rows = runs.flatMap((r) => {
    const flux = r.flux;
    if (!flux) return [];
    const n = r.deployments;
    const deployed = r.coldSync.deployedS ?? undefined;
    return [
      [
        n.toLocaleString('en-US'),
        minute(r.startedAt),
        `${flux.version}, ${flux.settingsFrom === 'agent' ? "agent's" : 'defaults'}`,
        `${fixed(flux.appliedS, 1)} / ${fixed(r.coldSync.appliedS, 1)}`,
        `${fixed(flux.healthyS, 1)} / ${fixed(deployed, 1)}`,
        deployed ? fixed(flux.healthyS / deployed, 2) : '–',
        `${fixed((flux.cpuAtAppliedS * 1000) / n, 1)} / ${fixed(((r.coldSync.agentCpuAtAppliedS ?? Number.NaN) * 1000) / n, 1)}`,
        `${fixed(sumOf(flux.coldRequestsPerDeployment), 1)} / ${requestsPerDeployment(r)}`,
        `${flux.steady.writes} / ${r.steady?.writesExceptLease ?? '–'}`,
        `${fixed(flux.changeToApplied.p99Ms / 1000, 1)} / ${fixed((r.changeToApplied?.p99Ms ?? Number.NaN) / 1000, 1)}`,
        `${fixed(flux.resync.cpuMsPerDeployment, 2)} / ${fixed(r.resync?.cpuMsPerDeployment, 2)}`,
        `${fixed(flux.peakRssMiB.sourceController, 0)} + ${fixed(flux.peakRssMiB.kustomizeController, 0)} / ${fixed(r.memory.peakRssMiB, 0)}`,
      ].join(' | '),
    ].map((row) => `| ${row} |`);
  });
  return [
    '| N | run (UTC) | Flux, its settings | applied s | healthy s | flux / agent, healthy | CPU ms / deployment | requests / deployment | steady writes | change → applied p99 s | resync CPU ms / deployment | peak RSS MiB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

const OUTCOME = { rendered: 'rendered', parse: 'refused by the schema', render: 'refused by render' };

/**
 * `bench:render-size`'s newest run: of each shape, the largest size rendered and the largest
 * refused (the run's record holds every size), their times, and the time per KiB of input.
 */
export function renderSizeTableMarkdown(results: readonly RenderSizeResult[]): string {
  const [newest] = newestOf(results, () => 'render-size');
  const largest = new Map<string, RenderSizeResult['rows'][number]>();
  for (const r of newest?.rows ?? []) {
    const key = `${r.shape} ${r.outcome === 'rendered'}`;
    if ((largest.get(key)?.size ?? -1) < r.size) largest.set(key, r);
  }
  const rows = (newest?.rows ?? [])
    .filter((r) => largest.get(`${r.shape} ${r.outcome === 'rendered'}`) === r)
    .map((r) => {
      const total = r.parseMs + r.renderMs;
      return `| ${r.shape} | ${r.size.toLocaleString('en-US')} | ${r.inputKiB.toLocaleString('en-US')} | ${fixed(r.parseMs, 2)} | ${fixed(r.renderMs, 2)} | ${fixed((total * 1000) / Math.max(r.inputKiB, 1), 1)} | ${OUTCOME[r.outcome]} |`;
    });
  const header = newest
    ? `Run ${minute(newest.startedAt)} UTC, load at start ${loadAtStart(newest)}.\n\n`
    : '';
  return [
    `${header}| shape | size | input KiB | parse ms | render ms | µs / KiB | outcome |`,
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

/** `bench:transport`'s newest run: a row a protocol, its medians of three rounds. */
export function transportTableMarkdown(results: readonly TransportResult[]): string {
  const newest = newestFirst(results)[0];
  const rows = Object.entries(newest?.medians ?? {}).map(
    ([protocol, m]) =>
      `| ${protocol} | ${m.connections} | ${m.clientCpuMsPerRequest.toFixed(3)} | ${m.apiServerCpuMsPerRequest.toFixed(3)} | ${m.requestsPerSecond} |`,
  );
  const heading = newest
    ? `Run ${minute(newest.startedAt)} UTC: ${newest.requestsPerRound.toLocaleString('en-US')} applies a round at concurrency ${newest.concurrency}, medians of ${newest.rounds.length / rows.length} rounds a protocol, load at start ${loadAtStart(newest)}.\n\n`
    : '';
  return `${heading}${[
    '| protocol | connections | client CPU ms / request | API server CPU ms / request | requests / s |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n')}\n`;
}

const newestFirst = <T extends { readonly startedAt: string }>(results: readonly T[]): T[] =>
  [...results].sort((a, b) => b.startedAt.localeCompare(a.startedAt));

/** Every `bench:node` run, newest first: the LangGraph path's medians and the node's daemons at rest. */
/** The real node's newest runs tabled: bench/results keeps every one. */
const REAL_NODE_RUNS_SHOWN = 2;

export function realNodeTableMarkdown(results: readonly RealNodeResult[]): string {
  const rows = newestFirst(results)
    .slice(0, REAL_NODE_RUNS_SHOWN)
    .map((r) => {
      const daemons = Object.entries(r.nodeAtRest)
        .map(([name, d]) => `${name} ${d.cpuPercent} % / ${d.rssMiB} MiB`)
        .join('; ');
      const total = Object.values(r.nodeAtRest).reduce(
        (sum, d) => ({ cpu: sum.cpu + d.cpuPercent, rss: sum.rss + d.rssMiB }),
        { cpu: 0, rss: 0 },
      );
      return `| ${minute(r.startedAt)} | ${r.runs} | ${r.medianFirstAnsweredRunS.toFixed(1)} s | ${r.medianNewRevisionAnsweredRunS.toFixed(1)} s | ${total.cpu.toFixed(1)} % / ${total.rss.toFixed(0)} MiB | ${daemons} |`;
    });
  return [
    '| run | deployments | deploy → first answered run (median) | new revision → first answered run (median) | node at rest (cpu of a core / RSS) | by daemon |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** The phases of deploy → first answered run, `[key, heading]`, in the order they follow one another. */
const DEPLOY_PHASES: readonly (readonly [string, string])[] = [
  ['controlPlaneToPoll', 'CLI → agent poll'],
  ['agentRenderApply', 'agent: render, apply'],
  ['scheduling', 'scheduling'],
  ['podStart', 'pod start'],
  ['imagePull', 'of it image pull'],
  ['storesReadyAfterApply', 'stores ready after apply'],
  ['serverWaitedForStores', 'server waits for stores'],
  ['serverReady', 'server start → ready'],
  ['firstRun', 'ready → first run'],
  ['deployedReceivedAfterReady', 'ready → DEPLOYED received'],
  ['serverRestarts', 'server restarts'],
];

/** Every `bench:node` run that split deploy → first answered run into phases: their medians. */
export function realNodePhasesTableMarkdown(results: readonly RealNodeResult[]): string {
  const rows = newestFirst(results)
    .slice(0, REAL_NODE_RUNS_SHOWN)
    .flatMap((r) => {
      const phases = r.medianDeployPhasesS;
      if (!phases) return [];
      const cells = DEPLOY_PHASES.map(([key]) => {
        const value = phases[key];
        if (value === undefined || value === null) return '–';
        return key === 'serverRestarts' ? String(value) : `${value.toFixed(1)} s`;
      });
      return [
        `| ${minute(r.startedAt)} | ${r.medianFirstAnsweredRunS.toFixed(1)} s | ${cells.join(' | ')} |`,
      ];
    });
  return [
    `| run | total | ${DEPLOY_PHASES.map(([, heading]) => heading).join(' | ')} |`,
    `|---|---|${DEPLOY_PHASES.map(() => '---').join('|')}|`,
    ...rows,
  ].join('\n');
}
