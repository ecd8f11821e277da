// A namespace added to the listener while the agent runs is watched and served without a restart:
// a deployment there converges, an object deleted there by hand is restored at once (by the watch,
// not the resync), and a deployment failed while its namespace was off the listener is tried again
// once it is back.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Agent } from '../../../src/manager/agent.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { AGENT_VERSION } from '../../../src/version.ts';
import { createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

let world: World;
let agent: Agent;
const added = uniqueNamespace('added');

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  await createNamespace(world.kube, added);
  // The resync (60 s in the harness) is far beyond every wait below: only the watch can repair.
  agent = await startAgent(world);
  // Leading, the agent records its version on the listener with a read and a whole PUT: a change
  // of the listener's namespaces made between the two is put back. In a full suite its start came
  // late enough to overlap the test's change (the namespace was never served): the change waits.
  await eventually(
    'the agent version recorded on the listener',
    async () =>
      (await world.client.getListener(world.listenerId)).version === AGENT_VERSION ? true : undefined,
    30_000,
  );
});

afterAll(async () => {
  await agent?.stop();
  await world?.kube.core.deleteNamespace({ name: added }).catch(() => undefined);
  await world?.close();
});

async function setListenerNamespaces(namespaces: readonly string[]): Promise<void> {
  const listener = await world.client.getListener(world.listenerId);
  await world.client.putListener(world.listenerId, {
    compute_type: listener.compute_type,
    compute_id: listener.compute_id,
    compute_config: { k8s_namespaces: [...namespaces] },
    version: listener.version ?? null,
  });
}

describe('a namespace added to the listener while the agent runs', () => {
  it('is watched and served without a restart', async () => {
    expect(agent.namespaces).toEqual(world.namespaces);
    await setListenerNamespaces([...world.namespaces, added]);

    const late = await world.client.createDeployment(app(world, 'late', added));
    await waitForRevision(world, late, 'DEPLOYED');
    expect(agent.namespaces).toEqual([...world.namespaces, added]);

    // A hand deletion there is noticed by the new namespace's watch and repaired at once.
    const selector = `${LABEL_DEPLOYMENT_ID}=${late.id}`;
    const services = await world.kube.core.listNamespacedService({
      namespace: added,
      labelSelector: selector,
    });
    const service = services.items[0];
    const name = service?.metadata?.name ?? '';
    expect(name).not.toBe('');
    await world.kube.core.deleteNamespacedService({ name, namespace: added });
    const deletedAt = Date.now();
    const restored = await eventually(
      'the Service restored',
      async () => {
        const again = await world.kube.core
          .readNamespacedService({ name, namespace: added })
          .catch(() => undefined);
        return again && again.metadata?.uid !== service?.metadata?.uid ? again : undefined;
      },
      20_000,
      100,
    );
    expect(restored.metadata?.labels?.[LABEL_DEPLOYMENT_ID]).toBe(late.id);
    expect(Date.now() - deletedAt).toBeLessThan(10_000);

    // Taken off, the deployment fails; put back, its failed revision is tried again and deploys.
    await setListenerNamespaces(world.namespaces);
    await waitForRevision(world, late, 'DEPLOY_FAILED');
    await setListenerNamespaces([...world.namespaces, added]);
    await waitForRevision(world, late, 'DEPLOYED');
  });
});
