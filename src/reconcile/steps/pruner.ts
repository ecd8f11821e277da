// Deletes what a deployment recorded and no longer renders, or all of it when it is gone: only
// an object still carrying this listener's label and the deployment's id, by uid (docs/design.md,
// "Prune by inventory"). A database's volume and its generated credentials go together or not at
// all ("Database volumes are kept").
import type { Logger } from 'pino';
import type { Listener } from '../../controlplane/schemas/index.ts';
import type { LiveKubeObject } from '../../kube/index.ts';
import { formatRef } from '../../objects/objectRef.ts';
import {
  deploymentSelector,
  isDatabaseCredentials,
  isPruned,
  isThisDeployments,
} from '../../objects/ownership.ts';
import type { AgentMetrics } from '../../report/metrics.ts';
import type { KubeReader, KubeWriter } from '../kubeAccess.ts';
import { entryOf, type InventoryEntry } from './inventory.ts';
import { type NamedVolume, volumesByName, volumesPastKept } from './keptVolumes.ts';

export interface PrunerOptions {
  readonly kube: KubeReader & Pick<KubeWriter, 'delete'>;
  readonly metrics: Pick<AgentMetrics, 'objectsPruned'>;
  readonly listener: () => Listener;
}

export class Pruner {
  readonly #o: PrunerOptions;

  constructor(options: PrunerOptions) {
    this.#o = options;
  }

  /**
   * Deletes one recorded object, only if it is still this deployment's (never a collider's
   * victim). With `keepVolumes`, a database's generated credentials stay, as its claims do: a kept
   * volume whose password is gone cannot be opened again.
   */
  async prune(
    entry: InventoryEntry,
    deploymentId: string,
    log: Logger,
    options: { readonly keepVolumes: boolean; readonly signal?: AbortSignal | undefined },
  ): Promise<void> {
    const { signal } = options;
    const ref = {
      apiVersion: entry.apiVersion,
      kind: entry.kind,
      namespace: entry.namespace,
      name: entry.name,
    };
    const live = await this.#o.kube.get(ref, { signal });
    if (!live || !isThisDeployments(live, this.#o.listener().id, deploymentId)) return;
    if (!isPruned(live, this.#o.listener().id, deploymentId, options.keepVolumes)) {
      log.info({ object: formatRef(entry) }, 'kept with the database volume');
      return;
    }
    log.info({ object: formatRef(entry) }, 'pruning');
    await this.#o.kube.delete(ref, {
      propagationPolicy: 'Background',
      preconditionUid: live.metadata.uid,
      signal,
    });
    this.#o.metrics.objectsPruned.inc();
  }

  /**
   * The deployment's database volumes in a namespace, when they are not kept: its claims (made by
   * the StatefulSet controller, never recorded) and their credentials (no longer recorded once the
   * deployment stopped rendering its database), found by its labels and pruned like its objects.
   */
  async pruneVolumes(
    namespace: string,
    deploymentId: string,
    log: Logger,
    signal?: AbortSignal,
  ): Promise<void> {
    const volumes = await databaseVolumes(
      this.#o.kube,
      namespace,
      this.#o.listener().id,
      deploymentId,
      signal,
    );
    for (const volume of volumes)
      await this.prune(entryOf(volume), deploymentId, log, { keepVolumes: false, signal });
  }

  /**
   * The volumes of the deployment's earlier names past the `kept` newest (keptVolumes.ts), in
   * these namespaces: each volume's claims, then its credentials, deleted as prune does (only
   * while still this deployment's, by uid). Returns the volumes deleted.
   */
  async pruneEarlierVolumes(
    deploymentId: string,
    where: EarlierVolumes,
    log: Logger,
    signal?: AbortSignal,
  ): Promise<NamedVolume[]> {
    const past = await earlierVolumesPastKept(
      this.#o.kube,
      this.#o.listener().id,
      deploymentId,
      where,
      signal,
    );
    for (const volume of past) {
      log.warn(
        { volume: `${volume.namespace}/${volume.name}`, kept: where.kept },
        'deleting the database volume of an earlier name of the deployment, past reconcile.prune.keptVolumesPerDeployment',
      );
      for (const object of volume.objects)
        await this.prune(entryOf(object), deploymentId, log, { keepVolumes: false, signal });
    }
    return past;
  }
}

/**
 * A deployment's database volumes in a namespace, found by its labels: the claims its
 * StatefulSets bound (never recorded) and their credentials (no longer recorded once the
 * deployment stopped rendering its database).
 */
export async function databaseVolumes(
  kube: KubeReader,
  namespace: string,
  listenerId: string,
  deploymentId: string,
  signal: AbortSignal | undefined,
): Promise<LiveKubeObject[]> {
  const labelSelector = deploymentSelector(listenerId, deploymentId);
  const [claims, secrets] = await Promise.all([
    kube.list('PersistentVolumeClaim', { namespace, labelSelector, signal }),
    kube.list('Secret', { namespace, labelSelector, signal }),
  ]);
  return [...claims, ...secrets.filter(isDatabaseCredentials)];
}

/** Where a deployment's earlier names' volumes are looked for, and what it keeps. */
export interface EarlierVolumes {
  readonly namespaces: readonly string[];
  /** The volumes of the names rendered now (keptVolumes.ts volumeKey): never deleted. */
  readonly current: ReadonlySet<string>;
  readonly kept: number;
}

/** The deployment's earlier names' volumes past the kept ones, read from the API server: `run` and `diff` alike. */
export async function earlierVolumesPastKept(
  kube: KubeReader,
  listenerId: string,
  deploymentId: string,
  where: EarlierVolumes,
  signal: AbortSignal | undefined,
): Promise<NamedVolume[]> {
  const listed = await Promise.all(
    [...new Set(where.namespaces)].map((namespace) =>
      databaseVolumes(kube, namespace, listenerId, deploymentId, signal),
    ),
  );
  return volumesPastKept(volumesByName(listed.flat()), where.current, where.kept);
}
