// One poll of the control plane: a complete listing of this listener's remotely reconciled
// deployments, revisions read only for what changed, and the prune guard on what vanished.
import type { Logger } from 'pino';
import type { ControlPlaneClient } from '../controlplane/client.ts';
import { deploymentLogger } from '../report/deploymentLogger.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import type { StatusReporter } from '../report/statusReporter.ts';
import type { DesiredState } from './desiredState.ts';
import { decideVanished } from './pruneGuard.ts';
import type { ReconcileConfig } from './reconcileConfig.ts';
import { chooseTarget, deploymentFingerprint } from './target.ts';

export interface PollerOptions {
  readonly client: ControlPlaneClient;
  readonly listenerId: string;
  readonly desired: DesiredState;
  /** Deployments that have objects in the cluster (from the inventories). */
  readonly knownIds: () => readonly string[];
  readonly enqueue: (deploymentId: string) => void;
  readonly reporter: StatusReporter;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  readonly config: ReconcileConfig;
}

export class Poller {
  readonly #o: PollerOptions;
  readonly #log: Logger;

  constructor(options: PollerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'poller' });
  }

  /** Returns false when the listing failed (and nothing was concluded from it). */
  async pollOnce(signal?: AbortSignal): Promise<boolean> {
    let listing: Awaited<ReturnType<ControlPlaneClient['listAllDeployments']>>;
    try {
      listing = await this.#o.client.listAllDeployments({ remote_reconciled: true }, { signal });
    } catch (error) {
      // Cancelled (shutdown, lost lease): nothing concluded, nothing sent.
      if (signal?.aborted) return false;
      // A failed or partial listing deletes nothing and changes nothing.
      this.#o.metrics.polls.inc({ result: 'failed' });
      this.#log.warn({ err: error }, 'listing deployments failed; keeping the last known state');
      await this.#o.reporter.flush();
      return false;
    }
    const { desired, listenerId } = this.#o;
    const known = new Set([...this.#o.knownIds(), ...desired.ids()]);
    const listed = new Set<string>();
    let completeForPrune = true;

    for (const invalid of listing.invalid) {
      if (invalid.id === undefined) {
        completeForPrune = false;
        continue;
      }
      // It may be another listener's; only one this listener knows is taken as its own.
      if (!known.has(invalid.id)) continue;
      listed.add(invalid.id);
      const previous = desired.get(invalid.id);
      if (previous?.kind !== 'invalid') {
        desired.set(invalid.id, { kind: 'invalid', message: invalid.error.message });
        this.#o.enqueue(invalid.id);
      }
    }

    for (const deployment of listing.items) {
      if (deployment.source_config.listener_id !== listenerId) continue;
      listed.add(deployment.id);
      const fingerprint = deploymentFingerprint(deployment);
      const previous = desired.get(deployment.id);
      if (previous?.kind === 'present' && previous.fingerprint === fingerprint) continue;
      try {
        const revisions = await this.#o.client.listAllRevisions(deployment.id, {}, { signal });
        desired.set(deployment.id, {
          kind: 'present',
          deployment,
          target: chooseTarget(deployment, revisions.items),
          fingerprint,
        });
        this.#o.enqueue(deployment.id);
      } catch (error) {
        if (signal?.aborted) return false;
        deploymentLogger(this.#log, {
          deploymentId: deployment.id,
          revisionId: deployment.latest_revision_id ?? undefined,
          namespace: deployment.source_config.listener_config?.k8s_namespace ?? undefined,
        }).warn({ err: error }, 'reading revisions failed; will try again next poll');
      }
    }

    if (completeForPrune) {
      const decision = decideVanished(known, listed, this.#o.config.prune);
      if (!decision.allowed) {
        this.#o.metrics.pruneRefusals.inc();
        this.#log.warn(
          { vanished: decision.vanished.length, reason: decision.reason },
          'deletions refused by the safety guard',
        );
      } else {
        for (const id of decision.vanished) {
          if (desired.get(id)?.kind === 'gone') continue;
          deploymentLogger(this.#log, { deploymentId: id }).info(
            'deployment gone from a complete listing; deleting its objects',
          );
          desired.set(id, { kind: 'gone' });
          this.#o.enqueue(id);
        }
      }
    }
    this.#o.metrics.polls.inc({ result: 'ok' });
    await this.#o.reporter.flush();
    return true;
  }
}
