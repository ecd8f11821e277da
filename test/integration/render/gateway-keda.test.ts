// custom_url as a Gateway API HTTPRoute and queue workers scaled by KEDA, against the real API
// server with the Gateway API's and KEDA's CRDs installed (test/cluster/crds.sh): what render makes
// is admitted by their schemas and validation rules; the real agent applies it, records it, waits
// for the Gateway's word on the route (set here by hand through the status subresource, as a
// Gateway controller would), fails the rollout when the Gateway refuses the route, prunes it all
// when the deployment goes, and routes a host for one deployment alone.
import * as k8s from '@kubernetes/client-node';
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { KubeClient } from '../../../src/kube/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { type KubeObject, RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import { routePathPrefix } from '../../../src/render/routes.ts';
import { Reason } from '../../../src/report/rolloutHealth.ts';
import { parseStatusAnnotation } from '../../../src/report/statusAnnotation.ts';
import { REQUIRED_CRDS } from '../../cluster/crds.ts';
import { adminKube, uniqueNamespace } from '../../support/adminKube.ts';
import {
  app,
  revisionStatus,
  startAgent,
  startWorld,
  type World,
  waitForRevision,
} from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { type GatewayWord, gatewaySays } from '../../support/gatewayStatus.ts';
import { gatewayKedaConfig, listener, maximalDeployment } from '../../support/renderFixtures.ts';
import { validDeployment } from '../../support/specArbitraries.ts';

const GATEWAY_GROUP = 'gateway.networking.k8s.io';
const admin = () => adminKube(inject('kubeconfigPath'));

let kube: KubeClient;
/**
 * The fixtures' namespaces (`apps`, `apps-staging`), each dry run in a namespace of this file's
 * own: the cluster is shared, and a namespace named `apps` left behind is one the install test of
 * the README's chart (which makes `apps` itself) cannot take.
 */
const testNamespaces = new Map<string, string>();
beforeAll(async () => {
  kube = await KubeClient.fromKubeconfig(inject('kubeconfigPath'), { logger: pino({ level: 'silent' }) });
  const { core } = admin();
  for (const name of listener.compute_config?.k8s_namespaces ?? []) {
    const own = uniqueNamespace(name);
    await core.createNamespace({ body: { metadata: { name: own } } });
    testNamespaces.set(name, own);
  }
});
afterAll(async () => {
  const { core } = admin();
  for (const name of testNamespaces.values()) await core.deleteNamespace({ name }).catch(() => undefined);
  kube.close();
});

/** A server-side dry run of a rendered object, in this file's namespace for its own. */
function dryRun(object: KubeObject): Promise<KubeObject> {
  const namespace = object.metadata.namespace;
  const moved =
    namespace === undefined
      ? object
      : {
          ...object,
          metadata: { ...object.metadata, namespace: testNamespaces.get(namespace) ?? namespace },
        };
  return kube.apply(moved, { force: true, dryRun: true });
}

function rendered(deployment: Deployment): KubeObject[] {
  const result = renderDeployment(
    { deployment, revision: undefined, listener, allowedNamespaces: undefined },
    gatewayKedaConfig,
  );
  if (!result.ok) throw result.error;
  return result.value.objects;
}

describe('the test cluster', () => {
  it('serves the Gateway API’s and KEDA’s kinds', async () => {
    const crds = admin().config.makeApiClient(k8s.ApiextensionsV1Api);
    for (const name of REQUIRED_CRDS) {
      const crd = await crds.readCustomResourceDefinition({ name });
      expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status, name).toBe('True');
    }
  });
});

describe('objects rendered for a Gateway and KEDA, against the API server', () => {
  it('admits every object of the golden render, HTTPRoute, ScaledObject and TriggerAuthentication among them', async () => {
    const deployment = structuredClone(maximalDeployment);
    deployment.source_config.custom_url = 'https://agents.example.test/platform/';
    const objects = rendered(deployment);
    const kinds = objects.map((o) => o.kind);
    expect(kinds).toEqual(expect.arrayContaining(['HTTPRoute', 'ScaledObject', 'TriggerAuthentication']));
    for (const object of objects) {
      const live = await dryRun(object);
      expect(live.metadata.name, `${object.kind}/${object.metadata.name}`).toBe(object.metadata.name);
    }
  });

  it('admits the route of any path render takes, and of random valid deployments', async () => {
    // Path segments of every character a URL may carry, percent-encoded or not: render keeps what
    // the Gateway API can match, and what it keeps the CRD's validation rules must admit.
    const segment = fc.string({
      unit: fc.constantFrom(..."aZ09-._~!$&'()*+,;=:@%/ é?#".split('')),
      minLength: 1,
      maxLength: 12,
    });
    const routed = fc
      .tuple(validDeployment, fc.array(segment, { maxLength: 3 }))
      .map(([deployment, segments]) => ({
        ...deployment,
        source_config: {
          ...deployment.source_config,
          custom_url: `https://agents.example.test/${segments.join('/')}`,
        },
      }));
    let admitted = 0;
    await fc.assert(
      fc.asyncProperty(routed, async (deployment) => {
        const result = renderDeployment(
          { deployment, revision: undefined, listener, allowedNamespaces: undefined },
          gatewayKedaConfig,
        );
        if (!result.ok) {
          // Refused only for the URL, and only where the route could not match it.
          const url = deployment.source_config.custom_url ?? '';
          expect('problem' in routePathPrefix(url), url).toBe(true);
          return;
        }
        for (const object of result.value.objects) await dryRun(object);
        admitted++;
      }),
      { numRuns: 30 },
    );
    expect(admitted).toBeGreaterThan(5);
  });

  it.each([
    ['an empty segment', '/a//b'],
    ['an encoded slash', '/a%2Fb'],
    ['a fragment', '/a#b'],
  ])('refuses, as render does, a path with %s', async (_what, path) => {
    const [route] = rendered(maximalDeployment).filter((o) => o.kind === 'HTTPRoute');
    const body = structuredClone(route) as KubeObject & {
      spec: { rules: { matches: { path: { value: string } }[] }[] };
    };
    const match = body.spec.rules[0]?.matches[0];
    if (!match) throw new Error('the route has no match');
    match.path.value = path;
    await expect(dryRun(body)).rejects.toMatchObject({ status: 422 });
    expect(routePathPrefix(`https://agents.example.test${path}`)).toHaveProperty('problem');
  });
});

describe('the agent with a Gateway and KEDA queue scaling', () => {
  let world: World;
  let agent: Agent;
  let ns: string;
  const gatewayNamespace = 'gateways';
  const render = {
    gateway: { parentRefs: [{ name: 'shared', namespace: gatewayNamespace }] },
    ingress: { allowedHostSuffixes: ['example.test'] },
    autoscaling: { queue: 'keda' as const },
  };

  beforeAll(async () => {
    world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
    ns = world.namespaces[0] ?? '';
    RenderConfig.parse(render);
    agent = await startAgent(world, { render, reconcile: { failureGraceMs: 3_000 } });
  });
  afterAll(async () => {
    await agent?.stop();
    await world?.close();
  });

  const custom = () => world.kube.config.makeApiClient(k8s.CustomObjectsApi);
  const routeOf = (name: string) =>
    custom().getNamespacedCustomObject({
      group: GATEWAY_GROUP,
      version: 'v1',
      namespace: ns,
      plural: 'httproutes',
      name,
    }) as Promise<{ metadata: { generation: number }; spec: { hostnames: string[] } }>;

  const accept = (name: string, word: GatewayWord) =>
    gatewaySays(world.kube, { namespace: ns, name }, { namespace: gatewayNamespace, name: 'shared' }, word);

  async function statusOf(deployment: Deployment) {
    const inventory = await world.kube.core.readNamespacedConfigMap({
      name: `k8s-listener-inv-${deployment.id}`,
      namespace: ns,
    });
    return parseStatusAnnotation(inventory.metadata?.annotations?.['k8s-listener.io/status']);
  }

  function routed(name: string, host: string) {
    return app(world, name, ns, {
      source_config: {
        listener_id: world.listenerId,
        listener_config: { k8s_namespace: ns },
        custom_url: `https://${host}/${name}`,
        resource_spec: {
          min_scale: 1,
          max_scale: 1,
          cpu: 0.1,
          memory_mb: 64,
          queue_min_scale: 1,
          queue_max_scale: 4,
          queue_cpu: 0.1,
          db_storage_gi: 1,
        },
      },
    });
  }

  it('applies the route and the scaler, records them, waits for the Gateway, and prunes them with the deployment', async () => {
    const deployment = await world.client.createDeployment(routed('routed', 'routed.example.test'));
    const selector = `${LABEL_DEPLOYMENT_ID}=${deployment.id}`;
    const listed = async (group: string, version: string, plural: string) =>
      (
        (await custom().listNamespacedCustomObject({
          group,
          version,
          namespace: ns,
          plural,
          labelSelector: selector,
        })) as {
          items: { metadata: { name: string } }[];
        }
      ).items.map((item) => item.metadata.name);

    // Applied, and recorded in the inventory.
    await eventually('the route and the scaler applied', async () =>
      (await listed(GATEWAY_GROUP, 'v1', 'httproutes')).length === 1 &&
      (await listed('keda.sh', 'v1alpha1', 'scaledobjects')).length === 1 &&
      (await listed('keda.sh', 'v1alpha1', 'triggerauthentications')).length === 1
        ? true
        : undefined,
    );
    const route = await routeOf('routed');
    expect(route.spec.hostnames).toEqual(['routed.example.test']);
    const inventory = await world.kube.core.readNamespacedConfigMap({
      name: `k8s-listener-inv-${deployment.id}`,
      namespace: ns,
    });
    const recorded = JSON.stringify(inventory.data);
    for (const kind of ['HTTPRoute', 'ScaledObject', 'TriggerAuthentication'])
      expect(recorded).toContain(kind);
    // No cpu autoscaler for the queue: KEDA scales it.
    const hpas = await world.kube.config
      .makeApiClient(k8s.AutoscalingV2Api)
      .listNamespacedHorizontalPodAutoscaler({ namespace: ns, labelSelector: selector });
    expect(hpas.items.map((h) => h.metadata?.name)).toEqual([]);

    // Every workload ready, the route not yet taken by its Gateway: still deploying, saying why.
    const logs = () =>
      world.emulator.state().deployments.find((d) => d.deployment.id === deployment.id)?.deploy_logs ?? [];
    await eventually('the control plane told the rollout waits for the Gateway', async () =>
      logs().some((entry) =>
        entry.message.includes('waiting for Gateway gateways/shared to accept the route'),
      )
        ? true
        : undefined,
    );
    expect(await revisionStatus(world, deployment.id, deployment.latest_revision_id ?? '')).toBe('DEPLOYING');

    await accept('routed', { status: 'True', reason: 'Accepted', message: 'route attached' });
    await waitForRevision(world, deployment, 'DEPLOYED');

    // Gone from the control plane: the route, the scaler and its authentication go too.
    await world.client.deleteDeployment(deployment.id);
    await eventually(
      'the route and the scaler pruned',
      async () =>
        (await listed(GATEWAY_GROUP, 'v1', 'httproutes')).length +
          (await listed('keda.sh', 'v1alpha1', 'scaledobjects')).length +
          (await listed('keda.sh', 'v1alpha1', 'triggerauthentications')).length ===
        0
          ? true
          : undefined,
      60_000,
    );
  });

  it('fails the rollout when the Gateway refuses the route, with the Gateway and its reason', async () => {
    const deployment = await world.client.createDeployment(routed('refused', 'refused.example.test'));
    await eventually('the route applied', async () =>
      (await routeOf('refused').catch(() => undefined)) ? true : undefined,
    );
    await accept('refused', {
      status: 'False',
      reason: 'NotAllowedByListeners',
      message: 'no listener of the Gateway admits routes from this namespace',
    });
    await waitForRevision(world, deployment, 'DEPLOY_FAILED');
    const status = await statusOf(deployment);
    expect(status).toMatchObject({ status: 'DEPLOY_FAILED', reason: Reason.RouteRefused });
    expect(status?.message).toBe(
      'HTTPRoute refused: Gateway gateways/shared refused the route (NotAllowedByListeners: no listener of the Gateway admits routes from this namespace)',
    );
  });

  it('routes a host for one deployment alone: an HTTPRoute another holds is refused, naming the holder', async () => {
    const logs = (id: string) =>
      world.emulator.state().deployments.find((d) => d.deployment.id === id)?.deploy_logs ?? [];
    const told = (id: string, text: string) =>
      eventually(`told: ${text}`, async () =>
        logs(id).some((entry) => entry.message.includes(text)) ? true : undefined,
      );
    // The first to route the host keeps it.
    const first = await world.client.createDeployment(routed('first', 'shared-host.example.test'));
    await eventually('the first route applied', async () =>
      (await routeOf('first').catch(() => undefined)) ? true : undefined,
    );
    await accept('first', { status: 'True', reason: 'Accepted', message: 'route attached' });
    await waitForRevision(world, first, 'DEPLOYED');
    const second = await world.client.createDeployment(routed('second', 'shared-host.example.test'));
    await told(second.id, `host shared-host.example.test is already routed to deployment ${first.id}`);
    expect(await routeOf('second').catch(() => undefined)).toBeUndefined();

    // A route this agent does not manage holds its host against every deployment.
    await custom().createNamespacedCustomObject({
      group: GATEWAY_GROUP,
      version: 'v1',
      namespace: ns,
      plural: 'httproutes',
      body: {
        apiVersion: `${GATEWAY_GROUP}/v1`,
        kind: 'HTTPRoute',
        metadata: { name: 'platform-console' },
        spec: {
          parentRefs: [{ name: 'shared', namespace: gatewayNamespace }],
          hostnames: ['console.example.test'],
          rules: [{ backendRefs: [{ name: 'console', port: 80 }] }],
        },
      },
    });
    const third = await world.client.createDeployment(routed('third', 'console.example.test'));
    await told(
      third.id,
      `host console.example.test is already routed to HTTPRoute ${ns}/platform-console, which this agent does not manage`,
    );
    expect(await routeOf('third').catch(() => undefined)).toBeUndefined();
  });
});
