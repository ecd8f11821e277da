// Finalize: a deployment the control plane deleted. What its inventories record is deleted (only
// objects this listener owns, by uid), in the reverse of the order it was applied; its database
// volumes (the claims and their credentials) go too unless they are kept; then its inventories.
import type { Logger } from 'pino';
import type { InventoryStore } from './inventoryStore.ts';
import type { Pruner } from './pruner.ts';

export interface FinalizeOptions {
  readonly pruner: Pruner;
  readonly inventories: InventoryStore;
  /** `reconcile.prune.keepDatabaseVolumes`. */
  readonly keepVolumes: boolean;
}

/** Deletes the deployment's objects and inventories; returns the namespaces it was in. */
export async function finalizeDeployment(
  options: FinalizeOptions,
  deploymentId: string,
  log: Logger,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  const { pruner, inventories, keepVolumes } = options;
  const placed = inventories.get(deploymentId);
  for (const { namespace, inventory } of placed) {
    for (const entry of [...inventory.entries].reverse())
      await pruner.prune(entry, deploymentId, log, { keepVolumes, signal });
    if (!keepVolumes) await pruner.pruneVolumes(namespace, deploymentId, log, signal);
    await inventories.remove(deploymentId, namespace, signal);
  }
  return placed.map((p) => p.namespace);
}
