// Day two: a new agent process over everything the first one made, as an upgrade or a failover
// starts one. Caught up once it has reconciled every deployment and then a poll cycle has passed;
// what it wrote meanwhile (a restart should write next to nothing) and its peak RSS, which holds
// its first listings.
import { join } from 'node:path';
import { polls, reconciles, writesExceptLease } from './agentMetrics.ts';
import { type AgentLaunch, AgentUnderTest } from './agentUnderTest.ts';
import { log, seconds } from './log.ts';
import { until } from './until.ts';

export interface Restart {
  readonly caughtUpS: number;
  readonly cpuS: number | undefined;
  readonly writesExceptLease: number;
  readonly peakRssMiB: number;
  readonly rssAtStartMiB: number;
}

export async function runRestart(
  workDir: string,
  configPath: string,
  launch: AgentLaunch,
  options: { readonly deployments: number; readonly pollMs: number; readonly phaseTimeoutMs: number },
): Promise<Restart> {
  const started = performance.now();
  const agent = await AgentUnderTest.start(configPath, launch, {
    logPath: join(workDir, 'agent-restarted.log'),
  });
  try {
    const atStart = await agent.memory();
    const caughtUp = await until(
      'the restarted agent has looked at every deployment',
      async () => {
        const now = await agent.readMetrics();
        return reconciles(now) >= options.deployments ? now : undefined;
      },
      options.phaseTimeoutMs,
      1_000,
    );
    const caughtUpMs = performance.now() - started;
    const settled = await until(
      'a poll cycle after catching up',
      async () => {
        const now = await agent.readMetrics();
        return polls(now) > polls(caughtUp) ? now : undefined;
      },
      options.pollMs * 10 + 30_000,
      500,
    );
    const memory = await agent.memory();
    const cpuS = await agent.cpuSeconds();
    await agent.stop();
    const restarted = {
      caughtUpS: seconds(caughtUpMs),
      cpuS,
      writesExceptLease: writesExceptLease(settled),
      peakRssMiB: Number((memory?.hwmMiB ?? Number.NaN).toFixed(1)),
      rssAtStartMiB: Number((atStart?.rssMiB ?? Number.NaN).toFixed(1)),
    };
    log(`restart: ${JSON.stringify(restarted)}`);
    return restarted;
  } finally {
    await agent.stop();
  }
}
