// One copy of each repeated string the watch cache holds. JSON.parse makes a new string for every
// value it reads, so the listener id, a deployment's id and revision id, the managed-by label and
// the namespace were each held once per object (the listener id some 12,800 times at 1,000
// deployments). Counted, so that a value no cached object carries any more is let go.

export class StringPool {
  readonly #entries = new Map<string, { readonly value: string; holders: number }>();

  /** The pooled copy of `value`, now held once more. */
  take(value: string): string {
    const entry = this.#entries.get(value);
    if (entry) {
      entry.holders++;
      return entry.value;
    }
    this.#entries.set(value, { value, holders: 1 });
    return value;
  }

  /** One holder of `value` let it go; the last one removes it from the pool. */
  release(value: string): void {
    const entry = this.#entries.get(value);
    if (!entry) return;
    entry.holders--;
    if (entry.holders <= 0) this.#entries.delete(value);
  }

  /** Distinct values held. */
  get size(): number {
    return this.#entries.size;
  }
}
