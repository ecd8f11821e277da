// How soon a rollout in progress is looked at again without a watch event. Each is rechecked
// every `rolloutRecheckMs` (what only its pods show, such as a back-off past its grace period,
// wakes nothing); when so many roll out at once that their rechecks alone would pass
// `rolloutRechecksPerSecond`, each waits longer, in proportion. A cold sync of a large listener on
// a slow cluster has every deployment DEPLOYING for many minutes: rechecks of all of them every
// 15 s would keep the workers and the CPU busy with nothing new. Rechecks and workload status
// changes (through the watches) alike wait behind the deployments not yet applied (outcome.ts).

export class RolloutRechecks {
  readonly #intervalMs: number;
  readonly #perSecond: number;
  /** The deployments whose last reconcile found their rollout in progress. */
  readonly #inProgress = new Set<string>();

  constructor(intervalMs: number, perSecond: number) {
    this.#intervalMs = intervalMs;
    this.#perSecond = perSecond;
  }

  /** The rollout of this deployment is in progress: how long until it is looked at again. */
  inProgress(deploymentId: string): number {
    this.#inProgress.add(deploymentId);
    const spreadMs = Math.ceil((this.#inProgress.size / this.#perSecond) * 1000);
    return Math.max(this.#intervalMs, spreadMs);
  }

  /** Its rollout is over, or it is not rolling out (done, failed, gone). */
  settled(deploymentId: string): void {
    this.#inProgress.delete(deploymentId);
  }

  /** Rollouts in progress, as the last reconciles found them. */
  get size(): number {
    return this.#inProgress.size;
  }
}
