// The platform's placement and a deployment's own stores, against the real agent, API server,
// scheduler and StatefulSet controller: render.scheduling puts application pods and data stores
// on the nodes, priority classes and tolerations it names, a namespace's level over the default;
// a deployment that switches from its in-cluster database to its own (POSTGRES_URI_CUSTOM) loses
// the database's objects and keeps its volume and the volume's password, as
// reconcile.prune.keepDatabaseVolumes says, and switching back re-uses both.
import { randomBytes } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { LABEL_COMPONENT, LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

// PriorityClasses are cluster-wide: names of this file's own.
const suffix = randomBytes(3).toString('hex');
const APPS_PRIORITY = { name: `k8sl-apps-${suffix}`, value: 1_000 };
const STORES_PRIORITY = { name: `k8sl-stores-${suffix}`, value: 2_000 };
// The test cluster's fake nodes: kwok-node-0, -1 and -2, each labelled with its hostname.
const HOSTNAME = 'kubernetes.io/hostname';

let world: World;
let agent: Agent;
let placed = '';
let plain = '';

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 2 });
  [placed = '', plain = ''] = world.namespaces;
  for (const priority of [APPS_PRIORITY, STORES_PRIORITY])
    await world.kube.objects.create({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: priority.name },
      value: priority.value,
    } as never);
  agent = await startAgent(world, {
    allowedNamespaces: world.namespaces,
    reconcile: { prune: { keepDatabaseVolumes: true } },
    render: {
      scheduling: {
        default: {
          apps: {
            nodeSelector: { [HOSTNAME]: 'kwok-node-1' },
            tolerations: [{ key: 'example.test/agents', operator: 'Exists', effect: 'NoSchedule' }],
            priorityClassName: APPS_PRIORITY.name,
          },
          stores: { nodeSelector: { [HOSTNAME]: 'kwok-node-2' }, priorityClassName: STORES_PRIORITY.name },
        },
        // In this namespace the application pods go elsewhere; the rest is the default's.
        byNamespace: { [placed]: { apps: { nodeSelector: { [HOSTNAME]: 'kwok-node-0' } } } },
      },
    },
  });
}, 120_000);
afterAll(async () => {
  await agent?.stop();
  for (const priority of [APPS_PRIORITY, STORES_PRIORITY])
    await world?.kube.objects
      .delete({
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name: priority.name },
      })
      .catch(() => undefined);
  await world?.close();
});

const withSpec = (namespace: string, resource_spec: Record<string, unknown>) => ({
  source_config: {
    listener_id: world.listenerId,
    listener_config: { k8s_namespace: namespace },
    deployment_type: 'dev' as const,
    resource_spec,
  },
});

async function podsOf(deploymentId: string, namespace: string): Promise<V1Pod[]> {
  const pods = await world.kube.core.listNamespacedPod({
    namespace,
    labelSelector: `${LABEL_DEPLOYMENT_ID}=${deploymentId}`,
  });
  return pods.items.filter((pod) => !pod.metadata?.deletionTimestamp);
}

/** Where each component's pods run, as the scheduler and the Priority admission placed them. */
async function placement(deploymentId: string, namespace: string) {
  return (await podsOf(deploymentId, namespace))
    .map((pod) => ({
      component: pod.metadata?.labels?.[LABEL_COMPONENT],
      node: pod.spec?.nodeName,
      priorityClassName: pod.spec?.priorityClassName,
      priority: pod.spec?.priority,
    }))
    .sort((a, b) => String(a.component).localeCompare(String(b.component)));
}

describe('render.scheduling on the real scheduler', () => {
  it('puts application pods and data stores where the platform says, the namespace level over the default', async () => {
    const spec = {
      min_scale: 1,
      max_scale: 1,
      cpu: 0.05,
      memory_mb: 32,
      queue_min_scale: 1,
      db_storage_gi: 1,
      kvstore_memory_mb: 32,
    };
    const [inPlaced, inPlain] = await Promise.all([
      world.client.createDeployment(app(world, 'placed', placed, withSpec(placed, spec))),
      world.client.createDeployment(app(world, 'plain', plain, withSpec(plain, spec))),
    ]);
    await Promise.all([
      waitForRevision(world, inPlaced, 'DEPLOYED'),
      waitForRevision(world, inPlain, 'DEPLOYED'),
    ]);

    const apps = (node: string) => ({
      node,
      priorityClassName: APPS_PRIORITY.name,
      priority: APPS_PRIORITY.value,
    });
    const stores = {
      node: 'kwok-node-2',
      priorityClassName: STORES_PRIORITY.name,
      priority: STORES_PRIORITY.value,
    };
    const expected = (appNode: string) => [
      { component: 'database', ...stores },
      { component: 'kvstore', ...stores },
      { component: 'main', ...apps(appNode) },
      { component: 'queue', ...apps(appNode) },
    ];
    expect(await placement(inPlaced.id, placed)).toEqual(expected('kwok-node-0'));
    expect(await placement(inPlain.id, plain)).toEqual(expected('kwok-node-1'));
    // The toleration is the application pods' only (beside those Kubernetes adds to every pod).
    const tolerations = (await podsOf(inPlain.id, plain)).map((pod) => [
      pod.metadata?.labels?.[LABEL_COMPONENT],
      pod.spec?.tolerations?.some((t) => t.key === 'example.test/agents') ?? false,
    ]);
    expect(Object.fromEntries(tolerations)).toEqual({
      main: true,
      queue: true,
      database: false,
      kvstore: false,
    });
  }, 180_000);
});

describe('a deployment that switches from its in-cluster database to its own', () => {
  it('loses the StatefulSet and its Service, keeps the volume and its password, reads its own through DATABASE_URI, and moves back to the same data', async () => {
    const ns = plain;
    // The platform's shared Redis, which the deployment names by REDIS_URI_CUSTOM.
    await world.kube.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'shared-redis' }, stringData: { uri: 'redis://redis.example.test:6379/3' } },
    });
    const first = await world.client.createDeployment(
      app(
        world,
        'switch',
        ns,
        withSpec(ns, { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, db_storage_gi: 1 }),
      ),
    );
    await waitForRevision(world, first, 'DEPLOYED');
    const claim = async () =>
      (await world.kube.core.listNamespacedPersistentVolumeClaim({ namespace: ns })).items.find(
        (c) => c.metadata?.name === 'data-switch-db-0',
      );
    const kept = await claim();
    expect(kept?.metadata?.labels?.[LABEL_DEPLOYMENT_ID]).toBe(first.id);
    expect(kept?.status?.phase).toBe('Bound');
    const names = async (kind: 'StatefulSet' | 'Service' | 'Secret') => {
      const selector = { namespace: ns, labelSelector: `${LABEL_DEPLOYMENT_ID}=${first.id}` };
      const list =
        kind === 'StatefulSet'
          ? await world.kube.apps.listNamespacedStatefulSet(selector)
          : kind === 'Service'
            ? await world.kube.core.listNamespacedService(selector)
            : await world.kube.core.listNamespacedSecret(selector);
      return list.items.map((item) => item.metadata?.name).sort();
    };
    expect(await names('StatefulSet')).toEqual(['switch-db']);
    const credentials = () =>
      world.kube.core.readNamespacedSecret({ name: 'switch-db-credentials', namespace: ns });
    const made = await credentials();
    expect(made.data?.password).toBeTruthy();

    // Its next revision brings its own PostgreSQL and Redis, by LangGraph's names for them.
    const second: Deployment = await world.client.patchDeployment(first.id, {
      source_revision_config: { image_uri: 'nginx:1.28' },
      secrets: [
        { name: 'API_TOKEN', value: 'integration-secret-value' },
        { name: 'POSTGRES_URI_CUSTOM', value: 'postgresql://agent:elsewhere@db.example.test:5432/agent' },
      ],
      secret_references: [{ name: 'REDIS_URI_CUSTOM', secret_name: 'shared-redis', secret_key: 'uri' }],
    });
    expect(second.latest_revision_id).not.toBe(first.latest_revision_id);
    await waitForRevision(world, second, 'DEPLOYED');
    await eventually(
      'the database pruned',
      async () => ((await names('StatefulSet')).length === 0 ? true : undefined),
      60_000,
    );
    expect(await names('Service')).toEqual(['switch']);
    // The volume stays, the same claim, not being deleted, and so does its password.
    expect(await names('Secret')).toEqual(['switch-db-credentials', 'switch-secrets']);
    const after = await claim();
    expect(after?.metadata?.uid).toBe(kept?.metadata?.uid);
    expect(after?.metadata?.deletionTimestamp).toBeUndefined();
    expect((await credentials()).metadata?.uid).toBe(made.metadata?.uid);

    const main = await world.kube.apps.readNamespacedDeployment({ name: 'switch', namespace: ns });
    const env = main.spec?.template.spec?.containers[0]?.env ?? [];
    const ref = (name: string) => env.find((e) => e.name === name)?.valueFrom?.secretKeyRef;
    for (const name of ['DATABASE_URI', 'POSTGRES_URI'])
      expect(ref(name), name).toMatchObject({ name: 'switch-secrets', key: 'POSTGRES_URI_CUSTOM' });
    expect(ref('REDIS_URI')).toMatchObject({ name: 'shared-redis', key: 'uri' });
    expect(env.map((e) => e.name)).not.toContain('DATABASE_PASSWORD');

    // Back to its in-cluster database: the same volume, opened with the password it was made with.
    const third: Deployment = await world.client.patchDeployment(first.id, {
      source_revision_config: { image_uri: 'nginx:1.27' },
      secrets: [{ name: 'API_TOKEN', value: 'integration-secret-value' }],
    });
    expect(third.latest_revision_id).not.toBe(second.latest_revision_id);
    await waitForRevision(world, third, 'DEPLOYED');
    expect(await names('StatefulSet')).toEqual(['switch-db']);
    const reopened = await credentials();
    expect(reopened.metadata?.uid).toBe(made.metadata?.uid);
    expect(reopened.data?.password).toBe(made.data?.password);
    expect((await claim())?.metadata?.uid).toBe(kept?.metadata?.uid);

    // Deleted: the volume and its password still outlive it.
    await world.client.deleteDeployment(first.id);
    // Its objects go one by one, the Secrets after the Services: wait for the last of them.
    await eventually(
      'the deployment removed',
      async () =>
        (await names('Service')).length === 0 && (await names('Secret')).length <= 1 ? true : undefined,
      60_000,
    );
    expect((await claim())?.metadata?.uid).toBe(kept?.metadata?.uid);
    expect(await names('Secret')).toEqual(['switch-db-credentials']);
  }, 240_000);
});
