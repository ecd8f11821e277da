// The status path never takes a change to apply for a change of status. A reconciler with no
// watch (every read a request, as a reconcile whose watch missed an event) converges a
// deployment, then meets each kind of change: its workload's status moving (the status path:
// nothing written, the rollout reported), and a hand edit of a spec field, a label, an ingress
// controller's annotation the agent writes, a Secret's data, a deleted object, a new revision
// (each the full path, and repaired).
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Deployment, Listener } from '../../../src/controlplane/schemas/index.ts';
import type { KubeClient, LiveKubeObject } from '../../../src/kube/index.ts';
import { LABEL_MANAGED_BY } from '../../../src/objects/ownership.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import type { AgentMetrics } from '../../../src/report/metrics.ts';
import { app, type World } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { desire, passThrough, soloReconciler, soloWorld } from '../../support/soloReconciler.ts';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const cluster = soloWorld(logger);
let world: World;
let kube: KubeClient;
let listener: Listener;
let namespace: string;
beforeAll(() => {
  ({ world, kube, listener, namespace } = cluster);
});

async function paths(metrics: AgentMetrics): Promise<{ full: number; status: number }> {
  const values = (await metrics.reconcilePaths.get()).values;
  const count = (path: string) => values.find((v) => v.labels.path === path)?.value ?? 0;
  return { full: count('full'), status: count('status') };
}

/** A converged deployment, its reconciler counting each request it sends by verb. */
async function converged(name: string, options: { renderConfig?: RenderConfig; customUrl?: string } = {}) {
  const calls: string[] = [];
  const { client } = passThrough(kube, (verb, kind) => calls.push(`${verb} ${kind}`));
  const solo = soloReconciler({
    kube,
    listener,
    logger,
    client,
    ...(options.renderConfig ? { renderConfig: options.renderConfig } : {}),
  });
  const deployment: Deployment = await desire(
    world.client,
    solo.desired,
    app(world, name, namespace, {
      source_config: {
        listener_id: listener.id,
        listener_config: { k8s_namespace: namespace },
        resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32 },
        ...(options.customUrl ? { custom_url: options.customUrl } : {}),
      },
    }),
  );
  expect((await solo.reconciler.reconcile(deployment.id)).result).not.toBe('terminal');
  expect(await paths(solo.metrics)).toEqual({ full: 1, status: 0 });
  calls.length = 0;
  return { ...solo, deployment, calls };
}

const ref = (kind: string, name: string) => ({
  apiVersion: kind === 'Deployment' ? 'apps/v1' : 'v1',
  kind,
  namespace,
  name,
});
const writes = (calls: readonly string[]) => calls.filter((call) => !/^(get|list) /.test(call));

describe('the status path', () => {
  it("takes a workload's status moving: nothing written, the rollout reported from what is live", async () => {
    const { reconciler, deployment, metrics, calls, sent, reporter } = await converged('status-moves');
    // The controller moves the Deployment's status (replicas updated, ready, available) and
    // nothing else: each look is the status path, until it reports the revision DEPLOYED.
    await eventually(
      'DEPLOYED through the status path',
      async () => {
        await reconciler.reconcile(deployment.id);
        await reporter.flush();
        const last = sent
          .flatMap((b) => b.reports)
          .filter((r) => r.deployment_id === deployment.id)
          .at(-1);
        return last?.revision_status === 'DEPLOYED' ? true : undefined;
      },
      60_000,
      300,
    );
    const counted = await paths(metrics);
    expect(counted.full).toBe(1);
    expect(counted.status).toBeGreaterThan(0);
    // Its one write: the outcome on the inventory's status annotation.
    expect(writes(calls)).toEqual(['patch ConfigMap']);
  });

  it('never takes a hand edit of a spec field for status: the full path repairs it', async () => {
    const { reconciler, deployment, metrics, calls } = await converged('spec-edit');
    const name = 'spec-edit';
    await kube.mergePatch(ref('Deployment', name), { spec: { replicas: 3 } });
    await reconciler.reconcile(deployment.id);
    expect((await paths(metrics)).full).toBe(2);
    expect(writes(calls)).toContain('apply Deployment');
    const live = (await kube.get(ref('Deployment', name))) as LiveKubeObject & { spec: { replicas: number } };
    expect(live.spec.replicas).toBe(1);
  });

  it('never takes a label edited by hand (the generation unmoved) for status', async () => {
    const { reconciler, deployment, metrics } = await converged('label-edit');
    const before = await kube.get(ref('Deployment', 'label-edit'));
    await kube.mergePatch(ref('Deployment', 'label-edit'), {
      metadata: { labels: { [LABEL_MANAGED_BY]: 'someone' } },
    });
    const edited = await kube.get(ref('Deployment', 'label-edit'));
    expect(edited?.metadata.generation).toBe(before?.metadata.generation);
    await reconciler.reconcile(deployment.id);
    expect((await paths(metrics)).full).toBe(2);
    const live = await kube.get(ref('Deployment', 'label-edit'));
    expect(live?.metadata.labels[LABEL_MANAGED_BY]).toBe(before?.metadata.labels[LABEL_MANAGED_BY]);
  });

  it("never takes an ingress controller's annotation edited by hand (the generation unmoved) for status", async () => {
    const AUTH_URL = 'nginx.ingress.kubernetes.io/auth-url';
    const WHITELIST = 'nginx.ingress.kubernetes.io/whitelist-source-range';
    const rendered = { [AUTH_URL]: 'https://auth.example.test/check', [WHITELIST]: '10.0.0.0/8' };
    const renderConfig = RenderConfig.parse({
      ingress: { className: 'nginx', allowedHostSuffixes: ['example.test'], annotations: rendered },
    });
    const { reconciler, deployment, metrics } = await converged('annotation-edit', {
      renderConfig,
      customUrl: 'https://annotation-edit.example.test/',
    });
    const ingress = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      namespace,
      name: 'annotation-edit',
    };
    const before = await kube.get(ingress);
    expect(before?.metadata.annotations).toMatchObject(rendered);
    let full = 1;
    for (const edit of [{ [AUTH_URL]: null }, { [WHITELIST]: '0.0.0.0/0' }]) {
      await kube.mergePatch(ingress, { metadata: { annotations: edit } });
      const edited = await kube.get(ingress);
      expect(edited?.metadata.generation).toBe(before?.metadata.generation);
      expect(edited?.metadata.annotations).not.toMatchObject(rendered);
      await reconciler.reconcile(deployment.id);
      expect((await paths(metrics)).full).toBe(++full);
      expect((await kube.get(ingress))?.metadata.annotations).toMatchObject(rendered);
    }
    // Repaired, it is converged again: the next look is the status path.
    const { status } = await paths(metrics);
    await reconciler.reconcile(deployment.id);
    expect(await paths(metrics)).toEqual({ full, status: status + 1 });
  });

  it("never takes a Secret's data edited by hand for status", async () => {
    const { reconciler, deployment, metrics } = await converged('secret-edit');
    const secrets = await kube.list('Secret', {
      namespace,
      labelSelector: `k8s-listener.io/deployment-id=${deployment.id}`,
    });
    const secret = secrets.find(
      (s) => (s as { data?: Record<string, string> }).data?.API_TOKEN !== undefined,
    );
    if (!secret) throw new Error('no Secret holds API_TOKEN');
    const secretRef = ref('Secret', secret.metadata.name);
    await kube.mergePatch(secretRef, { data: { API_TOKEN: Buffer.from('tampered').toString('base64') } });
    await reconciler.reconcile(deployment.id);
    expect((await paths(metrics)).full).toBe(2);
    const live = (await kube.get(secretRef)) as LiveKubeObject & { data: Record<string, string> };
    expect(Buffer.from(live.data.API_TOKEN ?? '', 'base64').toString()).toBe('integration-secret-value');
  });

  it('never takes a deleted object for status: the full path makes it again', async () => {
    const { reconciler, deployment, metrics } = await converged('deleted-object');
    await kube.delete(ref('Service', 'deleted-object'));
    await eventually('the Service gone', async () =>
      (await kube.get(ref('Service', 'deleted-object'))) === undefined ? true : undefined,
    );
    await reconciler.reconcile(deployment.id);
    expect((await paths(metrics)).full).toBe(2);
    expect(await kube.get(ref('Service', 'deleted-object'))).toBeDefined();
  });

  it('takes the full path for a new input: a changed deployment', async () => {
    const { reconciler, deployment, desired, metrics } = await converged('new-input');
    const entry = desired.get(deployment.id);
    if (entry?.kind !== 'present') throw new Error('not present');
    desired.set(deployment.id, {
      ...entry,
      deployment: { ...entry.deployment, source_revision_config: { image_uri: 'nginx:1.28' } },
      target: { ...entry.target, revision: undefined },
    });
    await reconciler.reconcile(deployment.id);
    expect((await paths(metrics)).full).toBe(2);
  });
});
