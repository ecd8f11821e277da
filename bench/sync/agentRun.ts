// The agent's phase: the agent process over the seeded fleet, timed until every object is applied
// (its cold sync) and every revision DEPLOYED; then the steady state and change → applied, or,
// with --until-applied, a reading once the rollouts have run on a while. Its memory throughout.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../src/sleep.ts';
import type { Sample } from '../../test/support/metricSamples.ts';
import { loadAverage } from '../record.ts';
import { AgentMeter, objectsApplied, reconciles, reconcilesByPath } from './agentMetrics.ts';
import { type AgentLaunch, AgentUnderTest, type MemoryMiB } from './agentUnderTest.ts';
import { type ChangeLatency, measureChangeToApplied } from './changeLatency.ts';
import { type BenchCluster, countPods } from './cluster.ts';
import { type Fleet, NAMESPACES } from './fleet.ts';
import { log, seconds } from './log.ts';
import { limitHits } from './memoryCgroup.ts';
import type { SyncOptions } from './options.ts';
import { measureResync, type ResyncFigures } from './resync.ts';
import { measureSteadyState, type SteadyState } from './steadyState.ts';
import { until } from './until.ts';

export interface AgentRun {
  readonly appliedMs: number;
  readonly appliedCpuS: number | undefined;
  readonly appliedReconciles: number;
  /** Of those, full (render, plan, apply). */
  readonly appliedFullReconciles: number;
  /** Not waited for with --until-applied. */
  readonly deployedMs: number | undefined;
  readonly deployedAtEnd: number;
  /** With --until-applied: the pods of the agent's namespaces at the reading. */
  readonly podsAtReading: number | undefined;
  readonly afterCold: readonly Sample[];
  readonly live: number | undefined;
  readonly steady: SteadyState | undefined;
  readonly latency: ChangeLatency | undefined;
  /** Not measured with --until-applied. */
  readonly resync: ResyncFigures | undefined;
  /** The last reading, just before the agent stops. */
  readonly final: readonly Sample[];
  readonly memory: MemoryMiB | undefined;
  readonly atStart: MemoryMiB | undefined;
  readonly peakHeapMiB: number;
  readonly longestStallS: number;
  readonly majorGcS: number;
}

export interface AgentPhase {
  readonly configPath: string;
  readonly launch: AgentLaunch;
  readonly profileDir: string | undefined;
  readonly snapshotDir: string | undefined;
}

export async function runAgent(
  world: BenchCluster,
  fleet: Fleet,
  options: SyncOptions,
  { configPath, launch, profileDir, snapshotDir }: AgentPhase,
): Promise<AgentRun> {
  const n = options.deployments;
  if (snapshotDir) await mkdir(snapshotDir, { recursive: true });
  const started = performance.now();
  const agent = await AgentUnderTest.start(configPath, launch, {
    logPath: join(world.workDir, 'agent.log'),
    ...(profileDir ? { profileDir } : {}),
    ...(snapshotDir ? { snapshotDir } : {}),
  });
  // The process before any deployment: what the peak grows from.
  const atStart = await agent.memory();
  const meter = new AgentMeter(agent);
  const deployedCount = () =>
    world.emulator.state().deployments.filter((d) => d.revisions.at(-1)?.status === 'DEPLOYED').length;
  // A long cold sync says how far it is each minute (and, if the agent is killed, how far it got).
  const progress = setInterval(() => {
    void Promise.all([agent.memory(), agent.counters(), limitHits(launch.memoryCgroup)]).then(
      ([status, stat, hits]) => {
        log(
          `progress: ${Math.round(seconds(performance.now() - started))} s, ${meter.appliedSoFar} of ${fleet.expectedApplies} objects applied, ${deployedCount()} of ${n} DEPLOYED; agent CPU ${stat?.cpuS} s; RSS ${status?.rssMiB.toFixed(0)} MiB (peak ${status?.hwmMiB.toFixed(0)}, files ${status?.rssFileMiB.toFixed(0)}), heap used peak ${meter.peakHeapMiB.toFixed(0)} MiB; longest event-loop stall ${meter.minuteStallS.toFixed(1)} s this minute (${meter.longestStallS.toFixed(1)} s in all), major GC ${meter.majorGcS.toFixed(0)} s; major page faults ${stat?.majorFaults}, memory limit hit ${hits ?? '-'} times; load ${loadAverage()[0]?.toFixed(1)}`,
        );
        meter.minuteStallS = 0;
      },
    );
  }, 60_000);
  progress.unref();
  try {
    // The last reading (metrics, then memory, then the heap snapshot, which raises RSS), and the stop.
    const readAndStop = async () => {
      const final = await meter.read();
      const memory = await agent.memory();
      if (snapshotDir) await agent.takeHeapSnapshot(snapshotDir);
      await agent.stop();
      return { final, memory };
    };
    const peaks = () => ({
      atStart,
      peakHeapMiB: meter.peakHeapMiB,
      longestStallS: meter.longestStallS,
      majorGcS: meter.majorGcS,
    });

    // Cold sync: every object applied (the agent's apply counter), then every revision DEPLOYED.
    await until(
      'every object applied',
      async () => (objectsApplied(await meter.read()) >= fleet.expectedApplies ? true : undefined),
      options.phaseTimeoutMs,
      500,
    );
    const appliedMs = performance.now() - started;
    const appliedCpuS = await agent.cpuSeconds();
    const atApplied = await meter.read();
    const appliedReconciles = reconciles(atApplied);
    const appliedFullReconciles = reconcilesByPath(atApplied, 'full');
    log(
      `every object applied after ${seconds(appliedMs)} s (agent CPU ${appliedCpuS} s, ${appliedReconciles} reconciles, ${appliedFullReconciles} full)`,
    );
    const applied = { appliedMs, appliedCpuS, appliedReconciles, appliedFullReconciles };
    if (options.untilApplied) {
      // The rollouts go on (pods, status, reports) for a while; then the reading, without waiting
      // for every revision DEPLOYED.
      await sleep(options.settleAfterAppliedMs);
      clearInterval(progress);
      const podsAtReading = await countPods(world.admin);
      log(
        `${deployedCount()} of ${n} DEPLOYED and ${podsAtReading} pods ${seconds(options.settleAfterAppliedMs)} s after the last apply`,
      );
      const { final, memory } = await readAndStop();
      return {
        ...applied,
        deployedMs: undefined,
        deployedAtEnd: deployedCount(),
        podsAtReading,
        afterCold: final,
        live: undefined,
        steady: undefined,
        latency: undefined,
        resync: undefined,
        final,
        memory,
        ...peaks(),
      };
    }
    // After the floor or kubectl, the controllers bring up their copies' pods before the agent's.
    await until(
      'every revision DEPLOYED',
      async () => (deployedCount() === n ? true : undefined),
      options.phaseTimeoutMs * (options.order.indexOf('agent') + 1),
      500,
    );
    const deployedMs = performance.now() - started;
    clearInterval(progress);
    const afterCold = await meter.read();
    log(`every revision DEPLOYED after ${seconds(deployedMs)} s`);
    const live = (await world.admin.list('Deployment', { namespace: NAMESPACES[0] })).length;
    const steady = await measureSteadyState(meter, afterCold, options.pollMs);
    const latency = await measureChangeToApplied(world, fleet, meter, options);
    const resync = await measureResync(agent, meter, n, {
      agentStartedAt: started,
      resyncIntervalMs: options.resyncIntervalMs,
    });
    const { final, memory } = await readAndStop();
    return {
      ...applied,
      deployedMs,
      deployedAtEnd: n,
      podsAtReading: undefined,
      afterCold,
      live,
      steady,
      latency,
      resync,
      final,
      memory,
      ...peaks(),
    };
  } finally {
    clearInterval(progress);
    await agent.stop();
  }
}
