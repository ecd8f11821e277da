// The settled-attempt memo: which input of each deployment was tried and settled (succeeded, or
// failed for good), so that a failed revision is not retried forever. An attempt cut short by a
// transient error is not one. A verdict is tied to the served namespaces it was reached under: a
// change of those (a namespace created, an allow-list widened) makes every settled attempt count
// for nothing, and the caller requeues every deployment.

export interface SettledAttempt {
  /** The deployment's fingerprint (target.ts) when it settled. */
  readonly fingerprint: string;
  /** That attempt applied every object (its rollout failed, not its apply): drift is still repaired. */
  readonly applied: boolean;
}

export class SettledAttempts {
  readonly #attempts = new Map<string, SettledAttempt & { readonly served: number }>();
  /** Bumped at each change of the served namespaces. */
  #served = 0;

  /** The generation of the served namespaces now: what an attempt begun now settles under. */
  get served(): number {
    return this.#served;
  }

  /** The namespaces served changed: every settled attempt is tried once more. */
  namespacesChanged(): void {
    this.#served += 1;
  }

  /**
   * The attempt that settled this deployment under the namespaces served now; undefined when none
   * did, or its verdict was reached under namespaces since changed (possibly recorded after the
   * change, by a reconcile that began before it).
   */
  get(deploymentId: string): SettledAttempt | undefined {
    const attempt = this.#attempts.get(deploymentId);
    return attempt?.served === this.#served ? attempt : undefined;
  }

  /** An attempt begun under `served` settled. */
  settle(deploymentId: string, attempt: SettledAttempt, served: number): void {
    this.#attempts.set(deploymentId, { ...attempt, served });
  }

  forget(deploymentId: string): void {
    this.#attempts.delete(deploymentId);
  }
}
