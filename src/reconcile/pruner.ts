// Deletes what a deployment recorded and no longer renders, or all of it when it is gone: only
// an object still carrying this listener's label and the deployment's id, by uid (docs/design.md,
// "Prune by inventory").
import type { Logger } from 'pino';
import type { Listener } from '../controlplane/schemas/index.ts';
import { deploymentSelector, isPrunable } from '../objects/ownership.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import { entryOf, type InventoryEntry } from './inventory.ts';
import type { KubeReader, KubeWriter } from './kubeAccess.ts';

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

  /** Deletes one recorded object, only if it is still this deployment's (never a collider's victim). */
  async prune(entry: InventoryEntry, deploymentId: string, log: Logger, signal?: AbortSignal): Promise<void> {
    const ref = {
      apiVersion: entry.apiVersion,
      kind: entry.kind,
      namespace: entry.namespace,
      name: entry.name,
    };
    const live = await this.#o.kube.get(ref, { signal });
    if (!live || !isPrunable(live, this.#o.listener().id, deploymentId)) return;
    log.info({ object: `${entry.kind}/${entry.namespace}/${entry.name}` }, 'pruning');
    await this.#o.kube.delete(ref, {
      propagationPolicy: 'Background',
      preconditionUid: live.metadata.uid,
      signal,
    });
    this.#o.metrics.objectsPruned.inc();
  }

  /** The deployment's claims in a namespace, pruned like its objects (when volumes are not kept). */
  async pruneClaims(
    namespace: string,
    deploymentId: string,
    log: Logger,
    signal?: AbortSignal,
  ): Promise<void> {
    const claims = await this.#o.kube.list('PersistentVolumeClaim', {
      namespace,
      labelSelector: deploymentSelector(this.#o.listener().id, deploymentId),
      signal,
    });
    for (const claim of claims) await this.prune(entryOf(claim), deploymentId, log, signal);
  }
}
