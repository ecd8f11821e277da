// A deployment's database volumes follow its identity (docs/design.md, "Database volumes are
// kept"): it holds the volumes of the names it renders now, and at most
// `reconcile.prune.keptVolumesPerDeployment` of its earlier names (none when
// `keepDatabaseVolumes` is false). A rename past that deletes the oldest earlier name's claims and
// their credentials together; without a bound, each rename would keep another volume, and block
// that name for every other tenant, for as long as the deployment lives. Pure: the pruner lists
// and deletes.
import type { LiveKubeObject } from '../../kube/index.ts';
import type { KubeObject } from '../../objects/kubeObject.ts';
import { formatLocalRef } from '../../objects/objectRef.ts';
import { LABEL_INSTANCE } from '../../objects/ownership.ts';
import type { ReconcileConfig } from '../policy/reconcileConfig.ts';

/** The volume of one name in one namespace: its claims and their credentials, kept or deleted together. */
export interface NamedVolume {
  readonly namespace: string;
  /** The name the deployment had when the volume was made (its objects' instance label). */
  readonly name: string;
  /** Claims first: a password is never deleted before the data it opens. */
  readonly objects: readonly LiveKubeObject[];
  /** The earliest creationTimestamp of its objects: when the volume was made. */
  readonly createdAt: string;
}

/** `namespace/name`: how a volume is told from the others. */
export function volumeKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * A deployment's volume objects (pruner.ts databaseVolumes), by the name they were made under. An
 * object without an instance label is a volume of its own; one being deleted (a claim waits for
 * its pod to go) is no longer held.
 */
export function volumesByName(objects: readonly LiveKubeObject[]): NamedVolume[] {
  const byKey = new Map<string, { namespace: string; name: string; objects: LiveKubeObject[] }>();
  for (const object of objects) {
    if (object.metadata.deletionTimestamp !== undefined) continue;
    const namespace = object.metadata.namespace ?? '';
    const name = object.metadata.labels[LABEL_INSTANCE] ?? formatLocalRef(object);
    const key = volumeKey(namespace, name);
    const seen = byKey.get(key) ?? { namespace, name, objects: [] };
    seen.objects.push(object);
    byKey.set(key, seen);
  }
  return [...byKey.values()].map(({ namespace, name, objects: held }) => ({
    namespace,
    name,
    objects: [...held].sort((a, b) => claimsFirst(a) - claimsFirst(b)),
    createdAt: held.flatMap((o) => o.metadata.creationTimestamp ?? []).sort()[0] ?? '',
  }));
}

const claimsFirst = (object: LiveKubeObject) => (object.kind === 'PersistentVolumeClaim' ? 0 : 1);

/**
 * The volumes to delete: those of earlier names (not in `current`, keyed by volumeKey) beyond the
 * `kept` newest, oldest first (creationTimestamp, then namespace and name, so every reconcile and
 * `diff` agree).
 */
export function volumesPastKept(
  volumes: readonly NamedVolume[],
  current: ReadonlySet<string>,
  kept: number,
): NamedVolume[] {
  const order = (v: NamedVolume) => `${v.createdAt}\u0000${v.namespace}\u0000${v.name}`;
  const earlier = volumes
    .filter((v) => !current.has(volumeKey(v.namespace, v.name)))
    .sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  return earlier.slice(0, Math.max(0, earlier.length - kept));
}

/** The volumes of the names a render makes (volumeKey): its objects' instance label, in its namespace. */
export function renderedVolumeNames(namespace: string, objects: readonly KubeObject[]): Set<string> {
  return new Set(objects.flatMap((o) => volumeNameOf(namespace, o) ?? []));
}

/** The volume an object belongs to, by the name it was made under; none without an instance label. */
export function volumeNameOf(
  namespace: string,
  object: { readonly metadata: { readonly labels: Readonly<Record<string, string>> } },
): string | undefined {
  const name = object.metadata.labels[LABEL_INSTANCE];
  return name === undefined ? undefined : volumeKey(namespace, name);
}

/** How many earlier names' volumes a deployment keeps: none when volumes are not kept. */
export function keptVolumeCount(prune: ReconcileConfig['prune']): number {
  return prune.keepDatabaseVolumes ? prune.keptVolumesPerDeployment : 0;
}
