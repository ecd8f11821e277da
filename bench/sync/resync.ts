// A full resync of the converged fleet: every deployment queued again at the agent's
// `resyncIntervalMs` (the benchmark sets it, so that one comes after the change latency), each
// confirmed by the status path (nothing to apply changed) or, if not, reconciled in full. Read at
// 100 ms steps from the agent's own counters, from a few seconds before the resync is due (each
// read costs the agent a /metrics rendering, which read all along would be a fifth of its CPU in a
// profile): its CPU from the last reading before the first reconcile of the burst to the one that
// counts every deployment, and what took which path.
import { sleep } from '../../src/sleep.ts';
import type { Sample } from '../../test/support/metricSamples.ts';
import { type AgentMeter, reconciles, reconcilesByPath, writesExceptLease } from './agentMetrics.ts';
import type { AgentUnderTest } from './agentUnderTest.ts';
import { log } from './log.ts';

export interface ResyncFigures {
  readonly cpuMsPerDeployment: number;
  readonly statusPath: number;
  readonly fullPath: number;
  readonly writesExceptLease: number;
  readonly seconds: number;
}

interface Reading {
  readonly samples: readonly Sample[];
  readonly cpuS: number;
  readonly at: number;
}

/** Reading starts this long before the resync is due. */
const LEAD_MS = 5_000;

/**
 * When the agent's next resync is due: its timer starts with its leader session, after the process
 * started at `agentStartedAt` (performance.now()), and fires each `resyncIntervalMs`.
 */
export function nextResyncDue(agentStartedAt: number, resyncIntervalMs: number, now: number): number {
  const intervals = Math.max(1, Math.ceil((now - agentStartedAt) / resyncIntervalMs));
  return agentStartedAt + intervals * resyncIntervalMs;
}

export async function measureResync(
  agent: AgentUnderTest,
  meter: AgentMeter,
  deployments: number,
  timing: { readonly agentStartedAt: number; readonly resyncIntervalMs: number },
): Promise<ResyncFigures | undefined> {
  const read = async (): Promise<Reading> => ({
    samples: await meter.read(),
    cpuS: (await agent.cpuSeconds()) ?? Number.NaN,
    at: performance.now(),
  });
  const due = nextResyncDue(timing.agentStartedAt, timing.resyncIntervalMs, performance.now());
  await sleep(Math.max(0, due - LEAD_MS - performance.now()));
  // The leader session starts a few seconds after the process: its timer fires after `due`.
  const deadline = due + 120_000;
  // The burst starts: a tenth of the fleet (at most 20) reconciled within one step, which a
  // change's or a recheck's few reconciles never are; the last reading before it is where its CPU
  // counts from.
  const burst = Math.min(20, Math.ceil(deployments / 10));
  let before = await read();
  for (;;) {
    await sleep(100);
    const now = await read();
    if (reconciles(now.samples) - reconciles(before.samples) >= burst) break;
    before = now;
    if (performance.now() > deadline) return undefined;
  }
  let after = before;
  while (reconciles(after.samples) - reconciles(before.samples) < deployments) {
    await sleep(100);
    after = await read();
    if (performance.now() > deadline) return undefined;
  }
  const figures = {
    cpuMsPerDeployment: Number((((after.cpuS - before.cpuS) * 1000) / deployments).toFixed(2)),
    statusPath: reconcilesByPath(after.samples, 'status') - reconcilesByPath(before.samples, 'status'),
    fullPath: reconcilesByPath(after.samples, 'full') - reconcilesByPath(before.samples, 'full'),
    writesExceptLease: writesExceptLease(after.samples) - writesExceptLease(before.samples),
    seconds: Number(((after.at - before.at) / 1000).toFixed(1)),
  };
  log(
    `resync: ${figures.cpuMsPerDeployment} ms of agent CPU a deployment, ${figures.statusPath} by the status path, ${figures.fullPath} in full, ${figures.writesExceptLease} writes, ${figures.seconds} s`,
  );
  return figures;
}
