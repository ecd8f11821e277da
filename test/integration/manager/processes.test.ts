// The agent as operators run it: real processes of `k8s-listener run`, two replicas with one
// leader, failover when the leader dies, graceful shutdown, and a restart after a kill mid-rollout.
import * as k8s from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { app, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { type AgentProcess, startAgentProcess, writeAgentConfig } from '../../support/agentProcess.ts';
import { eventually } from '../../support/eventually.ts';

let world: World;
let configPath: string;
let leaseName: string;
const running: AgentProcess[] = [];

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'));
  leaseName = `lease-${world.namespaces[0]}`;
  configPath = await writeAgentConfig(world, { leaseName });
});
afterEach(async () => {
  for (const agent of running.splice(0)) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
});
afterAll(() => world?.close());

function startAgent(identity: string): AgentProcess {
  const agent = startAgentProcess(configPath, identity);
  running.push(agent);
  return agent;
}

async function leaseHolder(): Promise<string | undefined> {
  const coordination = world.kube.config.makeApiClient(k8s.CoordinationV1Api);
  try {
    const lease = await coordination.readNamespacedLease({ name: leaseName, namespace: 'default' });
    return lease.spec?.holderIdentity || undefined;
  } catch {
    return undefined;
  }
}

const applies = (agent: AgentProcess) => (agent.output().match(/"msg":"applying"/g) ?? []).length;

describe('agent processes', () => {
  it('runs two replicas with one leader; the follower writes nothing; failover after the leader dies', async () => {
    const a = startAgent('replica-a');
    const b = startAgent('replica-b');
    const first = await eventually('a leader', leaseHolder, 30_000);
    const [leader, follower] = first === 'replica-a' ? [a, b] : [b, a];

    const one = await world.client.createDeployment(app(world, 'one', world.namespaces[0] ?? ''));
    await waitForRevision(world, one, 'DEPLOYED');
    expect(applies(leader)).toBeGreaterThan(0);
    expect(applies(follower)).toBe(0);

    // The leader dies without a chance to release its lease.
    const killedAt = Date.now();
    leader.child.kill('SIGKILL');
    await leader.exited;
    await eventually(
      'the follower leads',
      async () => ((await leaseHolder()) === follower.identity ? true : undefined),
      20_000,
    );
    const takeoverMs = Date.now() - killedAt;
    // Within the lease duration (3 s) plus two jittered retry periods.
    expect(takeoverMs).toBeLessThan(8_000);

    const two = await world.client.createDeployment(app(world, 'two', world.namespaces[0] ?? ''));
    await waitForRevision(world, two, 'DEPLOYED');
    expect(applies(follower)).toBeGreaterThan(0);

    // Graceful shutdown: exit 0, and the lease handed back for an immediate successor.
    follower.child.kill('SIGTERM');
    expect(await follower.exited).toBe(0);
    expect(follower.output()).toContain('"msg":"stopped"');
    expect(await leaseHolder()).toBeUndefined();
  });

  it('exits non-zero at once when another holder takes the lease, and leaves the lease to it', async () => {
    const agent = startAgent('replica-l');
    await eventually(
      'a leader',
      async () => ((await leaseHolder()) === 'replica-l' ? true : undefined),
      30_000,
    );
    const working = await world.client.createDeployment(app(world, 'usurped', world.namespaces[0] ?? ''));
    await waitForRevision(world, working, 'DEPLOYED');

    // Another holder writes the lease, as a replica that judged it expired would: read and
    // replaced, again when the leader's renewal (every 0.5 s) lands in between (409 Conflict).
    const coordination = world.kube.config.makeApiClient(k8s.CoordinationV1Api);
    await eventually(
      'the lease taken over',
      async () => {
        const lease = await coordination.readNamespacedLease({ name: leaseName, namespace: 'default' });
        const now = new k8s.V1MicroTime();
        try {
          await coordination.replaceNamespacedLease({
            name: leaseName,
            namespace: 'default',
            body: {
              ...lease,
              spec: {
                ...lease.spec,
                holderIdentity: 'usurper',
                leaseDurationSeconds: 60,
                acquireTime: now,
                renewTime: now,
              },
            },
          });
          return true;
        } catch (error) {
          if ((error as { code?: number }).code === 409) return undefined;
          throw error;
        }
      },
      10_000,
      50,
    );
    const takenAt = Date.now();
    const code = await Promise.race([
      agent.exited,
      new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 10_000)),
    ]);
    // Noticed at the next renewal (retry period 0.5 s) and nothing waited for.
    expect(code).toBe(1);
    expect(Date.now() - takenAt).toBeLessThan(5_000);
    expect(agent.output()).toContain('leadership lost');
    // Not released: the lease is the new holder's.
    expect(await leaseHolder()).toBe('usurper');
    await coordination.deleteNamespacedLease({ name: leaseName, namespace: 'default' });
  });

  it('converges after being killed mid-rollout and restarted, with no duplicate or lost object', async () => {
    const namespace = world.namespaces[1] ?? '';
    const first = startAgent('replica-c');
    await eventually(
      'a leader',
      async () => ((await leaseHolder()) === 'replica-c' ? true : undefined),
      30_000,
    );
    const deployment = await world.client.createDeployment(
      app(world, 'midway', namespace, {
        source_config: {
          listener_id: world.listenerId,
          listener_config: { k8s_namespace: namespace },
          resource_spec: {
            min_scale: 2,
            max_scale: 4,
            queue_cpu: 0.1,
            db_storage_gi: 1,
            kvstore_memory_mb: 32,
          },
        },
      }),
    );
    // Kill it as soon as the first objects are written, well before the rollout completes.
    await eventually(
      'first objects written',
      async () => (applies(first) > 0 ? true : undefined),
      20_000,
      20,
    );
    first.child.kill('SIGKILL');
    await first.exited;

    const second = startAgent('replica-c');
    await waitForRevision(world, deployment, 'DEPLOYED', 90_000);
    const selector = `${LABEL_DEPLOYMENT_ID}=${deployment.id}`;
    const [deployments, statefulSets, services, secrets, autoscalers] = await Promise.all([
      world.kube.apps.listNamespacedDeployment({ namespace, labelSelector: selector }),
      world.kube.apps.listNamespacedStatefulSet({ namespace, labelSelector: selector }),
      world.kube.core.listNamespacedService({ namespace, labelSelector: selector }),
      world.kube.core.listNamespacedSecret({ namespace, labelSelector: selector }),
      world.kube.config
        .makeApiClient(k8s.AutoscalingV2Api)
        .listNamespacedHorizontalPodAutoscaler({ namespace, labelSelector: selector }),
    ]);
    const tagged = (kind: string, items: { metadata?: { name?: string } }[]) =>
      items.map((o) => `${kind}/${o.metadata?.name}`);
    const names = [
      ...tagged('Deployment', deployments.items),
      ...tagged('StatefulSet', statefulSets.items),
      ...tagged('Service', services.items),
      ...tagged('Secret', secrets.items),
      ...tagged('HorizontalPodAutoscaler', autoscalers.items),
    ].sort();
    // Each object exactly once; the queue (min = max) has no autoscaler.
    expect(names).toEqual(
      [
        'Deployment/midway',
        'Deployment/midway-queue',
        'StatefulSet/midway-db',
        'StatefulSet/midway-kvstore',
        'Service/midway',
        'Service/midway-db',
        'Service/midway-kvstore',
        'Secret/midway-db-credentials',
        'Secret/midway-kvstore-credentials',
        'Secret/midway-secrets',
        'HorizontalPodAutoscaler/midway',
      ].sort(),
    );
    // The credentials survive the restart: generated once, never regenerated.
    expect(second.output()).not.toContain('midway-db-credentials","drift"');
  });
});
