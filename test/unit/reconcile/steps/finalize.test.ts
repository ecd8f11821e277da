// Finalize over the in-memory cluster: a deleted deployment's recorded objects go in the reverse
// of their order, only while they are its own; its database volumes go unless kept; then its
// inventories.
import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_GENERATED_KEYS,
  DATABASE_COMPONENT,
  LABEL_COMPONENT,
} from '../../../../src/objects/ownership.ts';
import { finalizeDeployment } from '../../../../src/reconcile/steps/finalize.ts';
import { memoryPruner, PRUNED_DEPLOYMENT } from '../../../support/memoryPruner.ts';

const credentials = {
  labels: { [LABEL_COMPONENT]: DATABASE_COMPONENT },
  annotations: { [ANNOTATION_GENERATED_KEYS]: 'password' },
};

async function finalized(keepVolumes: boolean) {
  const world = memoryPruner();
  const { owned, record } = world;
  await record('apps', [await owned('Service', 'web'), await owned('ConfigMap', 'web-config')]);
  await record('apps-staging', [await owned('Service', 'web', 'apps-staging')]);
  await owned('PersistentVolumeClaim', 'data-web-db-0', 'apps', {
    labels: { [LABEL_COMPONENT]: DATABASE_COMPONENT },
  });
  await owned('Secret', 'web-db', 'apps', credentials);
  world.cluster.calls.length = 0;
  const namespaces = await finalizeDeployment(
    { pruner: world.pruner, inventories: world.inventories, keepVolumes },
    PRUNED_DEPLOYMENT,
    world.logger,
    undefined,
  );
  return { ...world, namespaces };
}

describe('finalizeDeployment', () => {
  it('returns the namespaces the deployment was in', async () => {
    const { namespaces } = await finalized(true);
    expect(namespaces).toEqual(['apps', 'apps-staging']);
  });

  it('deletes every recorded object', async () => {
    const { cluster } = await finalized(true);
    expect([...cluster.names('Service'), ...cluster.names('ConfigMap')]).toEqual([]);
  });

  it('deletes them in the reverse of the order they were applied', async () => {
    const { cluster } = await finalized(true);
    const deleted = cluster.calls
      .filter((c) => c.verb === 'delete' && c.namespace === 'apps')
      .map((c) => c.kind);
    // The two objects, newest first, then the inventory.
    expect(deleted).toEqual(['ConfigMap', 'Service', 'ConfigMap']);
  });

  it('keeps the database volume and its credentials when volumes are kept', async () => {
    const { cluster } = await finalized(true);
    expect([...cluster.names('PersistentVolumeClaim'), ...cluster.names('Secret')]).toEqual([
      'PersistentVolumeClaim/apps/data-web-db-0',
      'Secret/apps/web-db',
    ]);
  });

  it('deletes the database volume and its credentials when volumes are not kept', async () => {
    const { cluster } = await finalized(false);
    expect([...cluster.names('PersistentVolumeClaim'), ...cluster.names('Secret')]).toEqual([]);
  });

  it('removes its inventories', async () => {
    const { inventories } = await finalized(true);
    expect(inventories.get(PRUNED_DEPLOYMENT)).toEqual([]);
  });

  it("leaves a recorded name that another deployment's object holds now", async () => {
    const world = memoryPruner();
    await world.record('apps', [await world.owned('Service', 'web')]);
    await world.owned('Service', 'web', 'apps', { deploymentId: 'another' });
    await finalizeDeployment(
      { pruner: world.pruner, inventories: world.inventories, keepVolumes: true },
      PRUNED_DEPLOYMENT,
      world.logger,
      undefined,
    );
    expect(world.cluster.names('Service')).toEqual(['Service/apps/web']);
  });
});
