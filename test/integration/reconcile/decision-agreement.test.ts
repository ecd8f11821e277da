// `diff` decides as `run` does. The same live objects go through the reconciler and through the
// preview `diff` prints, and both must reach the same verdict: whose an object is before it is
// written (never adopted from another owner, nor from another deployment of this listener), which
// recorded objects a deletion removes (only those still carrying the deployment's id, and a
// database's volume and credentials only when volumes are not kept), a suspension, an unreadable
// revision, a reference or host the rules refuse, and an agent change held at its rate.
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { type PreviewOptions, previewListener } from '../../../src/cli/diffPreview.ts';
import { SchemaValidationError } from '../../../src/controlplane/parse.ts';
import type { Deployment, Listener } from '../../../src/controlplane/schemas/index.ts';
import type { KubeClient } from '../../../src/kube/index.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { Poller } from '../../../src/reconcile/loop/poller.ts';
import { AgentChangeGate } from '../../../src/reconcile/policy/agentChangeGate.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import type { ActiveSuspension } from '../../../src/reconcile/policy/suspensions.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { app, FAST_RECONCILE, type World } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { desire, soloReconciler, soloWorld } from '../../support/soloReconciler.ts';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const cluster = soloWorld(logger);
let world: World;
let kube: KubeClient;
let listener: Listener;
let namespace: string;
beforeAll(() => {
  ({ world, kube, listener, namespace } = cluster);
});

const preview = (
  only: string,
  reconcileConfig = ReconcileConfig.parse(FAST_RECONCILE),
  more: Partial<PreviewOptions> = {},
) =>
  previewListener(
    {
      kube,
      client: world.client,
      listener,
      namespaces: [namespace],
      allowedNamespaces: undefined,
      renderConfig: RenderConfig.parse({}),
      reconcileConfig,
      ...more,
    },
    only,
  );

/** The labelled objects of the namespace, by kind and name: what a verdict wrote. */
const written = async (): Promise<string[]> =>
  (
    await Promise.all(
      (['Deployment', 'Service', 'Secret', 'ConfigMap', 'Ingress'] as const).map((kind) =>
        kube.list(kind, { namespace }),
      ),
    )
  )
    .flat()
    .filter((o) => o.metadata.labels[LABEL_DEPLOYMENT_ID] !== undefined)
    .map((o) => `${o.kind}/${o.metadata.name}`)
    .sort();

/**
 * A deployment made in the control plane and handed to the reconciler as desired; `source` adds to
 * its source_config (a custom URL), `top` to the deployment (its secret references).
 */
const present = (
  desired: ReturnType<typeof soloReconciler>['desired'],
  name: string,
  spec: Record<string, unknown> = {},
  more: { source?: Record<string, unknown>; top?: Record<string, unknown> } = {},
): Promise<Deployment> =>
  desire(
    world.client,
    desired,
    app(world, name, namespace, {
      source_config: {
        listener_id: listener.id,
        listener_config: { k8s_namespace: namespace },
        resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, ...spec },
        ...more.source,
      },
      ...more.top,
    }),
  );

describe('diff and run agree', () => {
  it('on an object of another deployment of this listener under a generated name: both refuse it, in the same words', async () => {
    const { reconciler, desired } = soloReconciler({ kube, listener, logger });
    // `owner` with a database renders the Service `owner-db`; an application named `owner-db`
    // renders a Service of that name too.
    const owner = await present(desired, 'owner', { db_storage_gi: 1 });
    expect((await reconciler.reconcile(owner.id)).result).not.toBe('terminal');
    const collider = await present(desired, 'owner-db');

    const previewed = (await preview(collider.id)).deployments[0];
    const outcome = await reconciler.reconcile(collider.id);
    expect(outcome.result).toBe('terminal');
    const refusal = outcome.result === 'terminal' ? outcome.error.message : '';
    expect(refusal).toContain(`Service/${namespace}/owner-db belongs to another deployment of this listener`);
    expect(previewed).toMatchObject({ state: 'failed' });
    expect(refusal).toContain(previewed?.state === 'failed' ? previewed.message : '(no refusal previewed)');
  });

  it.each([
    [true, "its database volume and the volume's credentials kept"],
    [false, 'its database volume and credentials removed too'],
  ])(
    'on a deletion: diff shows exactly what run removes, never an object another deployment took (keepDatabaseVolumes %s: %s)',
    async (keepDatabaseVolumes) => {
      const config = ReconcileConfig.parse({ ...FAST_RECONCILE, prune: { keepDatabaseVolumes } });
      const { reconciler, desired } = soloReconciler({ kube, listener, logger, config });
      const name = keepDatabaseVolumes ? 'leaving' : 'leaving-all';
      const leaving = await present(desired, name, { db_storage_gi: 1 });
      expect((await reconciler.reconcile(leaving.id)).result).not.toBe('terminal');
      // One recorded object has since become another deployment's (its id label is another's).
      const serviceRef = { apiVersion: 'v1', kind: 'Service', namespace, name };
      await kube.mergePatch(serviceRef, { metadata: { labels: { [LABEL_DEPLOYMENT_ID]: 'someone-else' } } });
      // The StatefulSet controller's claim, which only an unkept deletion removes.
      await eventually(
        'the database claim made',
        async () =>
          (await kube.list('PersistentVolumeClaim', { namespace })).some(
            (claim) => claim.metadata.name === `data-${name}-db-0`,
          ) || undefined,
        60_000,
      );
      await world.client.deleteDeployment(leaving.id);

      const previewed = (await preview(leaving.id, config)).deployments[0];
      const previewedPrunes =
        previewed && 'changes' in previewed
          ? previewed.changes.filter((c) => c.action === 'prune').map((c) => `${c.ref.kind}/${c.ref.name}`)
          : [];
      expect(previewedPrunes.length).toBeGreaterThan(0);

      const labelled = async () =>
        (
          await Promise.all(
            (
              [
                'Deployment',
                'StatefulSet',
                'Service',
                'Secret',
                'ConfigMap',
                'NetworkPolicy',
                'PersistentVolumeClaim',
              ] as const
            ).map((kind) => kube.list(kind, { namespace })),
          )
        )
          .flat()
          // Deleting counts as removed: a claim in use waits for its pod.
          .filter((o) => o.metadata.deletionTimestamp === undefined)
          .map((o) => `${o.kind}/${o.metadata.name}`);
      const before = new Set(await labelled());
      desired.set(leaving.id, { kind: 'gone' });
      expect((await reconciler.reconcile(leaving.id)).result).toBe('done');
      const after = new Set(await labelled());
      const removed = [...before].filter((name) => !after.has(name));
      expect(previewedPrunes.sort()).toEqual(removed.sort());
      expect(after.has(`Service/${name}`)).toBe(true);
      for (const volume of [`Secret/${name}-db-credentials`, `PersistentVolumeClaim/data-${name}-db-0`])
        expect(after.has(volume), volume).toBe(keepDatabaseVolumes);
      expect(removed).toContain(`StatefulSet/${name}-db`);
    },
  );

  it('on a suspended deployment: run writes nothing, and diff shows it suspended, not as changes', async () => {
    const held: ActiveSuspension = {
      scope: 'deployment',
      reason: 'incident 42',
      by: 'ops',
      at: '2026-11-27T00:00:00Z',
    };
    const suspension = (id: string) => (id === paused.id ? held : undefined);
    const { reconciler, desired } = soloReconciler({ kube, listener, logger, suspension });
    const paused = await present(desired, 'paused');
    const before = await written();

    const previewed = (await preview(paused.id, undefined, { suspension })).deployments[0];
    expect(await reconciler.reconcile(paused.id)).toEqual({ result: 'done', detail: 'suspended' });
    expect(await written()).toEqual(before);
    expect(previewed).toMatchObject({
      state: 'suspended',
      suspension: expect.stringContaining('incident 42'),
    });
  });

  it('on an unreadable revision: the poller holds the deployment invalid, and diff shows it invalid, with the same words', async () => {
    const { reconciler, desired, reporter, metrics } = soloReconciler({ kube, listener, logger });
    const unreadable = await world.client.createDeployment(
      app(world, 'unreadable', namespace, {
        source_config: {
          listener_id: listener.id,
          listener_config: { k8s_namespace: namespace },
          resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32 },
        },
      }),
    );
    // The control plane serves a revision of it the agent cannot read (a newer schema, a bad value).
    const issue = { path: 'status', message: 'Invalid option: expected one of "QUEUED"|"DEPLOYED"' };
    const client = {
      listAllDeployments: world.client.listAllDeployments.bind(world.client),
      listAllRevisions: async (...args: Parameters<typeof world.client.listAllRevisions>) => {
        const listing = await world.client.listAllRevisions(...args);
        if (args[0] !== unreadable.id) return listing;
        const error = new SchemaValidationError('revision', '00000000-0000-4000-8000-0000000000aa', [issue]);
        return { ...listing, invalid: [{ id: '00000000-0000-4000-8000-0000000000aa', error }] };
      },
    };
    const poller = new Poller({
      client: client as ConstructorParameters<typeof Poller>[0]['client'],
      listenerId: listener.id,
      desired,
      knownIds: () => [],
      enqueue: () => undefined,
      reporter,
      metrics,
      logger,
      config: ReconcileConfig.parse(FAST_RECONCILE),
    });
    expect(await poller.pollOnce()).toBe(true);
    const held = desired.get(unreadable.id);
    expect(held).toMatchObject({ kind: 'invalid' });
    const message = held?.kind === 'invalid' ? held.message : '';
    expect(message).toContain(issue.message);

    const previewed = (await preview(unreadable.id, undefined, { client })).deployments[0];
    expect(previewed).toMatchObject({ state: 'invalid', problems: [{ message }] });
    // And run, given what the poller holds, fails it with those words and writes nothing.
    const before = await written();
    const outcome = await reconciler.reconcile(unreadable.id);
    expect(outcome.result).toBe('terminal');
    expect(outcome.result === 'terminal' ? outcome.error.message : '').toBe(message);
    expect(await written()).toEqual(before);
  });

  it('on a reference the rules refuse: run writes nothing and fails it, and diff says it would fail, with the same words', async () => {
    const { reconciler, desired } = soloReconciler({ kube, listener, logger });
    const naming = await present(
      desired,
      'naming-absent',
      {},
      {
        top: { secret_references: [{ name: 'TOKEN', secret_name: 'not-made-yet', secret_key: 'token' }] },
      },
    );
    const before = await written();
    const previewed = (await preview(naming.id)).deployments[0];
    const outcome = await reconciler.reconcile(naming.id);
    const error =
      outcome.result === 'retry' || outcome.result === 'terminal' ? (outcome.error as Error) : undefined;
    expect(error?.message).toContain('not-made-yet');
    expect(await written()).toEqual(before);
    expect(previewed).toMatchObject({ state: 'failed', message: error?.message });
  });

  it('on a host another route serves: run refuses it, and diff says it would fail, with the same words', async () => {
    const renderConfig = RenderConfig.parse({
      ingress: { className: 'nginx', allowedHostSuffixes: ['agree.example.test'] },
    });
    const { reconciler, desired } = soloReconciler({ kube, listener, logger, renderConfig });
    const routed = (name: string) =>
      present(desired, name, {}, { source: { custom_url: 'https://one.agree.example.test/' } });
    const first = await routed('host-first');
    expect((await reconciler.reconcile(first.id)).result).not.toBe('terminal');
    const second = await routed('host-second');
    const previewed = (await preview(second.id, undefined, { renderConfig })).deployments[0];
    const outcome = await reconciler.reconcile(second.id);
    const error = outcome.result === 'retry' ? (outcome.error as { reason?: string; message?: string }) : {};
    expect(error.reason).toBe('HostTaken');
    expect(previewed).toMatchObject({ state: 'failed', message: error.message });
  });

  it("on an agent change held at its rate: run writes nothing yet, and diff marks the change as the agent's", async () => {
    // The agent's key on both sides, as `diff` reads it from the cluster: digests compared.
    const digestKey = new Uint8Array(32).fill(7);
    const { reconciler, desired } = soloReconciler({ kube, listener, logger, digestKey });
    const steady = await present(desired, 'agent-change');
    expect((await reconciler.reconcile(steady.id)).result).not.toBe('terminal');
    // The agent's new render of the same revision: another grace period in every pod template.
    const renderConfig = RenderConfig.parse({ app: { terminationGracePeriodSeconds: 45 } });
    const gate = new AgentChangeGate({ rate: 1 });
    expect(gate.ask('someone-else').admitted).toBe(true);
    // A new agent: it starts from the inventories in the cluster.
    const next = soloReconciler({ kube, listener, logger, renderConfig, agentChanges: gate, digestKey });
    await next.inventories.load([namespace]);
    next.desired.set(steady.id, desired.get(steady.id) ?? { kind: 'gone' });
    const before = await kube.get({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace,
      name: 'agent-change',
    });

    const previewed = (await preview(steady.id, undefined, { renderConfig, digestKey })).deployments[0];
    const outcome = await next.reconciler.reconcile(steady.id);
    // Held: looked at again when its turn comes, not at a rollout's recheck.
    expect(outcome).toMatchObject({ result: 'requeue' });
    expect(outcome.result === 'requeue' && outcome.background).not.toBe(true);
    const after = await kube.get({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace,
      name: 'agent-change',
    });
    expect(after?.metadata.generation).toBe(before?.metadata.generation);
    expect(previewed).toMatchObject({ state: 'present', agentChange: true });
    const changed =
      previewed?.state === 'present' ? previewed.changes.filter((c) => c.action === 'configure') : [];
    expect(changed.map((c) => c.ref.kind)).toContain('Deployment');
  });
});
