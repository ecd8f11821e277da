// The inventory's two writes around an apply: recorded ahead (the union of what was recorded and
// what is about to be), and committed after the prune (the new set alone, the records elsewhere
// removed). A write into a missing namespace waits.
import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../../../src/kube/index.ts';
import { WaitingError } from '../../../../src/reconcile/outcome.ts';
import type { Inventory, InventoryEntry } from '../../../../src/reconcile/steps/inventory.ts';
import {
  commitInventory,
  recordAhead,
  sameEntries,
  unionEntries,
} from '../../../../src/reconcile/steps/inventoryRecord.ts';
import { InventoryStore, type PlacedInventory } from '../../../../src/reconcile/steps/inventoryStore.ts';
import { ReconcileReason } from '../../../../src/report/reconcileReason.ts';
import { MemoryCluster } from '../../../support/memoryCluster.ts';

const entry = (name: string, namespace = 'apps', kind = 'Service', apiVersion = 'v1'): InventoryEntry => ({
  apiVersion,
  kind,
  namespace,
  name,
});
const inventory = (entries: InventoryEntry[], over: Partial<Inventory> = {}): Inventory => ({
  deploymentId: 'd1',
  entries,
  specHash: 'spec-2',
  revisionId: 'r2',
  inputHash: 'input-2',
  ...over,
});
const placed = (namespace: string, recorded: Inventory): PlacedInventory => ({
  namespace,
  inventory: recorded,
});

/** An inventory store that keeps what it is asked to write, and removes. */
function fakeStore(held: PlacedInventory[] = []) {
  const writes: { namespace: string; inventory: Inventory }[] = [];
  const removed: string[] = [];
  const store = {
    get: () => held,
    write: async (namespace: string, written: Inventory) =>
      void writes.push({ namespace, inventory: written }),
    remove: async (_deploymentId: string, namespace: string) => void removed.push(namespace),
  };
  return { store, writes, removed };
}

describe('recordAhead', () => {
  it('records a first inventory whole', async () => {
    const { store, writes } = fakeStore();
    const next = inventory([entry('web')]);
    await recordAhead(store, 'apps', [], next, undefined);
    expect(writes).toEqual([{ namespace: 'apps', inventory: next }]);
  });

  it('records the union of the recorded and the new entries', async () => {
    const { store, writes } = fakeStore();
    const previous = [
      placed('apps', inventory([entry('old')], { specHash: 'spec-1', inputHash: 'input-1' })),
    ];
    await recordAhead(store, 'apps', previous, inventory([entry('web')]), undefined);
    expect(writes[0]?.inventory.entries).toEqual([entry('old'), entry('web')]);
  });

  it('keeps the recorded spec and input hashes until the new inventory is committed', async () => {
    const { store, writes } = fakeStore();
    const previous = [
      placed('apps', inventory([entry('old')], { specHash: 'spec-1', inputHash: 'input-1' })),
    ];
    await recordAhead(store, 'apps', previous, inventory([entry('web')]), undefined);
    expect(writes[0]?.inventory).toMatchObject({
      specHash: 'spec-1',
      inputHash: 'input-1',
      revisionId: 'r2',
    });
  });

  it('writes nothing when the record holds every entry already', async () => {
    const { store, writes } = fakeStore();
    const previous = [placed('apps', inventory([entry('old'), entry('web')], { specHash: 'spec-1' }))];
    await recordAhead(store, 'apps', previous, inventory([entry('web')]), undefined);
    expect(writes).toEqual([]);
  });

  it('records a move to another namespace with no spec hash, so it is not taken for applied', async () => {
    const { store, writes } = fakeStore();
    const previous = [placed('apps', inventory([entry('web')], { specHash: 'spec-1' }))];
    await recordAhead(store, 'apps-staging', previous, inventory([entry('web', 'apps-staging')]), undefined);
    expect(writes[0]).toMatchObject({ namespace: 'apps-staging', inventory: { specHash: '' } });
  });

  it('makes a write into a missing namespace a NamespaceMissing wait of the deployment', async () => {
    const cluster = new MemoryCluster([]);
    const store = new InventoryStore(cluster, 'listener-1');
    const written = recordAhead(store, 'apps', [], inventory([entry('web')]), undefined);
    await expect(written).rejects.toBeInstanceOf(WaitingError);
    await expect(written).rejects.toMatchObject({
      reason: ReconcileReason.NamespaceMissing,
      deploymentId: 'd1',
    });
  });

  it('passes any other failure of the write on as it is', async () => {
    const refused = new KubeApiError({
      verb: 'apply',
      kind: 'ConfigMap',
      status: 503,
      reason: 'ServiceUnavailable',
    });
    const store = {
      write: async () => {
        throw refused;
      },
    };
    await expect(recordAhead(store, 'apps', [], inventory([entry('web')]), undefined)).rejects.toBe(refused);
  });
});

describe('commitInventory', () => {
  it('records the new inventory alone', async () => {
    const { store, writes } = fakeStore([
      placed('apps', inventory([entry('old'), entry('web')], { specHash: 'spec-1' })),
    ]);
    const next = inventory([entry('web')]);
    await commitInventory(store, 'apps', next, [], undefined);
    expect(writes).toEqual([{ namespace: 'apps', inventory: next }]);
  });

  it('writes nothing when the record is the new inventory already', async () => {
    const next = inventory([entry('web')]);
    const { store, writes } = fakeStore([placed('apps', next)]);
    await commitInventory(store, 'apps', next, [], undefined);
    expect(writes).toEqual([]);
  });

  it('removes the records in the namespaces the deployment moved away from', async () => {
    const { store, removed } = fakeStore();
    await commitInventory(store, 'apps', inventory([entry('web')]), ['apps-staging', 'old'], undefined);
    expect(removed).toEqual(['apps-staging', 'old']);
  });
});

describe('unionEntries', () => {
  it('holds each object once, whatever its API version', () => {
    const union = unionEntries(
      [entry('web', 'apps', 'HorizontalPodAutoscaler', 'autoscaling/v1')],
      [entry('web', 'apps', 'HorizontalPodAutoscaler', 'autoscaling/v2')],
    );
    expect(union).toEqual([entry('web', 'apps', 'HorizontalPodAutoscaler', 'autoscaling/v2')]);
  });

  it('keeps the entries of both sides', () => {
    expect(unionEntries([entry('a')], [entry('b')])).toEqual([entry('a'), entry('b')]);
  });
});

describe('sameEntries', () => {
  it('is so for the same entries in another order', () => {
    expect(sameEntries([entry('a'), entry('b')], [entry('b'), entry('a')])).toBe(true);
  });

  it('is not so when one side holds one more', () => {
    expect(sameEntries([entry('a')], [entry('a'), entry('b')])).toBe(false);
  });

  it('is not so for another entry of the same count', () => {
    expect(sameEntries([entry('a')], [entry('b')])).toBe(false);
  });
});
