// The inventory store over an in-memory cluster behind its narrow reader/writer: what one leader
// writes, the next loads; a namespace added later is read without forgetting the others.
import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../../src/kube/decode.ts';
import { ObjectCache } from '../../../../src/kube/objectCache.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../../src/objects/ownership.ts';
import type { Inventory } from '../../../../src/reconcile/steps/inventory.ts';
import { InventoryStore } from '../../../../src/reconcile/steps/inventoryStore.ts';
import { MemoryCluster } from '../../../support/memoryCluster.ts';

const inventory = (deploymentId: string, namespace = 'a'): Inventory => ({
  deploymentId,
  specHash: 'h1',
  revisionId: 'r1',
  entries: [{ apiVersion: 'v1', kind: 'Service', namespace, name: deploymentId }],
});

describe('InventoryStore', () => {
  it("hands each write's answer on, so that the watch cache takes the write's echo as no news", async () => {
    // As the leader's cache is built: inventories held without their body.
    const cacheOf = () => new ObjectCache({ indexLabel: LABEL_DEPLOYMENT_ID, bodylessKinds: ['ConfigMap'] });
    const cluster = new MemoryCluster(['a']);
    const cache = cacheOf();
    const written: LiveKubeObject[] = [];
    const store = new InventoryStore(cluster, 'listener-1', undefined, (object) => {
      written.push(object);
      cache.written(object);
    });
    await store.write('a', inventory('d1'));
    await store.write('a', inventory('d1')); // unchanged: no request, nothing handed on
    expect(written).toHaveLength(1);
    const [echo] = await cluster.list('ConfigMap', { namespace: 'a' });
    if (!echo) throw new Error('no inventory written');
    expect(echo.metadata.resourceVersion).toBe(written[0]?.metadata.resourceVersion);
    expect(cache.observe({ type: 'ADDED', object: echo })).toBe('none');
    // A cache not told of the write takes the echo as a change, which wakes the deployment.
    expect(cacheOf().observe({ type: 'ADDED', object: echo })).toBe('changed');
  });

  it('loads what another store wrote, only for its own listener', async () => {
    const cluster = new MemoryCluster(['a', 'b']);
    const writer = new InventoryStore(cluster, 'listener-1');
    await writer.write('a', inventory('d1'));
    await writer.write('b', inventory('d2', 'b'));
    await new InventoryStore(cluster, 'listener-2').write('a', inventory('foreign'));

    const reader = new InventoryStore(cluster, 'listener-1');
    await reader.load(['a', 'b']);
    expect(reader.deploymentIds().sort()).toEqual(['d1', 'd2']);
    expect(reader.get('d1')).toMatchObject([{ namespace: 'a', inventory: inventory('d1') }]);
  });

  it('adds a namespace without forgetting the ones loaded, and reads it once only', async () => {
    const cluster = new MemoryCluster(['a', 'b']);
    const writer = new InventoryStore(cluster, 'listener-1');
    await writer.write('a', inventory('d1'));
    await writer.write('b', inventory('d1', 'b'));

    const reader = new InventoryStore(cluster, 'listener-1');
    await reader.load(['a']);
    expect(reader.get('d1').map((p) => p.namespace)).toEqual(['a']);
    await reader.add('b');
    await reader.add('b');
    expect(reader.get('d1').map((p) => p.namespace)).toEqual(['a', 'b']);
  });

  it('writes nothing for an unchanged inventory, and removes one', async () => {
    const cluster = new MemoryCluster(['a']);
    const store = new InventoryStore(cluster, 'listener-1');
    await store.write('a', inventory('d1'));
    const after = cluster.calls.length;
    await store.write('a', inventory('d1'));
    expect(cluster.calls.length).toBe(after);

    await store.remove('d1', 'a');
    expect(store.get('d1')).toEqual([]);
    expect(cluster.names('ConfigMap')).toEqual([]);
  });
});
