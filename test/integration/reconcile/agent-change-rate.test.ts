// Upgrading the agent never restarts every workload at once (docs/design.md, "Agent changes roll
// out at a bounded rate"), against the emulator and the real API server: N deployments converged,
// the agent restarted with a render
// configuration that changes every pod template and a small agent change rate. No window sees more
// rollouts start than the rate, `status` and the metrics say how many wait, each applied change is
// told by one Event, a new revision of a held deployment is applied at once, and all converge.
import * as k8s from '@kubernetes/client-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { collectStatusRows } from '../../../src/cli/statusObserver.ts';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { KubeClient } from '../../../src/kube/kubeClient.ts';
import { loadDigestKey } from '../../../src/manager/digestKey.ts';
import { LABEL_COMPONENT, LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../../../src/objects/ownership.ts';
import { RenderConfig, type RenderConfigInput } from '../../../src/render/index.ts';
import { AGENT_CHANGE_WAITING, agentChangesWaiting } from '../../../src/report/deploymentStatusRow.ts';
import { type AgentMetrics, createMetrics } from '../../../src/report/metrics.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

const N = 7;
const RATE = 2;
const WINDOW_MS = 8_000;
/** How late the poll below may see a change (its period, a list, a loaded machine). */
const TOLERANCE_MS = 1_000;
const RECONCILE = { agentChangeRate: RATE, agentChangeWindowMs: WINDOW_MS };
/** Changes every pod template the agent renders. */
const UPGRADED: RenderConfigInput = { app: { terminationGracePeriodSeconds: 31 } };
/** The main workloads' grace before and after: they run the jobs, so their run grace (180 s) is on top. */
const GRACE = 210;
const UPGRADED_GRACE = 211;

let world: World;
let ns: string;
const agents: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  ns = world.namespaces[0] ?? '';
});
afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await world?.close();
});

interface MainWorkload {
  readonly grace: number | undefined;
  readonly image: string | undefined;
}

/** The main Deployment of each deployment of the listener, by deployment id. */
async function mainWorkloads(): Promise<Map<string, MainWorkload>> {
  const list = await world.kube.apps.listNamespacedDeployment({
    namespace: ns,
    labelSelector: `${LABEL_LISTENER_ID}=${world.listenerId},${LABEL_COMPONENT}=main`,
  });
  const found = new Map<string, MainWorkload>();
  for (const item of list.items) {
    const id = item.metadata?.labels?.[LABEL_DEPLOYMENT_ID];
    const spec = item.spec?.template.spec;
    if (id) found.set(id, { grace: spec?.terminationGracePeriodSeconds, image: spec?.containers[0]?.image });
  }
  return found;
}

/** Records when each main workload's pod template first shows the new render (its rollout starts). */
function watchTemplates(): { changedAt: Map<string, number>; stop: () => Promise<void> } {
  const changedAt = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const seen = Date.now();
      for (const [id, workload] of await mainWorkloads())
        if (workload.grace === UPGRADED_GRACE && !changedAt.has(id)) changedAt.set(id, seen);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();
  return {
    changedAt,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

const metricValue = async (metrics: AgentMetrics, name: string) =>
  (await metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value;

describe('an agent upgrade that changes every pod template', () => {
  // One upgrade, its steps in order, each `it` one thing the agent must do; the first two run
  // within the first window (most deployments still wait).
  const deployments: Deployment[] = [];
  let watch: ReturnType<typeof watchTemplates> | undefined;
  let metrics: AgentMetrics;
  let held: Deployment;
  let revised: Deployment;

  beforeAll(async () => {
    // Converged under the old render.
    const before = await startAgent(world, { allowedNamespaces: world.namespaces, reconcile: RECONCILE });
    agents.push(before);
    for (let i = 0; i < N; i++)
      deployments.push(await world.client.createDeployment(app(world, `up-${i}`, ns)));
    for (const d of deployments) await waitForRevision(world, d, 'DEPLOYED', 90_000);
    expect([...(await mainWorkloads()).values()].map((w) => w.grace)).toEqual(Array(N).fill(GRACE));
    await before.stop();

    // The new agent: every pod template renders differently.
    const changes = watchTemplates();
    watch = changes;
    metrics = createMetrics({ defaultMetrics: false });
    const after = await startAgent(world, {
      allowedNamespaces: world.namespaces,
      render: UPGRADED,
      reconcile: RECONCILE,
      metrics,
    });
    agents.push(after);
    await eventually('the first agent changes', async () =>
      changes.changedAt.size >= RATE ? true : undefined,
    );
  });
  afterAll(async () => {
    // Stopped already when the run converged; here for a run that did not.
    await watch?.stop().catch(() => undefined);
  });

  it('applies a new revision of a deployment still held at once, not in its turn', async () => {
    const changedAt = watch?.changedAt ?? new Map<string, number>();
    const waiting = deployments.find((d) => !changedAt.has(d.id));
    if (!waiting) throw new Error('every deployment changed at once: nothing was held');
    held = waiting;
    const patchedAt = Date.now();
    revised = await world.client.patchDeployment(held.id, {
      source_revision_config: { image_uri: 'nginx:1.28' },
    });
    expect(revised.latest_revision_id).not.toBe(held.latest_revision_id);
    const revisedAt = await eventually(
      'the new revision applied',
      async () => ((await mainWorkloads()).get(held.id)?.image === 'nginx:1.28' ? Date.now() : undefined),
      WINDOW_MS,
      100,
    );
    expect(revisedAt - patchedAt).toBeLessThan(WINDOW_MS - TOLERANCE_MS);
  });

  it('says who waits: the gauge, and `status` (its rows and their count)', async () => {
    const stillHeld = N - RATE - 1;
    expect(watch?.changedAt.size).toBeLessThan(N);
    expect(await metricValue(metrics, 'k8s_listener_agent_changes_waiting')).toBeGreaterThan(0);
    const statusKube = await KubeClient.fromKubeconfig(world.kubeconfigPath, {
      logger: pino({ level: 'silent' }),
    });
    try {
      const rows = await collectStatusRows({
        controlPlane: world.client,
        kube: statusKube,
        listenerId: world.listenerId,
        allowedNamespaces: world.namespaces,
        agentNamespace: 'default',
        digestKey: await loadDigestKey(statusKube, 'default', { create: false }),
        renderConfig: RenderConfig.parse(UPGRADED),
      });
      const waiting = rows.filter((row) => row.agentChangeWaiting);
      // Read within the first window: those not yet changed wait (the first batch and the revised one do not).
      expect(agentChangesWaiting(rows)).toBeGreaterThanOrEqual(stillHeld - RATE);
      expect(agentChangesWaiting(rows)).toBeLessThanOrEqual(stillHeld);
      for (const row of waiting) {
        expect(row.reason).toBe('AgentChangeWaiting');
        expect(row.message).toContain(AGENT_CHANGE_WAITING);
      }
      expect(waiting.map((row) => row.id)).not.toContain(held.id);
    } finally {
      await statusKube.close();
    }
  });

  it('converges, no window seeing more than agentChangeRate agent changes start', async () => {
    const changes = watch;
    if (!changes) throw new Error('no watch of the pod templates');
    // All converge: every pod template at the new render, every revision DEPLOYED. Waited for on
    // what the watch below recorded, not on a listing of its own: that listing could see the last
    // two changes before the watch's next look, which then never recorded them (4 starts of 6).
    await eventually(
      'every deployment at the new render',
      async () => (changes.changedAt.size === N ? true : undefined),
      90_000,
    );
    await changes.stop();
    for (const d of [...deployments.filter((d) => d.id !== held.id), revised])
      await waitForRevision(world, d, 'DEPLOYED', 60_000);

    // No window saw more than RATE agent changes start; they took the windows they needed.
    const starts = [...changes.changedAt.entries()]
      .filter(([id]) => id !== held.id)
      .map(([, at]) => at)
      .sort((a, b) => a - b);
    expect(starts).toHaveLength(N - 1);
    for (let i = 0; i + RATE < starts.length; i++)
      expect((starts[i + RATE] ?? 0) - (starts[i] ?? 0)).toBeGreaterThanOrEqual(WINDOW_MS - TOLERANCE_MS);
    const windows = Math.ceil((N - 1) / RATE) - 1;
    expect((starts.at(-1) ?? 0) - (starts[0] ?? 0)).toBeGreaterThanOrEqual(
      windows * WINDOW_MS - TOLERANCE_MS,
    );
  });

  it('tells each applied agent change by one Event, none for the revised deployment, and counts them', async () => {
    const events = await world.kube.config
      .makeApiClient(k8s.EventsV1Api)
      .listNamespacedEvent({ namespace: ns });
    const told = events.items
      .filter((e) => e.reason === 'AgentChangeApplied')
      .map((e) => e.regarding?.name ?? '')
      .sort();
    const agentChanged = deployments
      .filter((d) => d.id !== held.id)
      .map((d) => d.name)
      .sort();
    expect(told).toEqual(agentChanged);
    expect(await metricValue(metrics, 'k8s_listener_agent_changes_applied_total')).toBe(N - 1);
    expect(await metricValue(metrics, 'k8s_listener_agent_changes_waiting')).toBe(0);
  });
});
