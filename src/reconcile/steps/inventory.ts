// The record of what was applied for one deployment, Flux-style: pruning is a diff of this
// record against the desired set, never a label query alone. Pure functions.
import type { KubeObject } from '../../objects/kubeObject.ts';

export interface InventoryEntry {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

export interface Inventory {
  readonly deploymentId: string;
  readonly entries: readonly InventoryEntry[];
  readonly specHash: string;
  readonly revisionId: string | undefined;
  /**
   * Digest of the control plane's input the render came from (agentChange.ts): the same input
   * rendered to another spec hash is a change of the agent's. Absent in older inventories.
   */
  readonly inputHash?: string | undefined;
}

/** `namespace_name_group_kind`, the identity of an entry (version left out on purpose: a
 * change of API version is the same object). */
export function entryId(entry: InventoryEntry): string {
  const group = entry.apiVersion.includes('/') ? entry.apiVersion.split('/')[0] : '';
  return `${entry.namespace}_${entry.name}_${group}_${entry.kind}`;
}

export function entryOf(object: KubeObject): InventoryEntry {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    namespace: object.metadata.namespace ?? '',
    name: object.metadata.name,
  };
}

export function entriesOf(objects: readonly KubeObject[]): InventoryEntry[] {
  return objects.map(entryOf);
}

/** Entries of `previous` that are not in `next`: what to prune. */
export function staleEntries(
  previous: readonly InventoryEntry[],
  next: readonly InventoryEntry[],
): InventoryEntry[] {
  const keep = new Set(next.map(entryId));
  return previous.filter((entry) => !keep.has(entryId(entry)));
}

export function sameInventory(a: Inventory | undefined, b: Inventory): boolean {
  if (
    !a ||
    a.specHash !== b.specHash ||
    a.revisionId !== b.revisionId ||
    a.inputHash !== b.inputHash ||
    a.entries.length !== b.entries.length
  )
    return false;
  const ids = new Set(a.entries.map(entryId));
  return b.entries.every((entry) => ids.has(entryId(entry)));
}
