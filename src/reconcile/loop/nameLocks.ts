// Object names held by a reconcile while it reads and applies them: two deployments whose objects
// share a name (generated names that collide) never apply at once, so the second always reads the
// first's object and is refused, instead of both reading "absent" and overwriting each other.

/**
 * All-or-nothing locks on sets of keys: a holder gets every key it asked for at once, so two
 * holders can never each wait on a key of the other. Waiters are served in arrival order among
 * those whose keys are all free.
 */
export class NameLocks {
  readonly #held = new Set<string>();
  readonly #waiting: { keys: readonly string[]; grant: () => void }[] = [];

  /** Resolves once every key is held by this caller; the function it returns releases them. */
  async acquire(keys: readonly string[], signal?: AbortSignal): Promise<() => void> {
    const unique = [...new Set(keys)];
    // Free, and wanted by no earlier waiter (which would otherwise wait behind newcomers forever).
    const queuedFor = (key: string) => this.#waiting.some((w) => w.keys.includes(key));
    if (this.#free(unique) && !unique.some(queuedFor)) return this.#take(unique);
    signal?.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const waiter = { keys: unique, grant: resolve };
      this.#waiting.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.#waiting.indexOf(waiter);
          if (at >= 0) {
            this.#waiting.splice(at, 1);
            reject(signal.reason);
          }
        },
        { once: true },
      );
    });
    return this.#release(unique);
  }

  /** Keys held now (for tests and metrics). */
  get size(): number {
    return this.#held.size;
  }

  #free(keys: readonly string[]): boolean {
    return keys.every((key) => !this.#held.has(key));
  }

  #take(keys: readonly string[]): () => void {
    for (const key of keys) this.#held.add(key);
    return this.#release(keys);
  }

  #release(keys: readonly string[]): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const key of keys) this.#held.delete(key);
      this.#grantWaiting();
    };
  }

  /**
   * Grants, in order, every waiter whose keys are all free and wanted by no earlier waiter still
   * waiting (each grant takes its keys first).
   */
  #grantWaiting(): void {
    const passed = new Set<string>();
    for (let i = 0; i < this.#waiting.length; ) {
      const waiter = this.#waiting[i];
      if (waiter && this.#free(waiter.keys) && !waiter.keys.some((key) => passed.has(key))) {
        this.#waiting.splice(i, 1);
        for (const key of waiter.keys) this.#held.add(key);
        waiter.grant();
      } else {
        for (const key of waiter?.keys ?? []) passed.add(key);
        i++;
      }
    }
  }
}
