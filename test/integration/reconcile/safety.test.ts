// docs/design.md, "Deletion needs a complete listing": a failed, partial or suspiciously empty
// listing deletes nothing, and a sudden mass disappearance is refused; one deployment gone from a
// complete listing is deleted.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { LABEL_LISTENER_ID } from '../../../src/objects/ownership.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { type FaultyControlPlane, startFaultyControlPlane } from '../../support/faultyControlPlane.ts';

let world: World;
let proxy: FaultyControlPlane;
let agent: Agent;
const deployments: Deployment[] = [];

const POLL_CYCLES = 8;
const cycles = (n: number) => new Promise((resolve) => setTimeout(resolve, n * 300));

async function managedDeployments(): Promise<string[]> {
  const names: string[] = [];
  for (const namespace of world.namespaces) {
    const list = await world.kube.apps.listNamespacedDeployment({
      namespace,
      labelSelector: `${LABEL_LISTENER_ID}=${world.listenerId}`,
    });
    names.push(...list.items.map((d) => d.metadata?.name ?? ''));
  }
  return names.sort();
}

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'));
  proxy = await startFaultyControlPlane(world.emulator.url);
  agent = await startAgent(world, { baseUrl: proxy.url });
  for (const name of ['alpha', 'bravo', 'charlie', 'delta']) {
    deployments.push(await world.client.createDeployment(app(world, name, world.namespaces[0] ?? '')));
  }
  for (const deployment of deployments) await waitForRevision(world, deployment, 'DEPLOYED');
});
afterAll(async () => {
  await agent?.stop();
  await proxy?.close();
  await world?.close();
});

describe('polling', () => {
  it('reads revisions only for deployments that changed', async () => {
    const revisionReads = () => proxy.requests.filter((r) => r.endsWith('/revisions')).length;
    // Let the reports of the first rollouts come back as changes, then watch a steady state.
    await cycles(POLL_CYCLES);
    const before = revisionReads();
    const polls = proxy.requests.length;
    await cycles(POLL_CYCLES);
    expect(proxy.requests.length).toBeGreaterThan(polls);
    expect(revisionReads()).toBe(before);
    // A change of one deployment reads the revisions of that one only.
    const alpha = deployments[0];
    if (!alpha) throw new Error('no deployment');
    await world.client.patchDeployment(alpha.id, { source_revision_config: { image_uri: 'nginx:1.28' } });
    await cycles(POLL_CYCLES);
    const read = proxy.requests.filter((r) => r.endsWith('/revisions')).slice(before);
    expect(new Set(read)).toEqual(new Set([`GET /v2/deployments/${alpha.id}/revisions`]));
  });
});

describe('the prune safety rules', () => {
  it.each(['empty-list', 'errors', 'fail-page-2'] as const)(
    'deletes nothing while the control plane answers %s for several cycles',
    async (fault) => {
      expect(await managedDeployments()).toEqual(['alpha', 'bravo', 'charlie', 'delta']);
      // The path each fault must take: the guard refuses an empty listing; a failed one is a failed poll.
      const counter =
        fault === 'empty-list' ? 'k8s_listener_prune_refusals_total' : 'k8s_listener_polls_total';
      const before = await agentMetric(counter, fault === 'empty-list' ? undefined : 'failed');
      proxy.fault = fault;
      await cycles(POLL_CYCLES);
      proxy.fault = 'none';
      expect(await managedDeployments()).toEqual(['alpha', 'bravo', 'charlie', 'delta']);
      expect(await agentMetric(counter, fault === 'empty-list' ? undefined : 'failed')).toBeGreaterThan(
        before,
      );
    },
  );

  it('refuses a sudden mass disappearance from a complete listing', async () => {
    for (const deployment of deployments.slice(1)) proxy.hidden.add(deployment.id);
    await cycles(POLL_CYCLES);
    expect(await managedDeployments()).toEqual(['alpha', 'bravo', 'charlie', 'delta']);
    const refusals = await agentMetric('k8s_listener_prune_refusals_total');
    expect(refusals).toBeGreaterThan(0);
    proxy.hidden.clear();
  });

  it('deletes one deployment gone from a complete listing', async () => {
    const gone = deployments[3];
    if (!gone) throw new Error('no deployment');
    proxy.hidden.add(gone.id);
    await eventually(
      'delta deleted',
      async () => ((await managedDeployments()).includes('delta') ? undefined : true),
      30_000,
    );
    expect(await managedDeployments()).toEqual(['alpha', 'bravo', 'charlie']);
  });
});

async function agentMetric(name: string, result?: string): Promise<number> {
  const metric = await agent.metrics.registry.getSingleMetric(name)?.get();
  const values = metric?.values.filter((v) => result === undefined || v.labels.result === result) ?? [];
  return values.reduce((sum, v) => sum + v.value, 0);
}
