// The inventory's two writes around an apply, as cli-utils' inventory add and set tasks: before
// any object is applied, the union of what was recorded and what is about to be (a crash loses no
// applied object); after the prune, the new set alone, and the records left in namespaces the
// deployment moved away from removed.

import { namespaceWaiting } from '../outcome.ts';
import type { Inventory, InventoryEntry } from './inventory.ts';
import { entryId, sameInventory } from './inventory.ts';
import type { InventoryStore, PlacedInventory } from './inventoryStore.ts';

/** Records the union of the recorded and the new entries before any apply. */
export async function recordAhead(
  store: Pick<InventoryStore, 'write'>,
  namespace: string,
  previous: readonly PlacedInventory[],
  next: Inventory,
  signal: AbortSignal | undefined,
): Promise<void> {
  const union = unionEntries(
    previous.flatMap((p) => p.inventory.entries),
    next.entries,
  );
  const here = previous.find((p) => p.namespace === namespace);
  if (here && sameEntries(here.inventory.entries, union)) return;
  // A first inventory has nothing to prune: recorded whole now, it needs no second write (a
  // third of a cold sync's writes otherwise). Else the old spec hash stays until the new
  // inventory is recorded whole, after the prune.
  const first = previous.length === 0;
  const recorded = first
    ? next
    : {
        ...next,
        entries: union,
        specHash: here?.inventory.specHash ?? '',
        inputHash: here?.inventory.inputHash,
      };
  // The first write of a reconcile into its namespace: where a namespace not there shows first.
  try {
    await store.write(namespace, recorded, signal);
  } catch (error) {
    throw namespaceWaiting(error, next.deploymentId);
  }
}

/** After the prune: the records elsewhere removed, the new inventory recorded alone (when it differs). */
export async function commitInventory(
  store: Pick<InventoryStore, 'get' | 'write' | 'remove'>,
  namespace: string,
  next: Inventory,
  elsewhere: readonly string[],
  signal: AbortSignal | undefined,
): Promise<void> {
  for (const other of elsewhere) await store.remove(next.deploymentId, other, signal);
  const current = store.get(next.deploymentId).find((p) => p.namespace === namespace)?.inventory;
  if (!sameInventory(current, next)) await store.write(namespace, next, signal);
}

export function unionEntries(a: readonly InventoryEntry[], b: readonly InventoryEntry[]): InventoryEntry[] {
  const byId = new Map<string, InventoryEntry>();
  for (const entry of [...a, ...b]) byId.set(entryId(entry), entry);
  return [...byId.values()];
}

export function sameEntries(a: readonly InventoryEntry[], b: readonly InventoryEntry[]): boolean {
  if (a.length !== b.length) return false;
  const ids = new Set(a.map(entryId));
  return b.every((entry) => ids.has(entryId(entry)));
}
