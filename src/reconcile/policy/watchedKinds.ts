// The kinds whose hand edits wake a deployment: every kind the agent writes, so that a deletion by
// hand is repaired at once rather than at the next resync. Read off the kind table
// (objects/kinds.ts), as `check`'s list and watch permissions are.
import {
  isEnabled,
  KINDS,
  type KindRow,
  type KindSettings,
  kindsWhere,
  type TableKind,
} from '../../objects/kinds.ts';

/** The kinds a hand edit of wakes its deployment, under any render configuration. */
export const WATCHED_KINDS: readonly TableKind[] = kindsWhere((row) => row.watched === 'wakes');

/**
 * The kinds an inventory may record: what render writes. Not ConfigMaps (the inventories
 * themselves) nor claims (a StatefulSet's volumes, found by label).
 */
export const INVENTORY_KINDS: ReadonlySet<string> = new Set(kindsWhere((row) => row.written === 'rendered'));

/**
 * The kinds watched under this render configuration: each optional kind only under the setting
 * that has render write it — custom resources whose CRDs a cluster without them does not serve.
 */
export function watchedKinds(render: KindSettings): TableKind[] {
  return kindsWhere((row) => row.watched === 'wakes' && isEnabled(row, render));
}

/** A custom resource render writes: served only where its CRDs are installed. */
export interface CustomKind {
  readonly kind: TableKind;
  /** The setting that makes render write it. */
  readonly setting: string;
  /** What installs its CRD. */
  readonly from: string;
}

/** The custom resources render writes under this configuration. */
export function customKinds(render: KindSettings): CustomKind[] {
  const rows: readonly (KindRow & { readonly kind: TableKind })[] = KINDS;
  const kinds: CustomKind[] = [];
  for (const { kind, crd, enabledBy } of rows)
    if (crd !== undefined && enabledBy?.enabled(render))
      kinds.push({ kind, setting: enabledBy.setting, from: crd });
  return kinds;
}

/**
 * Kinds read for rollout status and never written: watched into the cache (so a recheck reads
 * them without a request), they wake no deployment — their workloads' status changes do.
 */
export const OBSERVED_KINDS: readonly TableKind[] = kindsWhere((row) => row.watched === 'cached');

/** The kinds whose objects of one deployment the reconciler lists from the cache (pods, claims). */
export const OWNED_LISTED_KINDS = ['Pod', 'PersistentVolumeClaim'] as const;
