// The agent's life with a deployment, against the emulator and the real cluster: create, patch,
// new revision, redeploy, drift, foreign objects, a bad deployment, a forbidden namespace,
// steady state, delete.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import {
  AGENT_NAME,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../../src/objects/ownership.ts';
import {
  app,
  deploymentNamed,
  revisionStatus,
  startAgent,
  startWorld,
  type World,
  waitForRevision,
} from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

let world: World;
let agent: Agent;
let ns: string;
let other: string;

beforeAll(async () => {
  // The listener allows a third namespace that the agent's own allow-list leaves out.
  world = await startWorld(inject('kubeconfigPath'), { extraListenerNamespaces: ['not-allowed-by-agent'] });
  [ns = '', other = ''] = world.namespaces;
  agent = await startAgent(world, { allowedNamespaces: world.namespaces });
});
afterAll(async () => {
  await agent?.stop();
  await world?.close();
});

const image = async (name: string, namespace = ns) =>
  (await world.kube.apps.readNamespacedDeployment({ name, namespace })).spec?.template.spec?.containers[0]
    ?.image;

async function objectsOf(deploymentId: string, namespace = ns): Promise<string[]> {
  const selector = `${LABEL_DEPLOYMENT_ID}=${deploymentId}`;
  const [deployments, statefulSets, services, secrets] = await Promise.all([
    world.kube.apps.listNamespacedDeployment({ namespace, labelSelector: selector }),
    world.kube.apps.listNamespacedStatefulSet({ namespace, labelSelector: selector }),
    world.kube.core.listNamespacedService({ namespace, labelSelector: selector }),
    world.kube.core.listNamespacedSecret({ namespace, labelSelector: selector }),
  ]);
  return [
    ...deployments.items.map((o) => `Deployment/${o.metadata?.name}`),
    ...statefulSets.items.map((o) => `StatefulSet/${o.metadata?.name}`),
    ...services.items.map((o) => `Service/${o.metadata?.name}`),
    ...secrets.items.map((o) => `Secret/${o.metadata?.name}`),
  ].sort();
}

describe('reconciling deployments', () => {
  let web: Deployment;

  it('creates every object and reports DEPLOYED to the control plane', async () => {
    web = await world.client.createDeployment(
      app(world, 'web', ns, {
        source_config: {
          listener_id: world.listenerId,
          listener_config: { k8s_namespace: ns },
          resource_spec: {
            min_scale: 2,
            max_scale: 2,
            cpu: 0.1,
            memory_mb: 64,
            db_storage_gi: 1,
            kvstore_memory_mb: 32,
          },
        },
      }),
    );
    await waitForRevision(world, web, 'DEPLOYED');
    expect(await objectsOf(web.id)).toEqual([
      'Deployment/web',
      'Secret/web-db-credentials',
      'Secret/web-kvstore-credentials',
      'Secret/web-secrets',
      'Service/web',
      'Service/web-db',
      'Service/web-kvstore',
      'StatefulSet/web-db',
      'StatefulSet/web-kvstore',
    ]);
    const reported = await deploymentNamed(world, web.id);
    expect([reported?.status, reported?.active_revision_id]).toEqual(['READY', web.latest_revision_id]);
    const deployment = await world.kube.apps.readNamespacedDeployment({ name: 'web', namespace: ns });
    expect(deployment.status?.availableReplicas).toBe(2);
    // Operators see the same status in Kubernetes: an Event on the workload, an annotation on
    // the deployment's inventory ConfigMap, and the metrics.
    await eventually('RolloutComplete event', async () => {
      const events = await world.kube.core.listNamespacedEvent({
        namespace: ns,
        fieldSelector: 'involvedObject.name=web,involvedObject.kind=Deployment',
      });
      return events.items.some((e) => e.reason === 'RolloutComplete') ? true : undefined;
    });
    const inventory = await world.kube.core.readNamespacedConfigMap({
      name: `k8s-listener-inv-${web.id}`,
      namespace: ns,
    });
    expect(JSON.parse(inventory.metadata?.annotations?.['k8s-listener.io/status'] ?? '{}')).toMatchObject({
      revisionId: web.latest_revision_id,
      status: 'DEPLOYED',
    });
    const gauge = await agent.metrics.registry.getSingleMetric('k8s_listener_deployments')?.get();
    expect(gauge?.values.find((v) => v.labels.status === 'DEPLOYED')?.value).toBeGreaterThanOrEqual(1);
    // The generated database password is in the cluster, and only there.
    const credentials = await world.kube.core.readNamespacedSecret({
      name: 'web-db-credentials',
      namespace: ns,
    });
    expect(Buffer.from(credentials.data?.password ?? '', 'base64').toString().length).toBeGreaterThan(20);
  });

  it('updates objects in place when only source_config changes, without a new revision', async () => {
    const patched = await world.client.patchDeployment(web.id, {
      source_config: {
        listener_id: world.listenerId,
        listener_config: { k8s_namespace: ns },
        resource_spec: {
          min_scale: 3,
          max_scale: 3,
          cpu: 0.2,
          memory_mb: 64,
          db_storage_gi: 1,
          kvstore_memory_mb: 32,
        },
      },
    });
    expect(patched.latest_revision_id).toBe(web.latest_revision_id);
    await eventually('3 replicas', async () => {
      const deployment = await world.kube.apps.readNamespacedDeployment({ name: 'web', namespace: ns });
      return deployment.spec?.replicas === 3 && deployment.status?.availableReplicas === 3 ? true : undefined;
    });
    const container = (await world.kube.apps.readNamespacedDeployment({ name: 'web', namespace: ns })).spec
      ?.template.spec?.containers[0];
    expect(container?.resources?.requests?.cpu).toBe('200m');
    web = patched;
  });

  it('rolls out a new revision when source_revision_config changes, and a redeploy brings the old image back', async () => {
    const first = web.latest_revision_id ?? '';
    const next = await world.client.patchDeployment(web.id, {
      source_revision_config: { image_uri: 'nginx:1.28' },
    });
    expect(next.latest_revision_id).not.toBe(first);
    await waitForRevision(world, next, 'DEPLOYED');
    expect(await image('web')).toBe('nginx:1.28');

    const redeployed = await world.client.redeployRevision(web.id, first);
    await waitForRevision(world, redeployed, 'DEPLOYED');
    expect(await image('web')).toBe('nginx:1.27');
    expect((await deploymentNamed(world, web.id))?.active_revision_id).toBe(redeployed.latest_revision_id);
    web = redeployed;
  });

  it('restores a managed Service deleted by hand and an image edited by hand', async () => {
    await world.kube.core.deleteNamespacedService({ name: 'web', namespace: ns });
    await world.kube.apps.patchNamespacedDeployment({
      name: 'web',
      namespace: ns,
      body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'busybox:hand-edited' }],
    });
    await eventually('Service restored', async () =>
      (await objectsOf(web.id)).includes('Service/web') ? true : undefined,
    );
    await eventually('image restored', async () =>
      (await image('web')) === 'nginx:1.27' ? true : undefined,
    );
  });

  // Settled objects are held in the watch cache without their body (pod template, data) once
  // checked: an edit of a field kept (replicas, a label) or of the body must still be repaired.
  it('restores hand edits of settled objects: replicas, a label it sets, Secret data', async () => {
    await world.kube.apps.patchNamespacedDeployment({
      name: 'web',
      namespace: ns,
      body: [
        { op: 'replace', path: '/spec/replicas', value: 5 },
        {
          op: 'replace',
          path: `/metadata/labels/${LABEL_MANAGED_BY.replace('/', '~1')}`,
          value: 'someone-else',
        },
      ],
    });
    const before = await world.kube.core.readNamespacedSecret({ name: 'web-secrets', namespace: ns });
    await world.kube.core.patchNamespacedSecret({
      name: 'web-secrets',
      namespace: ns,
      body: [
        { op: 'replace', path: '/data/API_TOKEN', value: Buffer.from('hand-edited').toString('base64') },
      ],
    });
    await eventually('replicas and label restored', async () => {
      const live = await world.kube.apps.readNamespacedDeployment({ name: 'web', namespace: ns });
      return live.spec?.replicas === 3 && live.metadata?.labels?.[LABEL_MANAGED_BY] === AGENT_NAME
        ? true
        : undefined;
    });
    await eventually('Secret data restored', async () => {
      const live = await world.kube.core.readNamespacedSecret({ name: 'web-secrets', namespace: ns });
      return live.data?.API_TOKEN === before.data?.API_TOKEN ? true : undefined;
    });
  });

  it('leaves alone an object with similar labels but another listener id', async () => {
    const foreign = {
      metadata: {
        name: 'foreign',
        labels: {
          'app.kubernetes.io/managed-by': 'k8s-listener',
          [LABEL_LISTENER_ID]: '00000000-0000-4000-8000-0000000000ff',
          [LABEL_DEPLOYMENT_ID]: web.id,
        },
      },
      spec: { selector: { app: 'foreign' }, ports: [{ port: 80 }] },
    };
    await world.kube.core.createNamespacedService({ namespace: ns, body: foreign });
    // A full pass over the deployment (a watch event on it wakes the agent) must not touch it.
    await world.client.patchDeployment(web.id, {
      secrets: [{ name: 'API_TOKEN', value: 'rotated-secret-value' }],
    });
    await eventually('secret rotated', async () => {
      const secret = await world.kube.core.readNamespacedSecret({ name: 'web-secrets', namespace: ns });
      return Buffer.from(secret.data?.API_TOKEN ?? '', 'base64').toString() === 'rotated-secret-value'
        ? true
        : undefined;
    });
    const still = await world.kube.core.readNamespacedService({ name: 'foreign', namespace: ns });
    expect(still.metadata?.labels?.[LABEL_LISTENER_ID]).toBe('00000000-0000-4000-8000-0000000000ff');
    expect(still.metadata?.managedFields?.map((f) => f.manager)).not.toContain('k8s-listener');
  });

  it('fails only the bad deployment, with its reason, while a good one converges', async () => {
    const bad = await world.client.createDeployment(
      app(world, 'bad', other, {
        source_config: {
          listener_id: world.listenerId,
          listener_config: { k8s_namespace: other },
          resource_spec: { min_scale: 3, max_scale: 1 },
        },
      }),
    );
    const good = await world.client.createDeployment(app(world, 'good', other));
    await waitForRevision(world, bad, 'DEPLOY_FAILED');
    await waitForRevision(world, good, 'DEPLOYED');
    expect(await objectsOf(bad.id, other)).toEqual([]);
    expect(await objectsOf(good.id, other)).toContain('Deployment/good');
  });

  it('writes nothing for a deployment whose namespace the agent does not allow', async () => {
    const outside = await world.client.createDeployment(app(world, 'outside', 'not-allowed-by-agent'));
    await waitForRevision(world, outside, 'DEPLOY_FAILED');
    const objects = await world.kube.apps.listDeploymentForAllNamespaces({
      labelSelector: `${LABEL_DEPLOYMENT_ID}=${outside.id}`,
    });
    expect(objects.items).toEqual([]);
  });

  it('makes no write request in a steady state of several poll cycles', async () => {
    const kube = agent.kube;
    if (!kube) throw new Error('agent has no Kubernetes client');
    // Let in-flight rollouts settle, then count writes over ten poll intervals.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const before = kube.writeRequestCount({ ignoreKinds: ['Lease'] });
    const reads = kube.requestCounts().get ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(kube.writeRequestCount({ ignoreKinds: ['Lease'] })).toBe(before);
    // The agent was not idle: it kept polling (reads are allowed).
    expect(kube.requestCounts().get ?? 0).toBeGreaterThanOrEqual(reads);
  });

  it('deletes the objects of a deleted deployment, keeps its database volume, and reports it', async () => {
    await world.client.deleteDeployment(web.id);
    await eventually(
      'deployment removed from the control plane',
      async () => ((await deploymentNamed(world, web.id)) ? undefined : true),
      60_000,
    );
    // Only the database's credentials, kept with its volume, and the look-alike with the same
    // deployment id but another listener id are left.
    expect(await objectsOf(web.id)).toEqual(['Secret/web-db-credentials', 'Service/foreign']);
    const claims = await world.kube.core.listNamespacedPersistentVolumeClaim({
      namespace: ns,
      labelSelector: `${LABEL_DEPLOYMENT_ID}=${web.id}`,
    });
    expect(claims.items.map((c) => c.metadata?.name)).toEqual(['data-web-db-0']);
    // The control plane removed it once the agent reported it deleted.
    await expect(revisionStatus(world, web.id, web.latest_revision_id ?? '')).rejects.toMatchObject({
      status: 404,
    });
  });

  it('fails, but keeps, a deployment whose namespace is taken off the listener', async () => {
    const listener = await world.client.getListener(world.listenerId);
    const good = (await world.client.listAllDeployments({ name_contains: 'good' })).items[0];
    if (!good) throw new Error('no deployment named good');
    await world.client.putListener(world.listenerId, {
      compute_type: listener.compute_type,
      compute_id: listener.compute_id,
      compute_config: { k8s_namespaces: [ns] },
    });
    await waitForRevision(world, good, 'DEPLOY_FAILED');
    // Nothing deleted: the objects stay until the control plane deletes the deployment.
    expect(await objectsOf(good.id, other)).toContain('Deployment/good');
  });
});
