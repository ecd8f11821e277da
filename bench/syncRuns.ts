// `bench:sync --runs N`: N runs of the sync benchmark, each a fresh cluster and its own record,
// the order of the clients asked for (`--order`: agent, floor, kubectl and Flux unless told
// otherwise) rotated so that each goes first once in every round of them (the first meets a cold
// API server, the later ones the pods of the earlier ones); then the medians, judged against the
// targets (bench/README.md, "Targets").
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { median } from './statistics.ts';
import type { Phase } from './sync/options.ts';

/** Run `i`'s order: `order` rotated by `i`, so that each client goes first once in `order.length` runs. */
export function rotatedOrder(order: readonly Phase[], i: number): string {
  const k = i % order.length;
  return [...order.slice(k), ...order.slice(0, k)].join(',');
}

interface RunRecord {
  readonly deployments: number;
  readonly coldSync: {
    readonly appliedS: number;
    readonly agentCpuAtAppliedS?: number;
    readonly fullReconcilesAtDeployed?: number;
  };
  readonly ratios: {
    readonly agentOverFloor?: number;
    readonly kubectlOverAgent?: number;
    readonly fluxOverAgentHealthy?: number;
  };
  readonly flux?: {
    readonly cpuAtAppliedS: number;
    readonly changeToApplied: { readonly p99Ms: number };
    readonly peakRssMiB: { readonly both: number };
  };
  readonly coldRequestsPerDeployment: Readonly<Record<string, number>>;
  readonly memory: { readonly peakRssMiB: number; readonly peakGrowthKiBPerDeployment?: number };
  readonly resync?: { readonly cpuMsPerDeployment: number };
  readonly changeToApplied?: { readonly p99Ms: number };
  readonly steady?: { readonly writesExceptLease: number };
  readonly pollIntervalMs: number;
}

/** `args` without `--runs`, `--order` and `--series` (each with its value). */
function withoutDriverFlags(args: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    const name = arg.split('=')[0];
    if (name === '--runs' || name === '--order' || name === '--series') {
      if (!arg.includes('=')) i++;
      continue;
    }
    kept.push(arg);
  }
  return kept;
}

/** Runs bench/sync.ts once as a child process; resolves to its record's path. */
function runOnce(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [new URL('./sync.ts', import.meta.url).pathname, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    let linger: NodeJS.Timeout | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      out += chunk.toString();
      // Its record is written: a run that does not end within a minute is stopped, not waited on.
      if (linger === undefined && /^Results: /m.test(out))
        linger = setTimeout(() => child.kill('SIGTERM'), 60_000);
    });
    child.once('exit', (code) => {
      clearTimeout(linger);
      const path = /^Results: (.+)$/m.exec(out)?.[1];
      if (path) resolve(path);
      else reject(new Error(`bench:sync run exited ${code} without a record`));
    });
  });
}

export async function runRotated(
  runs: number,
  argv: readonly string[],
  clients: readonly Phase[],
): Promise<number> {
  const series = new Date().toISOString();
  const base = withoutDriverFlags(argv);
  const records: RunRecord[] = [];
  for (let i = 0; i < runs; i++) {
    const order = rotatedOrder(clients, i);
    console.error(`[bench:sync] run ${i + 1} of ${runs}, order ${order}`);
    const path = await runOnce([...base, '--order', order, '--series', series]);
    records.push(JSON.parse(await readFile(path, 'utf8')) as RunRecord);
  }
  const n = records[0]?.deployments ?? 1;
  const of = (pick: (r: RunRecord) => number | undefined) =>
    median(records.map((r) => pick(r) ?? Number.NaN));
  const figures = {
    agentOverFloor: of((r) => r.ratios.agentOverFloor),
    kubectlOverAgent: of((r) => r.ratios.kubectlOverAgent),
    fluxOverAgentHealthy: of((r) => r.ratios.fluxOverAgentHealthy),
    fluxCpuMsPerDeployment: of((r) => ((r.flux?.cpuAtAppliedS ?? Number.NaN) * 1000) / n),
    fluxChangeToAppliedP99Ms: of((r) => r.flux?.changeToApplied.p99Ms),
    fluxPeakRssMiB: of((r) => r.flux?.peakRssMiB.both),
    requestsPerDeployment: of((r) => Object.values(r.coldRequestsPerDeployment).reduce((a, b) => a + b, 0)),
    cpuMsPerDeployment: of((r) => ((r.coldSync.agentCpuAtAppliedS ?? Number.NaN) * 1000) / n),
    fullReconcilesPerDeployment: of((r) => (r.coldSync.fullReconcilesAtDeployed ?? Number.NaN) / n),
    resyncCpuMsPerDeployment: of((r) => r.resync?.cpuMsPerDeployment),
    changeToAppliedP99Ms: of((r) => r.changeToApplied?.p99Ms),
    steadyWritesExceptLease: of((r) => r.steady?.writesExceptLease),
    appliedS: of((r) => r.coldSync.appliedS),
    peakRssMiB: of((r) => r.memory.peakRssMiB),
    peakGrowthKiBPerDeployment: of((r) => r.memory.peakGrowthKiBPerDeployment),
  };
  const pollMs = records[0]?.pollIntervalMs ?? Number.NaN;
  const slowestKubectlOverAgent = Math.min(...records.map((r) => r.ratios.kubectlOverAgent ?? Number.NaN));
  const flux = records.some((r) => r.flux !== undefined);
  const targets = [
    ...(flux
      ? [
          { target: 'flux / agent ≥ 1.5 (cold sync to healthy)', pass: figures.fluxOverAgentHealthy >= 1.5 },
          {
            target: "agent's change → applied p99 below Flux's",
            pass: figures.changeToAppliedP99Ms < figures.fluxChangeToAppliedP99Ms,
          },
          {
            target: "agent's peak RSS below Flux's two controllers'",
            pass: figures.peakRssMiB < figures.fluxPeakRssMiB,
          },
          {
            target: "agent's CPU per deployment below Flux's",
            pass: figures.cpuMsPerDeployment < figures.fluxCpuMsPerDeployment,
          },
        ]
      : []),
    { target: 'agent / floor ≤ 1.5', pass: figures.agentOverFloor <= 1.5 },
    { target: 'kubectl / agent ≥ 1.2', pass: figures.kubectlOverAgent >= 1.2 },
    { target: 'kubectl / agent ≥ 1.0 in every run', pass: slowestKubectlOverAgent >= 1.0 },
    { target: 'API requests per deployment ≤ 10', pass: figures.requestsPerDeployment <= 10 },
    { target: 'agent CPU ≤ 15 ms per deployment', pass: figures.cpuMsPerDeployment <= 15 },
    { target: 'full reconciles ≤ 2 per deployment', pass: figures.fullReconcilesPerDeployment <= 2 },
    { target: 'full resync ≤ 1 ms of agent CPU per deployment', pass: figures.resyncCpuMsPerDeployment <= 1 },
    { target: '0 writes in the steady state (Lease aside)', pass: figures.steadyWritesExceptLease === 0 },
    {
      target: `change → applied p99 ≤ poll interval + 1 s`,
      pass: figures.changeToAppliedP99Ms <= pollMs + 1000,
    },
    { target: 'peak RSS growth ≤ 25 KiB per deployment', pass: figures.peakGrowthKiBPerDeployment <= 25 },
  ];
  console.log(`\nMedians of ${runs} runs (series ${series}, orders rotated):`);
  for (const [name, value] of Object.entries(figures))
    console.log(`  ${name.padEnd(28)} ${value.toFixed(2)}`);
  for (const { target, pass } of targets) console.log(`  ${pass ? 'PASS' : 'FAIL'}  ${target}`);
  return 0;
}
