// The agent-change step: which render waits its turn at the agent-change rate, what a held
// deployment reports and when it looks again, and how an applied agent change is counted and told.
import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../../src/kube/index.ts';
import { AgentChangeGate, type AgentChangeTurn } from '../../../../src/reconcile/policy/agentChangeGate.ts';
import { AgentChangeStep } from '../../../../src/reconcile/steps/agentChangeStep.ts';
import type { ApplyStep } from '../../../../src/reconcile/steps/applier.ts';
import type { Inventory } from '../../../../src/reconcile/steps/inventory.ts';
import { AGENT_CHANGE_WAITING } from '../../../../src/report/deploymentStatusRow.ts';
import { createMetrics } from '../../../../src/report/metrics.ts';
import {
  memoryRollouts,
  RECHECK_MS,
  ROLLOUT_NAMESPACE,
  subjectName,
  workload,
} from '../../../support/memoryRollouts.ts';

const DEPLOYMENT = 'd1';
const main = workload(DEPLOYMENT);
const recorded: Inventory = {
  deploymentId: DEPLOYMENT,
  entries: [],
  specHash: 'spec-1',
  revisionId: 'r1',
  inputHash: 'i1',
};
/** The same revision and input rendered to another spec: an agent change. */
const agentChange: Inventory = { ...recorded, specHash: 'spec-2' };
const newRevision: Inventory = { ...agentChange, revisionId: 'r2' };
const held = (retryAfterMs: number): Extract<AgentChangeTurn, { admitted: false }> => ({
  admitted: false,
  retryAfterMs,
  ahead: 0,
});

/** An agent-change step at the rate of one per window, its clock held still. */
function step(options: { gate?: boolean } = {}) {
  const world = memoryRollouts();
  const gate = options.gate === false ? undefined : new AgentChangeGate({ rate: 1, now: () => 0 });
  const metrics = createMetrics({ defaultMetrics: false });
  const agentChanges = new AgentChangeStep({
    gate,
    metrics,
    events: world.eventRecorder,
    rollouts: world.rollouts,
  });
  const waiting = async () => (await metrics.agentChangesWaiting.get()).values[0]?.value;
  const applied = async () => (await metrics.agentChangesApplied.get()).values[0]?.value;
  return { ...world, gate, agentChanges, waiting, applied };
}

/** The apply of the main workload, live already, whose spec the new render changes. */
const stepsOf = (before: LiveKubeObject | undefined): ApplyStep[] => [
  { object: main, id: 'web', before, why: { kind: 'spec-changed' }, unread: false },
];
const liveMain = {
  ...main,
  metadata: { ...main.metadata, uid: 'u1', resourceVersion: '1' },
} as LiveKubeObject;

describe('AgentChangeStep.turn', () => {
  it('is none for a render that is not an agent change', () => {
    const { agentChanges } = step();
    expect(agentChanges.turn(recorded, newRevision, stepsOf(liveMain))).toBeUndefined();
  });

  it('gives up the place in line of a deployment whose render is no longer an agent change', () => {
    const { agentChanges, gate } = step();
    gate?.ask('ahead');
    gate?.ask(DEPLOYMENT);
    agentChanges.turn(recorded, newRevision, stepsOf(liveMain));
    expect(gate?.isWaiting(DEPLOYMENT)).toBe(false);
  });

  it('admits every agent change at once without a gate', () => {
    const { agentChanges } = step({ gate: false });
    expect(agentChanges.turn(recorded, agentChange, stepsOf(liveMain))).toEqual({
      admitted: true,
      heldMs: 0,
    });
  });

  it('admits an agent change while the rate allows', () => {
    const { agentChanges } = step();
    expect(agentChanges.turn(recorded, agentChange, stepsOf(liveMain))?.admitted).toBe(true);
  });

  it('holds an agent change past the rate', () => {
    const { agentChanges } = step();
    agentChanges.turn(recorded, { ...agentChange, deploymentId: 'first' }, stepsOf(liveMain));
    expect(agentChanges.turn(recorded, agentChange, stepsOf(liveMain))?.admitted).toBe(false);
  });

  it('counts the deployments held in its gauge', async () => {
    const { agentChanges, waiting } = step();
    agentChanges.turn(recorded, { ...agentChange, deploymentId: 'first' }, stepsOf(liveMain));
    agentChanges.turn(recorded, agentChange, stepsOf(liveMain));
    expect(await waiting()).toBe(1);
  });
});

describe('AgentChangeStep.forget', () => {
  it('takes a held deployment out of line and out of the gauge', async () => {
    const { agentChanges, gate, waiting } = step();
    agentChanges.turn(recorded, { ...agentChange, deploymentId: 'first' }, stepsOf(liveMain));
    agentChanges.turn(recorded, agentChange, stepsOf(liveMain));
    agentChanges.forget(DEPLOYMENT);
    expect([gate?.isWaiting(DEPLOYMENT), await waiting()]).toEqual([false, 0]);
  });
});

describe('AgentChangeStep.held', () => {
  async function heldWith(available: boolean, retryAfterMs: number) {
    const world = step();
    const live = await world.live(main, available);
    const outcome = await world.agentChanges.held(
      { deploymentId: DEPLOYMENT, revisionId: 'r1', namespace: ROLLOUT_NAMESPACE, objects: [main] },
      stepsOf(live.values().next().value),
      held(retryAfterMs),
      world.logger,
      undefined,
    );
    return { ...world, outcome };
  }

  it('reports the rollout as it is, with a note that it waits', async () => {
    const { told } = await heldWith(true, 60_000);
    expect(told.at(-1)).toMatchObject({ revision_status: 'DEPLOYED' });
    expect(told.at(-1)?.message).toContain(AGENT_CHANGE_WAITING);
  });

  it('tells the rollout on the main workload its steps found live', async () => {
    const { events } = await heldWith(true, 60_000);
    expect(events.map((e) => subjectName(e.subject))).toEqual(['Deployment/web']);
  });

  it('looks again when its turn is due', async () => {
    const { outcome } = await heldWith(true, 60_000);
    expect(outcome).toEqual({ result: 'requeue', afterMs: 60_000 });
  });

  it('looks again at its rollout recheck, sooner than its turn, while rolling out', async () => {
    const { outcome } = await heldWith(false, 60_000);
    expect(outcome).toEqual({ result: 'requeue', afterMs: RECHECK_MS });
  });

  it('looks again at its turn while rolling out, when that comes first', async () => {
    const { outcome } = await heldWith(false, RECHECK_MS / 10);
    expect(outcome).toEqual({ result: 'requeue', afterMs: RECHECK_MS / 10 });
  });
});

describe('AgentChangeStep.applied', () => {
  const live = new Map([['web', liveMain]]);

  it('counts the agent change applied', async () => {
    const { agentChanges, applied } = step();
    await agentChanges.applied(DEPLOYMENT, ROLLOUT_NAMESPACE, { admitted: true, heldMs: 0 }, live);
    expect(await applied()).toBe(1);
  });

  it('tells it by an Event on the main workload', async () => {
    const { agentChanges, events } = step();
    await agentChanges.applied(DEPLOYMENT, ROLLOUT_NAMESPACE, { admitted: true, heldMs: 0 }, live);
    expect(events.map((e) => [subjectName(e.subject), e.details.reason])).toEqual([
      ['Deployment/web', 'AgentChangeApplied'],
    ]);
  });

  it('says how long it waited for its turn', async () => {
    const { agentChanges, events } = step();
    await agentChanges.applied(DEPLOYMENT, ROLLOUT_NAMESPACE, { admitted: true, heldMs: 90_000 }, live);
    expect(events[0]?.details.note).toContain('after waiting 90 s for its turn');
  });

  it('says nothing of a wait when it was not held', async () => {
    const { agentChanges, events } = step();
    await agentChanges.applied(DEPLOYMENT, ROLLOUT_NAMESPACE, { admitted: true, heldMs: 0 }, live);
    expect(events[0]?.details.note).not.toContain('waiting');
  });

  it("tells it on the deployment's inventory without a main workload", async () => {
    const { agentChanges, events } = step();
    await agentChanges.applied(DEPLOYMENT, ROLLOUT_NAMESPACE, { admitted: true, heldMs: 0 }, new Map());
    expect(events.map((e) => subjectName(e.subject))).toEqual([`ConfigMap/k8s-listener-inv-${DEPLOYMENT}`]);
  });
});
