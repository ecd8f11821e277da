// The inventory store against the real cluster: an unchanged inventory makes no request, whether
// this store wrote it or loaded it; a changed one is written. Requests are counted by a client
// that only passes them on to the real one.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KubeClient } from '../../../src/kube/index.ts';
import {
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../../src/objects/ownership.ts';
import type { Inventory } from '../../../src/reconcile/steps/inventory.ts';
import {
  type InventoryKube,
  InventoryStore,
  inventoryName,
  type RejectedInventory,
} from '../../../src/reconcile/steps/inventoryStore.ts';
import { type AdminKube, adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';

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

  // docs/design.md, "Prune by inventory": an inventory is a list of what to delete; one that does not hold
  // together is reported and never loaded, so it can never make the agent delete anything.
  it.each([
    [
      'an entry in another namespace',
      (ns: string) => ({
        id: DEPLOYMENT,
        entries: [{ apiVersion: 'v1', kind: 'Service', namespace: 'kube-system', name: 'kube-dns' }],
        ns,
      }),
    ],
    [
      'an entry of a kind render never writes',
      (ns: string) => ({
        id: DEPLOYMENT,
        entries: [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', namespace: ns, name: 'admin' }],
        ns,
      }),
    ],
    [
      'a deploymentId its name and label do not carry',
      (ns: string) => ({ id: '3f8d6c1e-1a2b-4c3d-8e4f-0000000009ff', entries: [], ns }),
    ],
  ])('refuses %s, and reports it', async (_what, forged) => {
    const ns = uniqueNamespace('inv-forged');
    await createNamespace(admin, ns);
    const { id, entries } = forged(ns);
    await admin.core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: inventoryName(DEPLOYMENT),
          labels: {
            [LABEL_MANAGED_BY]: 'k8s-listener',
            [LABEL_LISTENER_ID]: LISTENER,
            [LABEL_DEPLOYMENT_ID]: DEPLOYMENT,
            [LABEL_COMPONENT]: 'inventory',
          },
        },
        data: { inventory: JSON.stringify({ deploymentId: id, specHash: 'h', revisionId: 'r', entries }) },
      },
    });
    const rejected: RejectedInventory[] = [];
    const store = new InventoryStore(kube, LISTENER, (r) => rejected.push(r));
    await store.load([ns]);
    expect(store.deploymentIds()).toEqual([]);
    expect(rejected).toMatchObject([{ namespace: ns, name: inventoryName(DEPLOYMENT) }]);
    expect(rejected[0]?.problems.length).toBeGreaterThan(0);
    await admin.core.deleteNamespace({ name: ns });
  });

  it('removes only the inventory it read: one made since under the same name stays (uid precondition)', async () => {
    const store = new InventoryStore(kube, LISTENER);
    await store.load([namespace]);
    expect(store.deploymentIds()).toEqual([DEPLOYMENT]);
    // Deleted and made again by someone else while the store held the old one.
    const old = await admin.core.readNamespacedConfigMap({ name: inventoryName(DEPLOYMENT), namespace });
    await admin.core.deleteNamespacedConfigMap({ name: inventoryName(DEPLOYMENT), namespace });
    await admin.core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: inventoryName(DEPLOYMENT), labels: old.metadata?.labels ?? {} },
        data: old.data ?? {},
      },
    });
    await expect(store.remove(DEPLOYMENT, namespace)).rejects.toThrow();
    expect(await storedText()).toBe(old.data?.inventory);
  });
});
