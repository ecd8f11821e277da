// A Pruner and an InventoryStore over the in-memory cluster, for unit tests of the steps that
// delete what a deployment recorded: objects of this listener's deployment put in the cluster,
// and their inventory recorded as a full reconcile would have left it.
import { pino } from 'pino';
import type { LiveKubeObject } from '../../src/kube/index.ts';
import { LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../../src/objects/ownership.ts';
import { entryOf, type Inventory } from '../../src/reconcile/steps/inventory.ts';
import { InventoryStore } from '../../src/reconcile/steps/inventoryStore.ts';
import { Pruner } from '../../src/reconcile/steps/pruner.ts';
import { createMetrics } from '../../src/report/metrics.ts';
import { MemoryCluster } from './memoryCluster.ts';
import { listener } from './renderFixtures.ts';

export const PRUNED_DEPLOYMENT = 'd1';

export function memoryPruner(namespaces: readonly string[] = ['apps', 'apps-staging']) {
  const logger = pino({ level: 'silent' });
  const cluster = new MemoryCluster(namespaces);
  const inventories = new InventoryStore(cluster, listener.id);
  const pruner = new Pruner({
    kube: cluster,
    metrics: createMetrics({ defaultMetrics: false }),
    listener: () => listener,
  });
  /** An object of the deployment (or of `deploymentId`), put in the cluster. */
  const owned = (
    kind: string,
    name: string,
    namespace = 'apps',
    more: {
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      deploymentId?: string;
    } = {},
  ): Promise<LiveKubeObject> =>
    cluster.apply(
      {
        apiVersion: 'v1',
        kind,
        metadata: {
          name,
          namespace,
          labels: {
            [LABEL_LISTENER_ID]: listener.id,
            [LABEL_DEPLOYMENT_ID]: more.deploymentId ?? PRUNED_DEPLOYMENT,
            ...more.labels,
          },
          annotations: { ...more.annotations },
        },
      },
      { force: true },
    );
  /** The inventory of these objects, recorded in their namespace. */
  const record = async (namespace: string, objects: readonly LiveKubeObject[], specHash = 'spec-1') => {
    const inventory: Inventory = {
      deploymentId: PRUNED_DEPLOYMENT,
      entries: objects.map(entryOf),
      specHash,
      revisionId: 'r1',
    };
    await inventories.write(namespace, inventory);
    return inventory;
  };
  return { logger, cluster, inventories, pruner, owned, record };
}
