// On the real node, what the agent renders runs: the application's container starts from the
// rendered spec, its readiness probe gates DEPLOYED, the generated PostgreSQL and Redis passwords
// open connections through the Service names (CoreDNS), and a container that exits or an image the
// registry lacks fails the revision with the pod's own reason until a good revision repairs it.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
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
import {
  httpGet,
  image,
  REAL_NODE_NAMESPACE_ANNOTATIONS,
  type RealNodeImages,
  realNodeFor,
  realNodeRender,
} from '../../support/realNodeSuite.ts';

const node = realNodeFor('node/workloads-run');

describe.skipIf(!node)('workloads on a real node', () => {
  const realNode = node as RealNodeImages;
  let world: World;
  let agent: Agent;
  let ns: string;

  beforeAll(async () => {
    world = await startWorld(inject('kubeconfigPath'), {
      namespaces: 1,
      namespaceAnnotations: REAL_NODE_NAMESPACE_ANNOTATIONS,
    });
    ns = world.namespaces[0] ?? '';
    agent = await startAgent(world, {
      allowedNamespaces: world.namespaces,
      render: realNodeRender(realNode),
      // Real pods take seconds to pull and start: a failure is one that lasts this long.
      reconcile: { failureGraceMs: 20_000 },
    });
  });
  afterAll(async () => {
    await agent?.stop();
    await world?.close();
  });

  async function serviceUrl(name: string, path: string): Promise<string> {
    const service = await world.kube.core.readNamespacedService({ name, namespace: ns });
    return `http://${service.spec?.clusterIP}:${service.spec?.ports?.[0]?.port}${path}`;
  }

  function lastMessage(id: string): string {
    const stored = world.emulator.state().deployments.find((d) => d.deployment.id === id);
    return stored?.deploy_logs.at(-1)?.message ?? '';
  }

  async function latest(id: string): Promise<Deployment> {
    const deployment = (await world.client.listAllDeployments({ deployment_ids: [id] })).items[0];
    if (!deployment) throw new Error(`deployment ${id} is gone`);
    return deployment;
  }

  it('runs the application with its own database and store, reached through the rendered connection strings', async () => {
    const created = await world.client.createDeployment(
      app(world, 'stores', ns, {
        source_revision_config: { image_uri: image(realNode, 'probe-app') },
        source_config: {
          listener_id: world.listenerId,
          listener_config: { k8s_namespace: ns },
          deployment_type: 'dev',
          resource_spec: {
            min_scale: 1,
            max_scale: 1,
            cpu: 0.1,
            memory_mb: 128,
            db_cpu: 0.1,
            db_memory_mb: 256,
            db_storage_gi: 1,
            db_max_connections: 42,
            kvstore_cpu: 0.05,
            kvstore_memory_mb: 64,
          },
        },
      }),
    );
    await waitForRevision(world, created, 'DEPLOYED', 180_000);

    // DEPLOYED came from real readiness: every pod of the deployment is Ready on the real node.
    const pods = await world.kube.core.listNamespacedPod({ namespace: ns });
    expect(pods.items.length).toBeGreaterThanOrEqual(3);
    for (const pod of pods.items) {
      expect(pod.spec?.nodeName).toBe('real-node');
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }

    const stores = await eventually('the stores answer through the Service', async () => {
      const { status, body } = await httpGet(await serviceUrl('stores', '/stores'));
      return status === 200 ? (body as Record<string, { ok: boolean; max_connections?: number }>) : undefined;
    });
    expect(stores.DATABASE_URI).toEqual({ ok: true, max_connections: 42 });
    expect(stores.REDIS_URI).toEqual({ ok: true });

    const logs = await kubectl(inject('clusterBinDir'), world.kubeconfigPath, [
      'logs',
      '-n',
      ns,
      'deployment/stores',
    ]);
    expect(logs).toContain('probe-app: listening on :8000');
  }, 300_000);

  it('fails a revision whose container exits at start, naming CrashLoopBackOff, and repairs it with the next', async () => {
    const created = await world.client.createDeployment(
      app(world, 'crashes', ns, { source_revision_config: { image_uri: image(realNode, 'crash-app') } }),
    );
    await waitForRevision(world, created, 'DEPLOY_FAILED', 120_000);
    const failed = await latest(created.id);
    expect(lastMessage(created.id)).toMatch(
      /DEPLOY_FAILED: pod crashes-\S+ \(container app\) is in CrashLoopBackOff/,
    );

    const repaired = await world.client.patchDeployment(failed.id, {
      source_revision_config: { image_uri: image(realNode, 'probe-app') },
    });
    await waitForRevision(world, repaired, 'DEPLOYED', 120_000);
    expect(await revisionStatus(world, created.id, created.latest_revision_id ?? '')).toBe('DEPLOY_FAILED');
  }, 300_000);

  it('fails a revision whose image digest the registry does not have, naming the pull failure', async () => {
    const missing = `${realNode.registry}/k8s-listener-test/probe-app@sha256:${'0'.repeat(64)}`;
    const created = await world.client.createDeployment(
      app(world, 'no-image', ns, { source_revision_config: { image_uri: missing } }),
    );
    await waitForRevision(world, created, 'DEPLOY_FAILED', 120_000);
    expect(lastMessage(created.id)).toMatch(/\(container app\) is in (ImagePullBackOff|ErrImagePull)/);

    const repaired = await world.client.patchDeployment(created.id, {
      source_revision_config: { image_uri: image(realNode, 'probe-app') },
    });
    await waitForRevision(world, repaired, 'DEPLOYED', 120_000);
  }, 300_000);
});
