// The rollout report step over the in-memory cluster: the rollout read with the render's notes and
// told where it is read, what that means for the queue, the rechecks it counts, and the main
// workload that Events go to.
import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../../src/kube/index.ts';
import { ANNOTATION_STATUS } from '../../../../src/objects/ownership.ts';
import { mainWorkload } from '../../../../src/reconcile/steps/rolloutReport.ts';
import { memoryRollouts, RECHECK_MS, subjectName, workload } from '../../../support/memoryRollouts.ts';

const DEPLOYMENT = 'd1';
const main = workload(DEPLOYMENT);

async function reported(available: boolean, notes: readonly string[] = []) {
  const world = memoryRollouts();
  const live = await world.live(main, available);
  const status = await world.rollouts.report(
    { ...world.rollout(DEPLOYMENT, [main], live), notes },
    world.logger,
    undefined,
  );
  return { ...world, status };
}

describe('RolloutReport.report', () => {
  it('reads a rollout in progress as DEPLOYING', async () => {
    const { status } = await reported(false);
    expect(status.revisionStatus).toBe('DEPLOYING');
  });

  it('reads an available workload as DEPLOYED', async () => {
    const { status } = await reported(true);
    expect(status.revisionStatus).toBe('DEPLOYED');
  });

  it("adds the render's notes to the message", async () => {
    const { status } = await reported(false, ['resources.cpu capped at 2']);
    expect(status.message).toContain('resources.cpu capped at 2');
  });

  it('tells the control plane the status of the revision', async () => {
    const { told } = await reported(true);
    expect(told).toMatchObject([
      { deployment_id: DEPLOYMENT, revision_id: 'r1', revision_status: 'DEPLOYED' },
    ]);
  });

  it('tells an outcome by an Event on the main workload', async () => {
    const { events } = await reported(true);
    expect(events.map((e) => [subjectName(e.subject), e.details.reason])).toEqual([
      ['Deployment/web', 'RolloutComplete'],
    ]);
  });

  it("writes the outcome on the deployment's inventory annotation", async () => {
    const world = memoryRollouts();
    await world.cluster.apply(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `k8s-listener-inv-${DEPLOYMENT}`, namespace: 'apps', labels: {}, annotations: {} },
      },
      { force: true },
    );
    const live = await world.live(main, true);
    await world.rollouts.report(world.rollout(DEPLOYMENT, [main], live), world.logger, undefined);
    const inventory = await world.cluster.get({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'apps',
      name: `k8s-listener-inv-${DEPLOYMENT}`,
    });
    expect(inventory?.metadata.annotations[ANNOTATION_STATUS]).toContain('DEPLOYED');
  });
});

describe('RolloutReport.after', () => {
  it('looks at a rollout in progress again at its recheck, in the background', async () => {
    const { rollouts, status } = await reported(false);
    expect(rollouts.after(DEPLOYMENT, status, 'ok')).toEqual({
      result: 'requeue',
      afterMs: RECHECK_MS,
      background: true,
    });
  });

  it('is done with any other rollout, with the detail given', async () => {
    const { rollouts, status } = await reported(true);
    expect(rollouts.after(DEPLOYMENT, status, 'settled')).toEqual({ result: 'done', detail: 'settled' });
  });
});

describe('RolloutReport rechecks', () => {
  it('spreads the rechecks of the rollouts in progress', () => {
    const { rollouts } = memoryRollouts();
    rollouts.recheckMs('d1');
    expect(rollouts.recheckMs('d2')).toBe(2 * RECHECK_MS);
  });

  it('counts a settled rollout out of them', () => {
    const { rollouts } = memoryRollouts();
    rollouts.recheckMs('d1');
    rollouts.settled('d1');
    expect(rollouts.recheckMs('d2')).toBe(RECHECK_MS);
  });
});

describe('RolloutReport.forget', () => {
  it('tells the control plane the deployment is gone', async () => {
    const { rollouts, told } = await reported(true);
    rollouts.forget(DEPLOYMENT);
    expect(told.at(-1)).toMatchObject({ deployment_id: DEPLOYMENT, deleted: true });
  });
});

describe('mainWorkload', () => {
  const live = (...objects: ReturnType<typeof workload>[]) =>
    new Map(
      objects.map((o, i) => [
        String(i),
        { ...o, metadata: { ...o.metadata, uid: `u${i}` } } as LiveKubeObject,
      ]),
    );

  it('is the Deployment of the main component', () => {
    expect(mainWorkload(live(workload(DEPLOYMENT, 'queue', 'worker'), main))?.metadata.name).toBe('web');
  });

  it('is none without one', () => {
    expect(mainWorkload(live(workload(DEPLOYMENT, 'queue', 'worker')))).toBeUndefined();
  });
});
