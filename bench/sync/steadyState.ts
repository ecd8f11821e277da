// The steady state: every revision DEPLOYED, nothing changing; what the agent still writes to the
// API (nothing but its Lease, ideally) and asks of the control plane over five poll cycles.
import type { Sample } from '../../test/support/metricSamples.ts';
import {
  type AgentMeter,
  controlPlaneRequests,
  leaseWrites,
  polls,
  writesExceptLease,
} from './agentMetrics.ts';
import { log } from './log.ts';
import { until } from './until.ts';

export interface SteadyState {
  readonly cycles: number;
  readonly writesExceptLease: number;
  readonly leaseWrites: number;
  readonly controlPlanePerCycle: number;
}

/** Five poll cycles, after two that let the last reports of the cold sync settle. */
export async function measureSteadyState(
  meter: AgentMeter,
  afterCold: readonly Sample[],
  pollMs: number,
): Promise<SteadyState> {
  const waitPolls = async (count: number, from: readonly Sample[]) =>
    until(
      `${count} poll cycles`,
      async () => {
        const now = await meter.read();
        return polls(now) - polls(from) >= count ? now : undefined;
      },
      (count + 2) * pollMs * 2 + 30_000,
      200,
    );
  const settled = await waitPolls(2, afterCold);
  const steadyEnd = await waitPolls(5, settled);
  const cycles = polls(steadyEnd) - polls(settled);
  const steady = {
    cycles,
    writesExceptLease: writesExceptLease(steadyEnd) - writesExceptLease(settled),
    leaseWrites: leaseWrites(steadyEnd) - leaseWrites(settled),
    controlPlanePerCycle: (controlPlaneRequests(steadyEnd) - controlPlaneRequests(settled)) / cycles,
  };
  log(`steady state: ${JSON.stringify(steady)}`);
  return steady;
}
