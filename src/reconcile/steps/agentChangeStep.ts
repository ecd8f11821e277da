// The agent-change step of a full reconcile: a change of the agent's own render of a deployment
// (a new agent version or render configuration, the same revision) that would restart its
// workloads waits its turn at the agent-change rate (agentChangeGate.ts). A held deployment has
// nothing written; its rollout is reported as it is, with a note that it waits. An applied one is
// counted and told once by an Event.
import type { Logger } from 'pino';
import type { EventRecorder, LiveKubeObject } from '../../kube/index.ts';
import { AGENT_CHANGE_WAITING } from '../../report/deploymentStatusRow.ts';
import type { AgentMetrics } from '../../report/metrics.ts';
import type { ReconcileOutcome } from '../outcome.ts';
import type { AgentChangeGate, AgentChangeTurn } from '../policy/agentChangeGate.ts';
import { restartsWorkloads } from './agentChange.ts';
import type { ApplyStep } from './applier.ts';
import type { Inventory } from './inventory.ts';
import { inventoryRef } from './inventoryStore.ts';
import { mainWorkload, type RolloutReport, type RolloutToReport } from './rolloutReport.ts';

export interface AgentChangeStepOptions {
  /** Absent: unlimited. */
  readonly gate?: AgentChangeGate | undefined;
  readonly metrics: Pick<AgentMetrics, 'agentChangesWaiting' | 'agentChangesApplied'>;
  readonly events: Pick<EventRecorder, 'record'>;
  readonly rollouts: RolloutReport;
}

export class AgentChangeStep {
  readonly #o: AgentChangeStepOptions;

  constructor(options: AgentChangeStepOptions) {
    this.#o = options;
  }

  /**
   * Whether this render is an agent change to hold, and its turn: undefined when it is not one (a
   * new revision or input, a first apply, a drift repair, or no live workload it would restart).
   * Only the workloads' rollout needs the gate, yet the whole re-apply waits with it (simpler).
   */
  turn(
    recorded: Inventory | undefined,
    next: Inventory,
    steps: readonly ApplyStep[],
  ): AgentChangeTurn | undefined {
    const { gate } = this.#o;
    if (!restartsWorkloads(recorded, next, steps)) {
      this.forget(next.deploymentId);
      return undefined;
    }
    const turn = gate ? gate.ask(next.deploymentId) : ({ admitted: true, heldMs: 0 } as const);
    this.#o.metrics.agentChangesWaiting.set(gate?.waiting ?? 0);
    return turn;
  }

  /** It is not (or no longer) waiting: its place in line goes. */
  forget(deploymentId: string): void {
    const { gate } = this.#o;
    if (!gate?.isWaiting(deploymentId)) return;
    gate.forget(deploymentId);
    this.#o.metrics.agentChangesWaiting.set(gate.waiting);
  }

  /**
   * A held deployment: nothing is written; its rollout is reported from its live objects as it is
   * (its revision stays DEPLOYED), with a note that it waits; it looks again when its turn is due.
   */
  async held(
    rollout: Omit<RolloutToReport, 'live' | 'notes' | 'justApplied'>,
    steps: readonly ApplyStep[],
    turn: Extract<AgentChangeTurn, { admitted: false }>,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileOutcome> {
    const live = new Map<string, LiveKubeObject>();
    for (const step of steps) if (step.before) live.set(step.id, step.before);
    log.debug({ ahead: turn.ahead, retryAfterMs: turn.retryAfterMs }, 'agent change held');
    const { rollouts } = this.#o;
    const status = await rollouts.report(
      { ...rollout, live, notes: [AGENT_CHANGE_WAITING], justApplied: false },
      log,
      signal,
    );
    const afterMs =
      status.revisionStatus === 'DEPLOYING'
        ? Math.min(turn.retryAfterMs, rollouts.recheckMs(rollout.deploymentId))
        : turn.retryAfterMs;
    return { result: 'requeue', afterMs };
  }

  /** An agent change was applied: counted, and told once by an Event on the main workload (or the inventory). */
  async applied(
    deploymentId: string,
    namespace: string,
    turn: Extract<AgentChangeTurn, { admitted: true }>,
    live: ReadonlyMap<string, LiveKubeObject>,
  ): Promise<void> {
    this.#o.metrics.agentChangesApplied.inc();
    const held = turn.heldMs > 0 ? `, after waiting ${Math.round(turn.heldMs / 1000)} s for its turn` : '';
    await this.#o.events.record(mainWorkload(live) ?? inventoryRef(deploymentId, namespace), {
      type: 'Normal',
      reason: 'AgentChangeApplied',
      note: `the agent's new render of the same revision is applied${held} (reconcile.agentChangeRate)`,
      action: 'Apply',
    });
  }
}
