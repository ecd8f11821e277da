// How long each deployment has waited, and for what: a reconcile that waits (a namespace not there,
// a reference not made yet — WaitingError) is reported in progress with its reason and retried,
// and failed only once it has waited past the grace, as a rollout is (`reconcile.failureGraceMs`).
// A wait for another reason starts anew; a reconcile that gets past it forgets it.

export class WaitingSince {
  readonly #graceMs: number;
  readonly #now: () => number;
  readonly #since = new Map<string, { readonly reason: string; readonly at: number }>();

  constructor(graceMs: number, now: () => number = Date.now) {
    this.#graceMs = graceMs;
    this.#now = now;
  }

  /** The deployment waits for `reason` now: whether it has waited for it past the grace. */
  pastGrace(deploymentId: string, reason: string): boolean {
    const now = this.#now();
    const held = this.#since.get(deploymentId);
    const at = held?.reason === reason ? held.at : now;
    this.#since.set(deploymentId, { reason, at });
    return now - at >= this.#graceMs;
  }

  /** It waits no more (it got past it, failed otherwise, or is gone). */
  forget(deploymentId: string): void {
    this.#since.delete(deploymentId);
  }
}
