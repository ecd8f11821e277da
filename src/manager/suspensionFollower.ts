// What operators suspended, as the leader follows it: read before the first reconcile (a suspended
// deployment is not applied after a restart), then at each poll, where each change is told (log,
// Event, metric), its deployments reconciled, and the generation read acknowledged, so that
// `suspend` and `resume` return once the agent acts on them.
import type { Logger } from 'pino';
import type { EventRecorder, KubeClient } from '../kube/index.ts';
import type { DesiredState } from '../reconcile/loop/desiredState.ts';
import {
  type ActiveSuspension,
  changedSuspensions,
  describeEntry,
  describeSuspension,
  NO_SUSPENSIONS,
  observedAnnotation,
  readSuspensions,
  type Suspensions,
  suspensionOf,
  suspensionsRef,
} from '../reconcile/policy/suspensions.ts';
import { type InventoryStore, inventoryRef } from '../reconcile/steps/inventoryStore.ts';
import { deploymentLogger } from '../report/deploymentLogger.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import { retryUntilAborted } from './retryUntilAborted.ts';

export interface SuspensionFollowerOptions {
  readonly kube: Pick<KubeClient, 'get' | 'mergePatch'>;
  readonly agentNamespace: string;
  readonly listenerId: string;
  /** The deployments there are: those the control plane wants and those with objects here. */
  readonly desired: Pick<DesiredState, 'ids'>;
  readonly inventories: Pick<InventoryStore, 'deploymentIds' | 'get'>;
  readonly events: Pick<EventRecorder, 'record'>;
  /** Reconciles a deployment whose suspension changed: a resume re-applies, a suspension reports. */
  readonly wake: (deploymentId: string) => void;
  readonly metrics: Pick<AgentMetrics, 'suspendedDeployments' | 'listenerSuspended'>;
  readonly logger: Logger;
}

export class SuspensionFollower {
  readonly #o: SuspensionFollowerOptions;
  /** As last read (before the first reconcile, then at each poll). */
  #current: Suspensions = NO_SUSPENSIONS;

  constructor(options: SuspensionFollowerOptions) {
    this.#o = options;
  }

  /** The suspension in effect for a deployment, as last read. */
  of(deploymentId: string): ActiveSuspension | undefined {
    return suspensionOf(this.#current, deploymentId);
  }

  /** The first read, retried until it succeeds; false when the signal ended it. */
  async load(signal: AbortSignal): Promise<boolean> {
    const read = await retryUntilAborted(() => this.#read(signal), {
      signal,
      firstDelayMs: 1_000,
      onFailure: (error, attempt) =>
        this.#o.logger.warn({ err: error, attempt }, 'reading the suspensions failed; retrying'),
    });
    if (read === undefined) return false;
    this.#current = read;
    if (read.listener) this.#o.logger.warn({ suspension: read.listener }, 'the whole listener is suspended');
    this.#count();
    return true;
  }

  /**
   * Reads them again: each deployment whose suspension changed is told and reconciled, then the
   * generation read is acknowledged. A failed read keeps the last one (logged): nothing is resumed
   * by error.
   */
  async follow(signal: AbortSignal): Promise<void> {
    const log = this.#o.logger;
    let fresh: Suspensions;
    try {
      fresh = await this.#read(signal);
    } catch (error) {
      if (!signal.aborted) log.warn({ err: error }, 'reading the suspensions failed; keeping the last read');
      return;
    }
    const before = this.#current;
    this.#current = fresh;
    const ids = this.#deploymentIds();
    // Each changed deployment is reconciled first.
    for (const id of changedSuspensions(before, fresh, ids)) this.#o.wake(id);
    const suspensions = suspensionsRef(this.#o.agentNamespace);
    // The listener told once (not an Event per deployment of a large listener)...
    if (describeEntry(before.listener) !== describeEntry(fresh.listener)) {
      const note = fresh.listener
        ? describeSuspension({ ...fresh.listener, scope: 'listener' })
        : 'the whole listener resumed: the agent applies and prunes again';
      log.warn({ suspended: fresh.listener !== undefined }, note);
      await this.#o.events.record(suspensions, {
        type: fresh.listener ? 'Warning' : 'Normal',
        reason: fresh.listener ? 'Suspended' : 'Resumed',
        note: `listener ${this.#o.listenerId}: ${note}`,
      });
    }
    // ...each deployment suspended or resumed on its own, on its inventory ConfigMap (where
    // `status DEPLOYMENT` finds its Events), else on the suspensions ConfigMap.
    for (const id of ids) {
      const was = before.deployments.get(id);
      const now = fresh.deployments.get(id);
      if (describeEntry(was) === describeEntry(now)) continue;
      const note = now
        ? describeSuspension({ ...now, scope: 'deployment' })
        : 'resumed: the agent applies and prunes it again';
      deploymentLogger(log, { deploymentId: id }).warn(
        { suspended: now !== undefined },
        `deployment ${note}`,
      );
      const placement = this.#o.inventories.get(id)[0];
      await this.#o.events.record(placement ? inventoryRef(id, placement.namespace) : suspensions, {
        type: now ? 'Warning' : 'Normal',
        reason: now ? 'Suspended' : 'Resumed',
        note: `deployment ${id} ${note}`,
      });
    }
    this.#count();
    await this.#acknowledge(fresh, signal);
  }

  async #read(signal: AbortSignal): Promise<Suspensions> {
    const configMap = await this.#o.kube.get(suspensionsRef(this.#o.agentNamespace), { signal });
    return readSuspensions(configMap, this.#o.listenerId);
  }

  #deploymentIds(): Set<string> {
    return new Set([...this.#o.desired.ids(), ...this.#o.inventories.deploymentIds()]);
  }

  #count(): void {
    const suspended = [...this.#deploymentIds()].filter((id) => this.of(id) !== undefined).length;
    this.#o.metrics.suspendedDeployments.set(suspended);
    this.#o.metrics.listenerSuspended.set(this.#current.listener ? 1 : 0);
  }

  /** Says which generation is in effect: `suspend` and `resume` wait for it. */
  async #acknowledge(suspensions: Suspensions, signal: AbortSignal): Promise<void> {
    if (suspensions.generation === suspensions.acknowledged) return;
    const annotations = { [observedAnnotation(this.#o.listenerId)]: String(suspensions.generation) };
    try {
      await this.#o.kube.mergePatch(
        suspensionsRef(this.#o.agentNamespace),
        { metadata: { annotations } },
        { signal },
      );
    } catch (error) {
      if (!signal.aborted)
        this.#o.logger.warn(
          { err: error },
          'acknowledging the suspensions failed; retrying at the next poll',
        );
    }
  }
}
