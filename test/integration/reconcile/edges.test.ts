// The reconciler at the edges, against the real cluster: an aborted reconcile reports nothing, a
// Secret meeting a terminating namespace first is retried, and a transient failure of a revision
// that already failed gets a real retry. The reconciler runs alone (no agent loops), with a kube
// client that only passes requests on — or, to inject one fault, fails one.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment, Listener, StatusReportBatch } from '../../../src/controlplane/schemas/index.ts';
import { KubeApiError, KubeClient } from '../../../src/kube/index.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { chooseTarget, type Target } from '../../../src/reconcile/loop/target.ts';
import { type ReconcileOutcome, WaitingError } from '../../../src/reconcile/outcome.ts';
import type { ReconcilerKube } from '../../../src/reconcile/reconcilerOptions.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { app, startWorld, type World } from '../../support/agentHarness.ts';
import { desire, passThrough as passThroughOf, soloReconciler } from '../../support/soloReconciler.ts';

const kubeconfigPath = inject('kubeconfigPath');
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
let world: World;
let kube: KubeClient;
let listener: Listener;

beforeAll(async () => {
  world = await startWorld(kubeconfigPath, { namespaces: 3 });
  kube = await KubeClient.fromKubeconfig(kubeconfigPath, { logger });
  listener = await world.client.getListener(world.listenerId);
});

afterAll(async () => {
  await kube?.close();
  await world?.close();
});

/** A reconciler of its own over `client`, whose reports are kept in `sent`. */
const reconcilerOver = (client: ReconcilerKube, renderConfig?: RenderConfig) =>
  soloReconciler({ kube, listener, logger, client, ...(renderConfig ? { renderConfig } : {}) });

/** The test's Kubernetes client, each call counted by verb and `before` run ahead of it. */
const passThrough = (before?: (verb: string, kind: string) => void) => passThroughOf(kube, before);

async function deploymentIn(
  namespace: string,
  name: string,
): Promise<{ deployment: Deployment; target: Target }> {
  const deployment = await world.client.createDeployment(app(world, name, namespace));
  const revisions = (await world.client.listAllRevisions(deployment.id)).items;
  return { deployment, target: chooseTarget(deployment, revisions) };
}

const reported = (sent: readonly StatusReportBatch[]) => sent.flatMap((batch) => batch.reports);

describe('the reconciler at the edges', () => {
  it('an abort (a lost lease) mid-reconcile is its own outcome: nothing reported, nothing recorded', async () => {
    const namespace = world.namespaces[0] ?? '';
    const { deployment, target } = await deploymentIn(namespace, 'edge-abort');
    const lease = new AbortController();
    // The lease is lost as the first object is written.
    const { client } = passThrough((verb) => {
      if (verb === 'apply') lease.abort(new Error('leadership lost'));
    });
    const { reconciler, desired, reporter, sent } = reconcilerOver(client);
    desired.set(deployment.id, { kind: 'present', deployment, target, fingerprint: 'f1' });

    const outcome = await reconciler.reconcile(deployment.id, lease.signal);

    expect(outcome).toEqual({ result: 'aborted' } satisfies ReconcileOutcome);
    await reporter.flush();
    expect(reported(sent)).toEqual([]);
  });

  it('retries a Secret that meets a terminating namespace first (classified by the Status, not its text)', async () => {
    const namespace = uniqueNamespace('edge-term');
    await createNamespace(world.kube, namespace);
    listener = { ...listener, compute_config: { k8s_namespaces: [...world.namespaces, namespace] } };
    const { deployment, target } = await deploymentIn(world.namespaces[1] ?? '', 'edge-term');
    const moved: Deployment = {
      ...deployment,
      source_config: { ...deployment.source_config, listener_config: { k8s_namespace: namespace } },
    };
    const { client } = passThrough();
    const { reconciler, desired } = reconcilerOver(client);
    desired.set(deployment.id, { kind: 'present', deployment: moved, target, fingerprint: 'f1' });
    expect((await reconciler.reconcile(deployment.id)).result).toMatch(/^(done|requeue)$/);

    // The Secret is removed by hand, then the namespace held in Terminating: the Secret is the
    // only object to write, and its error message is the client's shortened one.
    const secrets = await kube.list('Secret', {
      namespace,
      labelSelector: `${LABEL_DEPLOYMENT_ID}=${deployment.id}`,
    });
    expect(secrets.length).toBeGreaterThan(0);
    await world.kube.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'hold', finalizers: ['k8s-listener.io/test-hold'] }, data: {} },
    });
    for (const secret of secrets)
      await kube.delete({ apiVersion: 'v1', kind: 'Secret', namespace, name: secret.metadata.name });
    await world.kube.core.deleteNamespace({ name: namespace });
    try {
      const outcome = await reconciler.reconcile(deployment.id);
      // A wait, raised by the applier from the API server's Status; retried.
      expect(outcome.result).toBe('retry');
      if (outcome.result === 'retry') {
        expect(outcome.error).toBeInstanceOf(WaitingError);
        expect((outcome.error as WaitingError).reason).toBe('NamespaceMissing');
        const cause = (outcome.error as WaitingError).cause;
        expect(cause).toBeInstanceOf(KubeApiError);
        expect((cause as KubeApiError).kind).toBe('Secret');
        expect((cause as KubeApiError).message).not.toContain('being terminated');
      }
    } finally {
      await world.kube.core
        .patchNamespacedConfigMap({
          namespace,
          name: 'hold',
          body: [{ op: 'remove', path: '/metadata/finalizers' }],
        })
        .catch(() => undefined);
    }
  });

  it('gives a revision that already failed a real retry after a transient error', async () => {
    const namespace = world.namespaces[2] ?? '';
    const { deployment, target } = await deploymentIn(namespace, 'edge-retry');
    const failed: Target = {
      revision: target.revision && { ...target.revision, status: 'DEPLOY_FAILED' },
      settled: 'DEPLOY_FAILED',
    };
    let faults = 1;
    const { client, calls } = passThrough((verb, kind) => {
      if (verb === 'apply' && kind !== 'ConfigMap' && faults-- > 0)
        throw new KubeApiError({ verb: 'apply', kind, status: 503, reason: 'ServiceUnavailable' });
    });
    const { reconciler, desired } = reconcilerOver(client);
    desired.set(deployment.id, { kind: 'present', deployment, target: failed, fingerprint: 'f1' });

    expect((await reconciler.reconcile(deployment.id)).result).toBe('retry');
    const before = calls.length;
    expect((await reconciler.reconcile(deployment.id)).result).toMatch(/^(done|requeue)$/);
    // The retry did the work: the objects are there.
    expect(calls.slice(before)).toContain('apply');
    const made = await kube.list('Deployment', {
      namespace,
      labelSelector: `${LABEL_DEPLOYMENT_ID}=${deployment.id}`,
    });
    expect(made.length).toBeGreaterThan(0);

    // Once an attempt settled, the same input is not tried again: nothing is written (its applied
    // objects are only read, for drift to repair).
    const settled = calls.length;
    expect(await reconciler.reconcile(deployment.id)).toEqual({
      result: 'done',
      detail: 'settled',
    } satisfies ReconcileOutcome);
    expect(calls.slice(settled).filter((verb) => verb !== 'get')).toEqual([]);
  });

  // docs/design.md, "Never adopt": `col-N` with a database renders a Service `col-N-db`, as does a
  // deployment named `col-N-db`. Reconciled at the same instant they must never both apply: one
  // wins, the other is refused naming the taken object, and deleting the refused one deletes
  // nothing of the winner.
  it('two deployments whose generated names collide, reconciled at once 50 times: never both applied, nothing of the first deleted', async () => {
    const namespace = world.namespaces[2] ?? '';
    const { client } = passThrough();
    const { reconciler, desired } = reconcilerOver(client);
    const withDatabase = (name: string) =>
      app(world, name, namespace, {
        source_config: {
          listener_id: listener.id,
          listener_config: { k8s_namespace: namespace },
          resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, db_storage_gi: 1 },
        },
      });
    const present = (body: ReturnType<typeof app>) => desire(world.client, desired, body);
    const owners: string[] = [];
    for (let i = 0; i < 50; i++) {
      const first = await present(withDatabase(`col-${i}`));
      const second = await present(app(world, `col-${i}-db`, namespace));
      const [a, b] = await Promise.all([reconciler.reconcile(first.id), reconciler.reconcile(second.id)]);
      const outcomes = [a, b].map((o) => o.result);
      // Exactly one applied; the other refused for the taken name.
      expect(
        outcomes.filter((r) => r === 'terminal'),
        JSON.stringify([a, b]),
      ).toHaveLength(1);
      const loser = a.result === 'terminal' ? first : second;
      const refusal = (a.result === 'terminal' ? a : b) as { error?: Error };
      expect(refusal.error?.message).toContain(
        `Service/${namespace}/col-${i}-db belongs to another deployment`,
      );
      const service = await kube.get({ apiVersion: 'v1', kind: 'Service', namespace, name: `col-${i}-db` });
      const winner = loser === first ? second : first;
      expect(service?.metadata.labels[LABEL_DEPLOYMENT_ID]).toBe(winner.id);
      owners.push(winner === first ? 'database' : 'app');
      // The refused one deleted: nothing of the winner goes.
      desired.set(loser.id, { kind: 'gone' });
      expect((await reconciler.reconcile(loser.id)).result).toBe('done');
      const after = await kube.get({ apiVersion: 'v1', kind: 'Service', namespace, name: `col-${i}-db` });
      expect(after?.metadata.uid).toBe(service?.metadata.uid);
    }
    expect(owners).toHaveLength(50);
  }, 600_000);

  it('two deployments claiming one host, reconciled at once 20 times: exactly one routes it, the other is refused naming the holder', async () => {
    const namespace = world.namespaces[1] ?? '';
    const { client } = passThrough();
    const routing = RenderConfig.parse({
      ingress: { className: 'nginx', allowedHostSuffixes: ['apps.example.test'] },
    });
    const { reconciler, desired } = reconcilerOver(client, routing);
    const claiming = (name: string, host: string) =>
      desire(
        world.client,
        desired,
        app(world, name, namespace, {
          source_config: {
            listener_id: listener.id,
            listener_config: { k8s_namespace: namespace },
            custom_url: `https://${host}/`,
            resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32 },
          },
        }),
      );
    const routesTo = async (host: string) =>
      (await kube.list('Ingress', { namespace })).filter((i) => JSON.stringify(i).includes(`"${host}"`));
    for (let i = 0; i < 20; i++) {
      const host = `shop-${i}.apps.example.test`;
      const shop = await claiming(`shop-${i}`, host);
      const squatter = await claiming(`squatter-${i}`, host);
      const outcomes = await Promise.all([reconciler.reconcile(shop.id), reconciler.reconcile(squatter.id)]);
      const refused = outcomes.filter((o) => o.result === 'retry');
      expect(refused, JSON.stringify(outcomes)).toHaveLength(1);
      const routes = await routesTo(host);
      expect(routes).toHaveLength(1);
      const holder = routes[0]?.metadata.labels[LABEL_DEPLOYMENT_ID];
      const error = (refused[0] as { error?: Error }).error;
      expect(error?.message).toContain(`host ${host} is already routed to deployment ${holder}`);
      // The holder keeps it at its next look; the other is still refused.
      const loser = holder === shop.id ? squatter : shop;
      expect((await reconciler.reconcile(holder ?? '')).result).not.toBe('retry');
      expect((await reconciler.reconcile(loser.id)).result).toBe('retry');
    }

    // An Ingress the agent does not manage holds its host against every deployment.
    await kube.create({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'platform-console', namespace, labels: {}, annotations: {} },
      spec: { ingressClassName: 'nginx', rules: [{ host: 'console.apps.example.test' }] },
    });
    const console = await claiming('console', 'console.apps.example.test');
    const outcome = await reconciler.reconcile(console.id);
    expect(outcome.result).toBe('retry');
    expect(outcome.result === 'retry' ? String(outcome.error) : '').toContain(
      `host console.apps.example.test is already routed to Ingress ${namespace}/platform-console, which this agent does not manage`,
    );
    expect(await routesTo('console.apps.example.test')).toHaveLength(1);
  }, 600_000);

  it('one registry of hosts across route kinds: an HTTPRoute never takes a host an Ingress serves, nor the reverse', async () => {
    const namespace = world.namespaces[2] ?? '';
    const { client } = passThrough();
    const suffixes = ['kinds.example.test'];
    const viaGateway = reconcilerOver(
      client,
      RenderConfig.parse({
        gateway: { parentRefs: [{ name: 'shared', namespace: 'gateways' }] },
        ingress: { allowedHostSuffixes: suffixes },
      }),
    );
    const viaIngress = reconcilerOver(
      client,
      RenderConfig.parse({ ingress: { className: 'nginx', allowedHostSuffixes: suffixes } }),
    );
    const claiming = (over: typeof viaGateway, name: string, host: string) =>
      desire(
        world.client,
        over.desired,
        app(world, name, namespace, {
          source_config: {
            listener_id: listener.id,
            listener_config: { k8s_namespace: namespace },
            custom_url: `https://${host}/`,
            resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32 },
          },
        }),
      );
    const refusal = (outcome: ReconcileOutcome) => {
      expect(outcome.result).toBe('retry');
      const error =
        outcome.result === 'retry' ? (outcome.error as { reason?: string; message?: string }) : {};
      expect(error.reason).toBe('HostTaken');
      return error.message ?? '';
    };
    const named = async (kind: 'Ingress' | 'HTTPRoute', name: string) =>
      (await kube.list(kind, { namespace })).filter((o) => o.metadata.name === name);

    // The platform's Ingress holds its host against a deployment routed through the Gateway.
    await kube.create({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'platform-ingress', namespace, labels: {}, annotations: {} },
      spec: { ingressClassName: 'nginx', rules: [{ host: 'console.kinds.example.test' }] },
    });
    const console = await claiming(viaGateway, 'console', 'console.kinds.example.test');
    expect(refusal(await viaGateway.reconciler.reconcile(console.id))).toContain(
      `host console.kinds.example.test is already routed to Ingress ${namespace}/platform-ingress, which this agent does not manage`,
    );
    expect(await named('HTTPRoute', 'console')).toEqual([]);

    // The reverse: an HTTPRoute the agent does not manage holds its host against an Ingress.
    await kube.apply(
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'platform-route', namespace, labels: {}, annotations: {} },
        spec: {
          parentRefs: [{ name: 'shared', namespace: 'gateways' }],
          hostnames: ['portal.kinds.example.test'],
        },
      },
      { force: true },
    );
    const portal = await claiming(viaIngress, 'portal', 'portal.kinds.example.test');
    expect(refusal(await viaIngress.reconciler.reconcile(portal.id))).toContain(
      `host portal.kinds.example.test is already routed to HTTPRoute ${namespace}/platform-route, which this agent does not manage`,
    );
    expect(await named('Ingress', 'portal')).toEqual([]);

    // And between deployments: the first holder's HTTPRoute keeps the host against an Ingress.
    const shop = await claiming(viaGateway, 'shop', 'shop.kinds.example.test');
    expect((await viaGateway.reconciler.reconcile(shop.id)).result).not.toBe('retry');
    expect(await named('HTTPRoute', 'shop')).toHaveLength(1);
    const squatter = await claiming(viaIngress, 'squatter', 'shop.kinds.example.test');
    expect(refusal(await viaIngress.reconciler.reconcile(squatter.id))).toContain(
      `host shop.kinds.example.test is already routed to deployment ${shop.id}`,
    );
    expect(await named('Ingress', 'squatter')).toEqual([]);
  }, 300_000);
});
