// The prune step of a full reconcile: what left the desired set (the diff of the recorded and the
// new inventory entries) is deleted — only objects this listener owns — the volumes of a rename's
// earlier names past the kept ones go, and then the new inventory alone is recorded.
import type { Logger } from 'pino';
import type { Listener } from '../../controlplane/schemas/index.ts';
import type { ObjectCache } from '../../kube/objectCache.ts';
import type { KubeObject } from '../../render/index.ts';
import type { ReconcileConfig } from '../policy/reconcileConfig.ts';
import { type Inventory, staleEntries } from './inventory.ts';
import { commitInventory } from './inventoryRecord.ts';
import type { InventoryStore, PlacedInventory } from './inventoryStore.ts';
import { keptVolumeCount, renderedVolumeNames, volumeNameOf } from './keptVolumes.ts';
import type { Pruner } from './pruner.ts';

export interface PruneStepOptions {
  readonly pruner: Pruner;
  readonly inventories: InventoryStore;
  readonly cache?: Pick<ObjectCache, 'isSynced' | 'byLabel'> | undefined;
  readonly prune: ReconcileConfig['prune'];
  readonly listener: () => Listener;
  readonly allowedNamespaces: readonly string[] | undefined;
}

/** What one reconcile applied, and what its deployment had recorded before. */
export interface PruneInput {
  readonly namespace: string;
  readonly previous: readonly PlacedInventory[];
  readonly next: Inventory;
  readonly objects: readonly KubeObject[];
}

export async function pruneStep(
  options: PruneStepOptions,
  input: PruneInput,
  log: Logger,
  signal: AbortSignal | undefined,
): Promise<void> {
  const { namespace, previous, next, objects } = input;
  const { deploymentId } = next;
  const stale = staleEntries(
    previous.flatMap((p) => p.inventory.entries),
    next.entries,
  );
  const elsewhere = previous.filter((p) => p.namespace !== namespace).map((p) => p.namespace);
  // A database dropped (the deployment brings its own) keeps its volume while the deployment
  // lives, and so its credentials: rendering it again opens the same data.
  for (const entry of stale)
    await options.pruner.prune(entry, deploymentId, log, { keepVolumes: true, signal });
  // A rename (or a move) leaves its volumes behind: past the bound, the oldest go. Before the
  // new inventory is recorded, so that a reconcile cut short here looks again.
  const named = renderedVolumeNames(namespace, objects);
  const kept = keptVolumeCount(options.prune);
  if (
    stale.length > 0 ||
    elsewhere.length > 0 ||
    earlierVolumesCached(options, deploymentId, namespace, named, kept)
  )
    await options.pruner.pruneEarlierVolumes(
      deploymentId,
      { namespaces: [namespace, ...elsewhere, ...servedNamespaces(options)], current: named, kept },
      log,
      signal,
    );
  await commitInventory(options.inventories, namespace, next, elsewhere, signal);
}

/** The listener's namespaces this agent may use: where a deployment's earlier volumes may be. */
function servedNamespaces(options: PruneStepOptions): string[] {
  const allowed = options.allowedNamespaces;
  return (options.listener().compute_config?.k8s_namespaces ?? []).filter(
    (n) => allowed?.includes(n) ?? true,
  );
}

/**
 * Whether the watch cache holds more claims of earlier names than are kept, in this namespace
 * (no request): a rename whose prune was cut short is finished at a later full reconcile.
 */
function earlierVolumesCached(
  options: PruneStepOptions,
  deploymentId: string,
  namespace: string,
  current: ReadonlySet<string>,
  kept: number,
): boolean {
  const { cache } = options;
  if (!cache?.isSynced('PersistentVolumeClaim', namespace)) return false;
  const earlier = new Set(
    cache
      .byLabel('PersistentVolumeClaim', namespace, deploymentId)
      .flatMap((claim) => volumeNameOf(namespace, claim) ?? [])
      .filter((key) => !current.has(key)),
  );
  return earlier.size > kept;
}
