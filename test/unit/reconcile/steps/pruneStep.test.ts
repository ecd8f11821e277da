// The prune step over the in-memory cluster: what left the desired set is deleted (only this
// deployment's), the records in namespaces it moved from removed, the new inventory recorded
// alone, and the volumes of earlier names past the kept ones looked for when there is reason to.
import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../../src/kube/index.ts';
import {
  ANNOTATION_GENERATED_KEYS,
  DATABASE_COMPONENT,
  LABEL_COMPONENT,
  LABEL_INSTANCE,
} from '../../../../src/objects/ownership.ts';
import { ReconcileConfig } from '../../../../src/reconcile/policy/reconcileConfig.ts';
import { entryOf, type Inventory } from '../../../../src/reconcile/steps/inventory.ts';
import { InventoryStore } from '../../../../src/reconcile/steps/inventoryStore.ts';
import {
  type PruneInput,
  type PruneStepOptions,
  pruneStep,
} from '../../../../src/reconcile/steps/pruneStep.ts';
import { memoryPruner, PRUNED_DEPLOYMENT } from '../../../support/memoryPruner.ts';
import { listener } from '../../../support/renderFixtures.ts';

const prune = ReconcileConfig.parse({}).prune;

/** A deployment that recorded Service/web and ConfigMap/old-config in `apps`, and now applies Service/web alone. */
async function world(options: Partial<PruneStepOptions> = {}) {
  const w = memoryPruner();
  const web = await w.owned('Service', 'web');
  const old = await w.owned('ConfigMap', 'old-config');
  const previous = await w.record('apps', [web, old]);
  const next: Inventory = { ...previous, entries: [entryOf(web)], specHash: 'spec-2', revisionId: 'r2' };
  const run = async (input: Partial<PruneInput> = {}) => {
    w.cluster.calls.length = 0;
    await pruneStep(
      {
        pruner: w.pruner,
        inventories: w.inventories,
        prune,
        listener: () => listener,
        allowedNamespaces: undefined,
        ...options,
      },
      { namespace: 'apps', previous: w.inventories.get(PRUNED_DEPLOYMENT), next, objects: [], ...input },
      w.logger,
      undefined,
    );
  };
  const listed = (kind: string) =>
    w.cluster.calls.filter((c) => c.verb === 'list' && c.kind === kind).map((c) => c.namespace);
  return { ...w, next, run, listed };
}

/** A claim of the deployment's database under an earlier name, in the cluster. */
const claimOf = (w: Awaited<ReturnType<typeof world>>, name: string) =>
  w.owned('PersistentVolumeClaim', `data-${name}-db-0`, 'apps', {
    labels: { [LABEL_COMPONENT]: DATABASE_COMPONENT, [LABEL_INSTANCE]: name },
  });

describe('pruneStep', () => {
  it('deletes what left the desired set', async () => {
    const w = await world();
    await w.run();
    expect(w.cluster.names('ConfigMap')).not.toContain('ConfigMap/apps/old-config');
  });

  it('keeps what is still desired', async () => {
    const w = await world();
    await w.run();
    expect(w.cluster.names('Service')).toEqual(['Service/apps/web']);
  });

  it("leaves a stale name that another deployment's object holds now", async () => {
    const w = await world();
    w.cluster.remove({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'old-config' });
    await w.owned('ConfigMap', 'old-config', 'apps', { deploymentId: 'another' });
    await w.run();
    expect(w.cluster.names('ConfigMap')).toContain('ConfigMap/apps/old-config');
  });

  it("keeps a dropped database's credentials while the deployment lives", async () => {
    const w = await world();
    const secret = await w.owned('Secret', 'web-db', 'apps', {
      labels: { [LABEL_COMPONENT]: DATABASE_COMPONENT },
      annotations: { [ANNOTATION_GENERATED_KEYS]: 'password' },
    });
    const recorded = { ...w.next, entries: [...w.next.entries, entryOf(secret)] };
    await w.run({ previous: [{ namespace: 'apps', inventory: recorded }] });
    expect(w.cluster.names('Secret')).toEqual(['Secret/apps/web-db']);
  });

  it('records the new inventory alone', async () => {
    const w = await world();
    await w.run();
    const reloaded = new InventoryStore(w.cluster, listener.id);
    await reloaded.load(['apps']);
    expect(reloaded.get(PRUNED_DEPLOYMENT)[0]?.inventory).toEqual(w.next);
  });

  it('removes the record in a namespace the deployment moved from', async () => {
    const w = await world();
    await w.record('apps-staging', [await w.owned('Service', 'web', 'apps-staging')]);
    await w.run();
    expect(w.cluster.names('ConfigMap').filter((n) => n.startsWith('ConfigMap/apps-staging/'))).toEqual([]);
  });

  it('looks for no earlier volume when nothing was pruned and none is cached', async () => {
    const w = await world();
    await w.run({
      next: { ...w.next, entries: w.inventories.get(PRUNED_DEPLOYMENT)[0]?.inventory.entries ?? [] },
    });
    expect(w.listed('PersistentVolumeClaim')).toEqual([]);
  });

  it("looks for earlier volumes in its namespace and the listener's, once something was pruned", async () => {
    const w = await world();
    await w.run();
    expect(w.listed('PersistentVolumeClaim').sort()).toEqual(['apps', 'apps-staging']);
  });

  it('looks only in the namespaces the agent may use', async () => {
    const w = await world({ allowedNamespaces: ['apps'] });
    await w.run();
    expect(w.listed('PersistentVolumeClaim')).toEqual(['apps']);
  });

  describe('with earlier names in the watch cache, and nothing else to prune', () => {
    /** Claims of earlier names, as the synced watch cache holds them. */
    async function cached(names: readonly string[]) {
      const claims: LiveKubeObject[] = [];
      const w = await world({ cache: { isSynced: () => true, byLabel: () => claims } });
      for (const name of names) claims.push(await claimOf(w, name));
      const unchanged = w.inventories.get(PRUNED_DEPLOYMENT)[0]?.inventory.entries ?? [];
      await w.run({ next: { ...w.next, entries: unchanged } });
      return w;
    }

    it('deletes the oldest past the kept ones', async () => {
      const w = await cached(['first', 'second']);
      expect(w.cluster.names('PersistentVolumeClaim')).toEqual([
        'PersistentVolumeClaim/apps/data-second-db-0',
      ]);
    });

    it('looks for none while no more than the kept ones are cached', async () => {
      const w = await cached(['first']);
      expect(w.listed('PersistentVolumeClaim')).toEqual([]);
    });
  });
});
