// The reconciler's decision on a change that comes from the agent itself, over an in-memory
// cluster: converged deployments restarted under a render configuration that changes every pod
// template are applied at the agent change rate, the others reported as they are and held with
// nothing written; a new revision, a patched deployment and a hand edit are never held.
// test/integration/reconcile/agent-change-rate.test.ts runs it against the real API server.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Deployment, Revision, StatusReport } from '../../../src/controlplane/schemas/index.ts';
import { fieldAt } from '../../../src/objects/fields.ts';
import { DesiredState } from '../../../src/reconcile/loop/desiredState.ts';
import type { Target } from '../../../src/reconcile/loop/target.ts';
import { AgentChangeGate } from '../../../src/reconcile/policy/agentChangeGate.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import { Reconciler } from '../../../src/reconcile/reconciler.ts';
import { InventoryStore } from '../../../src/reconcile/steps/inventoryStore.ts';
import { RenderConfig, type RenderConfigInput } from '../../../src/render/index.ts';
import { ControlPlaneReporter } from '../../../src/report/controlPlaneReporter.ts';
import { AGENT_CHANGE_WAITING } from '../../../src/report/deploymentStatusRow.ts';
import { type AgentMetrics, createMetrics } from '../../../src/report/metrics.ts';
import { docBlock } from '../../support/docBlocks.ts';
import { type MemoryCall, MemoryCluster } from '../../support/memoryCluster.ts';
import { listener, minimalDeployment } from '../../support/renderFixtures.ts';

const logger = pino({ level: 'silent' });
const NAMESPACE = 'apps';
const WINDOW = 60_000;
/** Changes every pod template the agent renders. */
const UPGRADED: RenderConfigInput = { app: { terminationGracePeriodSeconds: 31 } };
/** The main workload's grace before and after: it runs the jobs, so its run grace (180 s) is on top. */
const GRACE = 210;
const UPGRADED_GRACE = 211;

const revision = (id: string, image = 'nginx:1.27'): Revision => ({
  id,
  created_at: '2026-11-01T09:04:00Z',
  updated_at: '2026-11-01T09:04:00Z',
  status: 'DEPLOYING',
  source: 'external_container',
  source_revision_config: { image_uri: image },
});

const deployments: Deployment[] = ['a', 'b', 'c'].map((name, i) => ({
  ...minimalDeployment,
  id: `9a1b2c3d-4e5f-4a6b-8c7d-00000000010${i}`,
  name,
  latest_revision_id: `5a1b2c3d-4e5f-4a6b-8c7d-00000000010${i}`,
}));
const [a, b, c] = deployments as [Deployment, Deployment, Deployment];

function target(deployment: Deployment): Target {
  return { revision: revision(deployment.latest_revision_id ?? ''), settled: undefined };
}

/** One cluster; an agent (a reconciler of a leader session) started on it with a configuration. */
function cluster() {
  const kube = new MemoryCluster([NAMESPACE]);
  const desired = new DesiredState();
  for (const d of deployments)
    desired.set(d.id, { kind: 'present', deployment: d, target: target(d), fingerprint: d.id });
  const clock = { now: 1_000_000 };

  async function agent(render: RenderConfigInput, rate?: number) {
    const sent: StatusReport[][] = [];
    const events: { name: string; reason: string; note: string }[] = [];
    const metrics = createMetrics({ defaultMetrics: false });
    const reporter = new ControlPlaneReporter({
      sink: { postStatusReports: async (_id, batch) => void sent.push(batch.reports) },
      listenerId: listener.id,
      logger,
      metrics,
    });
    // A restart: the inventories read from the cluster.
    const inventories = new InventoryStore(kube, listener.id);
    await inventories.load([NAMESPACE]);
    const reconciler = new Reconciler({
      kube,
      desired,
      inventories,
      reporter,
      events: {
        record: async (subject, details) =>
          void events.push({
            name: 'metadata' in subject ? subject.metadata.name : subject.name,
            reason: details.reason,
            note: details.note,
          }),
      },
      metrics,
      logger,
      renderConfig: RenderConfig.parse(render),
      config: ReconcileConfig.parse({}),
      listener: () => listener,
      allowedNamespaces: undefined,
      ...(rate === undefined
        ? {}
        : { agentChanges: new AgentChangeGate({ rate, windowMs: WINDOW, now: () => clock.now }) }),
    });
    const reported = async (id: string) => {
      await reporter.flush();
      return sent.flat().filter((r) => r.deployment_id === id);
    };
    return { reconciler, events, metrics, reported };
  }

  /** Every Deployment as its controller would leave it: all replicas updated and available. */
  async function rolledOut() {
    for (const live of await kube.list('Deployment', { namespace: NAMESPACE })) {
      const replicas = Number(fieldAt(live, 'spec', 'replicas') ?? 1);
      await kube.mergePatch(
        { apiVersion: 'apps/v1', kind: 'Deployment', namespace: NAMESPACE, name: live.metadata.name },
        {
          status: {
            replicas,
            updatedReplicas: replicas,
            readyReplicas: replicas,
            availableReplicas: replicas,
            conditions: [
              { type: 'Available', status: 'True' },
              { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
            ],
          },
        },
      );
    }
  }

  const grace = async (name: string) =>
    fieldAt(
      await kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: NAMESPACE, name }),
      'spec',
      'template',
      'spec',
      'terminationGracePeriodSeconds',
    );

  return { kube, desired, clock, agent, rolledOut, grace };
}

const writesOf = (calls: readonly MemoryCall[]) =>
  calls.filter((call) => call.verb !== 'get' && call.verb !== 'list' && !call.dryRun);

const gauge = async (metrics: AgentMetrics, name: string) =>
  (await metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value;

async function converged() {
  const world = cluster();
  const first = await world.agent({});
  for (const d of deployments) await first.reconciler.reconcile(d.id);
  await world.rolledOut();
  for (const d of deployments) await first.reconciler.reconcile(d.id);
  for (const d of deployments)
    expect((await first.reported(d.id)).at(-1), d.name).toMatchObject({ revision_status: 'DEPLOYED' });
  expect(await world.grace('a')).toBe(GRACE);
  return world;
}

describe('a change from the agent itself, at the agent change rate', () => {
  it('applies `rate` deployments a window, holds the rest as they are, in the order first held', async () => {
    const world = await converged();
    const { kube, clock } = world;
    const upgraded = await world.agent(UPGRADED, 1);

    // The first is applied at once: its pod template changes, once told by an Event, counted.
    expect((await upgraded.reconciler.reconcile(a.id)).result).toMatch(/^(done|requeue)$/);
    expect(await world.grace('a')).toBe(UPGRADED_GRACE);
    expect(upgraded.events.filter((e) => e.reason === 'AgentChangeApplied').map((e) => e.name)).toEqual([
      'a',
    ]);
    expect(await gauge(upgraded.metrics, 'k8s_listener_agent_changes_applied_total')).toBe(1);

    // The next two wait: nothing written, still reported DEPLOYED with a note, requeued for their turn.
    const before = kube.calls.length;
    expect(await upgraded.reconciler.reconcile(b.id)).toEqual({ result: 'requeue', afterMs: WINDOW });
    expect(await upgraded.reconciler.reconcile(c.id)).toEqual({ result: 'requeue', afterMs: 2 * WINDOW });
    expect(writesOf(kube.calls.slice(before))).toEqual([]);
    expect(await world.grace('b')).toBe(GRACE);
    const held = (await upgraded.reported(b.id)).at(-1);
    expect(held?.revision_status).toBe('DEPLOYED');
    expect(held?.revision_id).toBe(b.latest_revision_id);
    expect(held?.message).toContain(AGENT_CHANGE_WAITING);
    expect(await gauge(upgraded.metrics, 'k8s_listener_agent_changes_waiting')).toBe(2);

    // A window later: b (held first) goes, c still waits even when it asks first.
    clock.now += WINDOW;
    expect(await upgraded.reconciler.reconcile(c.id)).toMatchObject({ result: 'requeue' });
    expect(await world.grace('c')).toBe(GRACE);
    expect((await upgraded.reconciler.reconcile(b.id)).result).toMatch(/^(done|requeue)$/);
    expect(await world.grace('b')).toBe(UPGRADED_GRACE);
    expect(upgraded.events.find((e) => e.name === 'b')?.note).toMatch(/after waiting 60 s/);
    clock.now += WINDOW;
    expect((await upgraded.reconciler.reconcile(c.id)).result).toMatch(/^(done|requeue)$/);
    expect(await world.grace('c')).toBe(UPGRADED_GRACE);
    expect(await gauge(upgraded.metrics, 'k8s_listener_agent_changes_waiting')).toBe(0);
    expect(await gauge(upgraded.metrics, 'k8s_listener_agent_changes_applied_total')).toBe(3);
    expect(upgraded.events.filter((e) => e.reason === 'AgentChangeApplied')).toHaveLength(3);
  });

  it('a new revision of a held deployment is applied at once, and leaves the line', async () => {
    const world = await converged();
    const upgraded = await world.agent(UPGRADED, 1);
    await upgraded.reconciler.reconcile(a.id);
    expect((await upgraded.reconciler.reconcile(b.id)).result).toBe('requeue');
    expect(await gauge(upgraded.metrics, 'k8s_listener_agent_changes_waiting')).toBe(1);

    const next = revision('5a1b2c3d-4e5f-4a6b-8c7d-0000000002ff', 'nginx:1.28');
    const patched = { ...b, latest_revision_id: next.id };
    world.desired.set(b.id, {
      kind: 'present',
      deployment: patched,
      target: { revision: next, settled: undefined },
      fingerprint: 'new revision',
    });
    expect((await upgraded.reconciler.reconcile(b.id)).result).toMatch(/^(done|requeue)$/);
    expect(await world.grace('b')).toBe(UPGRADED_GRACE);
    const image = fieldAt(
      await world.kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: NAMESPACE, name: 'b' }),
      'spec',
      'template',
      'spec',
      'containers',
    );
    expect(JSON.stringify(image)).toContain('nginx:1.28');
    expect(await gauge(upgraded.metrics, 'k8s_listener_agent_changes_waiting')).toBe(0);
    // Not the agent's change: no AgentChangeApplied for it.
    expect(upgraded.events.filter((e) => e.reason === 'AgentChangeApplied').map((e) => e.name)).toEqual([
      'a',
    ]);
  });

  it('a patched deployment (same revision, new input) is not held', async () => {
    const world = await converged();
    const upgraded = await world.agent(UPGRADED, 1);
    await upgraded.reconciler.reconcile(a.id);
    const patched: Deployment = {
      ...b,
      source_config: {
        ...b.source_config,
        resource_spec: { min_scale: 2, max_scale: 2 },
      },
    };
    world.desired.set(b.id, {
      kind: 'present',
      deployment: patched,
      target: target(b),
      fingerprint: 'patched',
    });
    expect((await upgraded.reconciler.reconcile(b.id)).result).toMatch(/^(done|requeue)$/);
    const live = await world.kube.get({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: NAMESPACE,
      name: 'b',
    });
    expect(fieldAt(live, 'spec', 'replicas')).toBe(2);
    expect(await world.grace('b')).toBe(UPGRADED_GRACE);
  });

  it('a hand edit is repaired at once, however full the window', async () => {
    const world = await converged();
    const upgraded = await world.agent(UPGRADED, 1);
    await upgraded.reconciler.reconcile(a.id);
    expect((await upgraded.reconciler.reconcile(b.id)).result).toBe('requeue');
    // a is at the new render; someone edits its pod template by hand.
    await world.kube.mergePatch(
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: NAMESPACE, name: 'a' },
      { spec: { template: { spec: { terminationGracePeriodSeconds: 5 } } } },
    );
    expect(await world.grace('a')).toBe(5);
    await upgraded.reconciler.reconcile(a.id);
    expect(await world.grace('a')).toBe(UPGRADED_GRACE);
  });

  it('without a gate (rate 0) every agent change is applied at once, each still told', async () => {
    const world = await converged();
    const upgraded = await world.agent(UPGRADED);
    for (const d of deployments) await upgraded.reconciler.reconcile(d.id);
    for (const name of ['a', 'b', 'c']) expect(await world.grace(name)).toBe(UPGRADED_GRACE);
    expect(upgraded.events.filter((e) => e.reason === 'AgentChangeApplied')).toHaveLength(3);
  });

  it('an unchanged render is no change: nothing held, nothing written', async () => {
    const world = await converged();
    const same = await world.agent({}, 1);
    const before = world.kube.calls.length;
    for (const d of deployments) expect((await same.reconciler.reconcile(d.id)).result).toBe('done');
    expect(writesOf(world.kube.calls.slice(before))).toEqual([]);
    expect(same.events).toEqual([]);
  });

  it('docs/operating.md shows the default rate, in a block the configuration accepts', async () => {
    const block = parse(await docBlock('docs/operating.md', 'Agent upgrades', 'yaml')) as {
      reconcile: unknown;
    };
    const documented = ReconcileConfig.parse(block.reconcile);
    expect(documented.agentChangeRate).toBe(ReconcileConfig.parse({}).agentChangeRate);
    expect(documented.agentChangeWindowMs).toBe(WINDOW);
  });
});
