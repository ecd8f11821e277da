// What the last polls said each deployment of this listener should be: written by the poller,
// read by the reconciler. Keys are deployment ids.
import type { Deployment } from '../controlplane/schemas/index.ts';
import type { Target } from './target.ts';

export type DesiredEntry =
  | {
      readonly kind: 'present';
      readonly deployment: Deployment;
      readonly target: Target;
      readonly fingerprint: string;
      /** A digest of the listing's item as it came (held in memory only): the next poll takes an identical item unparsed. */
      readonly listedDigest?: string | undefined;
    }
  /**
   * Listed, but failing validation (an enum value this agent does not know, a wrong type, an
   * unreadable revision): nothing is written or deleted for it, and it is reported failed, on its
   * latest revision when that can be read.
   */
  | { readonly kind: 'invalid'; readonly message: string; readonly revisionId?: string | undefined }
  /** Gone from a complete listing (the prune guard allowed it): its objects are deleted. */
  | { readonly kind: 'gone' };

export class DesiredState {
  readonly #entries = new Map<string, DesiredEntry>();

  get(id: string): DesiredEntry | undefined {
    return this.#entries.get(id);
  }

  set(id: string, entry: DesiredEntry): void {
    this.#entries.set(id, entry);
  }

  delete(id: string): void {
    this.#entries.delete(id);
  }

  ids(): string[] {
    return [...this.#entries.keys()];
  }
}
