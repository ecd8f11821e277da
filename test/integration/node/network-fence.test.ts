// On the real node, with a NetworkPolicy implementation enforcing what the agent renders: a
// deployment's own pods reach its PostgreSQL, Redis and application, and the pods of another
// deployment — in the same namespace or in another — cannot open a connection to any of them.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import {
  httpGet,
  image,
  REAL_NODE_NAMESPACE_ANNOTATIONS,
  type RealNodeImages,
  realNodeFor,
  realNodeRender,
} from '../../support/realNodeSuite.ts';

const node = realNodeFor('node/network-fence');

interface ConnectResult {
  readonly connected: boolean;
  readonly error?: string;
}

describe.skipIf(!node)('the network fence on a real node', () => {
  const realNode = node as RealNodeImages;
  let world: World;
  let agent: Agent;
  let home: string;
  let elsewhere: string;
  let owner: Deployment;

  const spec = (namespace: string, withStores: boolean) => ({
    listener_id: world.listenerId,
    listener_config: { k8s_namespace: namespace },
    deployment_type: 'dev' as const,
    resource_spec: {
      min_scale: 1,
      max_scale: 1,
      cpu: 0.05,
      memory_mb: 96,
      ...(withStores ? { db_cpu: 0.1, db_memory_mb: 256, kvstore_cpu: 0.05, kvstore_memory_mb: 64 } : {}),
    },
  });

  beforeAll(async () => {
    world = await startWorld(inject('kubeconfigPath'), {
      namespaces: 2,
      namespaceAnnotations: REAL_NODE_NAMESPACE_ANNOTATIONS,
    });
    [home = '', elsewhere = ''] = world.namespaces;
    agent = await startAgent(world, {
      allowedNamespaces: world.namespaces,
      render: realNodeRender(realNode),
      reconcile: { failureGraceMs: 20_000 },
    });
    const probe = { image_uri: image(realNode, 'probe-app') };
    owner = await world.client.createDeployment(
      app(world, 'owner', home, { source_revision_config: probe, source_config: spec(home, true) }),
    );
    const neighbour = await world.client.createDeployment(
      app(world, 'neighbour', home, { source_revision_config: probe, source_config: spec(home, false) }),
    );
    const outsider = await world.client.createDeployment(
      app(world, 'outsider', elsewhere, {
        source_revision_config: probe,
        source_config: spec(elsewhere, false),
      }),
    );
    for (const deployment of [owner, neighbour, outsider])
      await waitForRevision(world, deployment, 'DEPLOYED', 180_000);
  }, 300_000);
  afterAll(async () => {
    await agent?.stop();
    await world?.close();
  });

  /** Asks deployment `from`'s pod (through its Service) to open a TCP connection to host:port. */
  async function connect(
    from: string,
    namespace: string,
    host: string,
    port: number,
  ): Promise<ConnectResult> {
    const service = await world.kube.core.readNamespacedService({ name: from, namespace });
    const url = `http://${service.spec?.clusterIP}/connect?host=${host}&port=${port}`;
    return eventually(`${from} answering`, async () => {
      const { status, body } = await httpGet(url);
      return status === 200 ? (body as ConnectResult) : undefined;
    });
  }

  async function podIp(namespace: string, component: string): Promise<string> {
    const pods = await world.kube.core.listNamespacedPod({
      namespace,
      labelSelector: `app.kubernetes.io/instance=owner,app.kubernetes.io/component=${component}`,
    });
    const ip = pods.items[0]?.status?.podIP;
    if (!ip) throw new Error(`no ${component} pod of owner`);
    return ip;
  }

  it("lets the deployment's own pods reach its database and store by their Service names", async () => {
    expect(await connect('owner', home, `owner-db.${home}.svc`, 5432)).toEqual({ connected: true });
    expect(await connect('owner', home, `owner-kvstore.${home}.svc`, 6379)).toEqual({ connected: true });
  });

  it.each([
    ['database', 5432],
    ['kvstore', 6379],
  ] as const)(
    'keeps the pods of other deployments, in its namespace and in another, from its %s',
    async (component, port) => {
      const target = await podIp(home, component);
      for (const [from, namespace] of [
        ['neighbour', home],
        ['outsider', elsewhere],
      ] as const) {
        const result = await connect(from, namespace, target, port);
        expect(result.connected, `${from} → owner's ${component} (${target}:${port})`).toBe(false);
        // Dropped or refused by the policy: not a name that failed to resolve.
        expect(result.error).toMatch(/timeout|TimeoutError|ConnectionRefusedError/);
      }
    },
  );

  it("keeps the pods of other deployments from its application's port", async () => {
    const target = await podIp(home, 'main');
    const result = await connect('neighbour', home, target, 8000);
    expect(result.connected).toBe(false);
  });
});
