// Faults on the Kubernetes side, against the real cluster: a database pod that no node can take
// fails its rollout after the grace period instead of leaving it DEPLOYING forever; the objects of
// such a failed revision are still repaired when edited or deleted by hand; another field
// manager's edit of a field the agent owns is taken back, and only that one.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Agent } from '../../../src/manager/agent.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { parseStatusAnnotation } from '../../../src/report/statusAnnotation.ts';
import { kubectl } from '../../support/adminKube.ts';
import {
  app,
  revisionStatus,
  startAgent,
  startWorld,
  type World,
  waitForRevision,
} from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

const GRACE_MS = 2_000;

/** A database no kwok node can take (each has 64 cpus): its rollout fails, Unschedulable. */
function unschedulable(name: string) {
  return app(world, name, ns, {
    source_config: {
      listener_id: world.listenerId,
      listener_config: { k8s_namespace: ns },
      resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.1, memory_mb: 64, db_cpu: 100, db_storage_gi: 1 },
    },
  });
}

async function pollCount(): Promise<number> {
  const { values } = await agent.metrics.polls.get();
  return values.reduce((sum, v) => sum + v.value, 0);
}

/** Nothing queued and no reconcile running. */
async function queueIdle(): Promise<boolean> {
  const depth = (await agent.metrics.workqueue.depth.get()).values.reduce((sum, v) => sum + v.value, 0);
  const active = (await agent.metrics.controllerRuntime.activeWorkers.get()).values;
  return depth === 0 && active.every((v) => v.value === 0);
}

/** Reconciles that found their deployment's revision settled (failed) and attempted already. */
async function settledReconciles(): Promise<number> {
  const { values } = await agent.metrics.reconcileDuration.get();
  return values.find((v) => v.metricName?.endsWith('_count') && v.labels.result === 'settled')?.value ?? 0;
}

let world: World;
let agent: Agent;
let ns: string;

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  ns = world.namespaces[0] ?? '';
  agent = await startAgent(world, { reconcile: { failureGraceMs: GRACE_MS } });
});
afterAll(async () => {
  await agent?.stop();
  await world?.close();
});

describe('a pod that cannot be scheduled', () => {
  it('fails the rollout with the reason after the grace period, not DEPLOYING forever', async () => {
    const started = Date.now();
    // The test cluster's kwok nodes have 64 cpus each: a database asking for 100 fits on none.
    const deployment = await world.client.createDeployment(unschedulable('nofit'));
    const revisionId = deployment.latest_revision_id ?? '';

    // The real scheduler says so on the pod.
    const pod = await eventually('the database pod marked Unschedulable', async () => {
      const pods = await world.kube.core.listNamespacedPod({
        namespace: ns,
        labelSelector: `${LABEL_DEPLOYMENT_ID}=${deployment.id}`,
      });
      return pods.items.find((p) =>
        p.status?.conditions?.some(
          (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
        ),
      );
    });
    expect(pod.metadata?.name).toBe('nofit-db-0');

    await eventually(
      'revision DEPLOY_FAILED',
      async () =>
        (await revisionStatus(world, deployment.id, revisionId)) === 'DEPLOY_FAILED' ? true : undefined,
      60_000,
    );
    const inventory = await world.kube.core.readNamespacedConfigMap({
      name: `k8s-listener-inv-${deployment.id}`,
      namespace: ns,
    });
    const annotation = parseStatusAnnotation(inventory.metadata?.annotations?.['k8s-listener.io/status']);
    expect(annotation).toMatchObject({ revisionId, status: 'DEPLOY_FAILED', reason: 'Unschedulable' });
    expect(annotation?.message).toContain('nofit-db-0');
    // Not before the grace period: the pod was first seen unschedulable after the deployment was created.
    expect(Date.parse(annotation?.since ?? '') - started).toBeGreaterThanOrEqual(GRACE_MS);
  });
});

describe('a revision that failed', () => {
  it('still has its objects repaired when they drift by hand', async () => {
    const deployment = await world.client.createDeployment(unschedulable('failing'));
    const revisionId = deployment.latest_revision_id ?? '';
    await waitForRevision(world, deployment, 'DEPLOY_FAILED');
    // Let the poller read the failure back and the reconcile it starts finish: from then on, this
    // deployment's reconciles take the settled path (a failed revision is not rolled out again),
    // which is the path a hand edit must not stop at.
    const polls = await pollCount();
    await eventually('three more polls and an idle queue', async () =>
      (await pollCount()) >= polls + 3 && (await queueIdle()) ? true : undefined,
    );
    agent.metrics.reconcileDuration.reset();

    const web = await world.kube.apps.readNamespacedDeployment({ name: 'failing', namespace: ns });
    const service = await world.kube.core.readNamespacedService({ name: 'failing', namespace: ns });
    await kubectl(inject('clusterBinDir'), world.kubeconfigPath, [
      'patch',
      'deployment',
      'failing',
      '-n',
      ns,
      '--type=strategic',
      '--field-manager=other',
      '-p',
      JSON.stringify({
        spec: {
          template: {
            spec: {
              containers: [{ name: web.spec?.template.spec?.containers[0]?.name, image: 'nginx:1.26-other' }],
            },
          },
        },
      }),
    ]);
    await world.kube.core.deleteNamespacedService({ name: 'failing', namespace: ns });

    await eventually(
      'the image taken back',
      async () => {
        const live = await world.kube.apps.readNamespacedDeployment({ name: 'failing', namespace: ns });
        return live.spec?.template.spec?.containers[0]?.image === 'nginx:1.27' ? true : undefined;
      },
      20_000,
    );
    await eventually(
      'the Service recreated',
      async () => {
        const live = await world.kube.core
          .readNamespacedService({ name: 'failing', namespace: ns })
          .catch(() => undefined);
        return live && live.metadata?.uid !== service.metadata?.uid ? true : undefined;
      },
      20_000,
    );
    // Repaired by the settled path, not by a new rollout: the revision stays failed, and the
    // agent says so on the object as for any other drift.
    expect(await settledReconciles()).toBeGreaterThan(0);
    const events = await world.kube.core.listNamespacedEvent({
      namespace: ns,
      fieldSelector: 'involvedObject.name=failing,involvedObject.kind=Deployment,reason=DriftCorrected',
    });
    expect(events.items).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await revisionStatus(world, deployment.id, revisionId)).toBe('DEPLOY_FAILED');
  });
});

describe('another field manager', () => {
  it('loses the field the agent owns, keeps its own, and the agent says so once in an Event', async () => {
    const deployment = await world.client.createDeployment(app(world, 'shared', ns));
    await waitForRevision(world, deployment, 'DEPLOYED');
    const before = await world.kube.apps.readNamespacedDeployment({ name: 'shared', namespace: ns });
    const container = before.spec?.template.spec?.containers[0];
    expect(container?.image).toBe('nginx:1.27');

    // One field the agent sets (the image) and one it does not (a label), by another manager.
    const patch = {
      metadata: { labels: { team: 'payments' } },
      spec: { template: { spec: { containers: [{ name: container?.name, image: 'nginx:1.26-other' }] } } },
    };
    await kubectl(inject('clusterBinDir'), world.kubeconfigPath, [
      'patch',
      'deployment',
      'shared',
      '-n',
      ns,
      '--type=strategic',
      '--field-manager=other',
      '-p',
      JSON.stringify(patch),
    ]);

    const after = await eventually('the image taken back', async () => {
      const live = await world.kube.apps.readNamespacedDeployment({ name: 'shared', namespace: ns });
      return live.spec?.template.spec?.containers[0]?.image === 'nginx:1.27' ? live : undefined;
    });
    expect(after.metadata?.labels?.team).toBe('payments');
    // Ownership follows: the other manager keeps its label and no longer owns the image.
    const other = after.metadata?.managedFields?.find((f) => f.manager === 'other');
    expect(JSON.stringify(other?.fieldsV1)).toContain('f:team');
    expect(JSON.stringify(other?.fieldsV1)).not.toContain('f:image');

    // A few reconciles later there is still exactly one Event about it, naming the field only.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const events = await world.kube.core.listNamespacedEvent({
      namespace: ns,
      fieldSelector: 'involvedObject.name=shared,involvedObject.kind=Deployment',
    });
    const corrected = events.items.filter((e) => e.reason === 'DriftCorrected');
    expect(corrected).toHaveLength(1);
    expect(corrected[0]?.count ?? 1).toBe(1);
    expect(corrected[0]?.message).toContain('spec.template.spec.containers[0].image');
    expect(corrected[0]?.message).not.toContain('1.26-other');
    expect(corrected[0]?.message).not.toContain('nginx:1.27');
    // The agent's own apply of an unchanged spec is no drift: no other object got such an Event
    // (the failed revision's hand edit above aside).
    const all = await world.kube.core.listNamespacedEvent({ namespace: ns });
    const others = all.items.filter((e) => e.involvedObject.name !== 'failing');
    expect(others.filter((e) => e.reason === 'DriftCorrected')).toHaveLength(1);
  });
});
