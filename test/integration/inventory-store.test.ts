// The inventory store against the real cluster: an unchanged inventory makes no request, whether
// this store wrote it or loaded it; a changed one is written. Requests are counted by a client
// that only passes them on to the real one.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KubeClient } from '../../src/kube/index.ts';
import type { Inventory } from '../../src/reconcile/inventory.ts';
import { type InventoryKube, InventoryStore, inventoryName } from '../../src/reconcile/inventoryStore.ts';
import { type AdminKube, adminKube, createNamespace, uniqueNamespace } from '../support/adminKube.ts';

const kubeconfigPath = inject('kubeconfigPath');
const LISTENER = '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11';
const DEPLOYMENT = '3f8d6c1e-1a2b-4c3d-8e4f-0000000009a1';
let admin: AdminKube;
let kube: KubeClient;
let namespace: string;

beforeAll(async () => {
  admin = adminKube(kubeconfigPath);
  namespace = uniqueNamespace('inv');
  await createNamespace(admin, namespace);
  kube = await KubeClient.fromKubeconfig(kubeconfigPath, { logger: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await kube?.close();
  await admin?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

/** The real client, with every request counted by verb. */
function counting(): { client: InventoryKube; calls: string[] } {
  const calls: string[] = [];
  const client: InventoryKube = {
    list: (kind, options) => {
      calls.push('list');
      return kube.list(kind, options);
    },
    apply: (object, options) => {
      calls.push('apply');
      return kube.apply(object, options);
    },
    delete: (ref, options) => {
      calls.push('delete');
      return kube.delete(ref, options);
    },
  };
  return { client, calls };
}

const inventory = (specHash: string, names: string[]): Inventory => ({
  deploymentId: DEPLOYMENT,
  specHash,
  revisionId: 'rev-1',
  entries: names.map((name) => ({ apiVersion: 'v1', kind: 'Service', namespace, name })),
});

async function storedText(): Promise<string | undefined> {
  const map = await admin.core.readNamespacedConfigMap({ name: inventoryName(DEPLOYMENT), namespace });
  return map.data?.inventory;
}

describe('inventory store', () => {
  it('writes an unchanged inventory with no request, and a changed one with one', async () => {
    const { client, calls } = counting();
    const store = new InventoryStore(client, LISTENER);
    await store.write(namespace, inventory('h1', ['web', 'web-db']));
    expect(calls).toEqual(['apply']);
    const first = await storedText();
    expect(first).toContain('"web-db"');

    await store.write(namespace, inventory('h1', ['web', 'web-db']));
    expect(calls).toEqual(['apply']);

    // Order is part of the record (pruning follows it), so a reordering is written.
    await store.write(namespace, inventory('h1', ['web-db', 'web']));
    await store.write(namespace, inventory('h2', ['web-db', 'web']));
    expect(calls).toEqual(['apply', 'apply', 'apply']);
    expect(await storedText()).toContain('"specHash":"h2"');
  });

  it('sends nothing for an inventory equal to the one it loaded (a new leader, the same record)', async () => {
    const { client, calls } = counting();
    const store = new InventoryStore(client, LISTENER);
    await store.load([namespace]);
    await store.write(namespace, inventory('h2', ['web-db', 'web']));
    expect(calls).toEqual(['list']);
    await store.write(namespace, inventory('h3', ['web-db', 'web']));
    expect(calls).toEqual(['list', 'apply']);
    expect(await storedText()).toContain('"specHash":"h3"');
  });
});
