// Which items of a deployment listing are this listener's: `run` (the poller), `diff`, `status`
// and `suspend` all ask this one function, so what they show is what the agent acts on.
import type { CompleteListing, InvalidItem } from '../../controlplane/client.ts';
import type { Deployment } from '../../controlplane/schemas/index.ts';
import { isBoundTo } from '../../objects/ownership.ts';

export interface ListenerItems {
  /** The valid deployments bound to this listener. */
  readonly mine: readonly Deployment[];
  /** Items failing validation that are this listener's: it has their objects, or their listener id says so. */
  readonly invalid: readonly (InvalidItem & { readonly id: string })[];
  /** Another listener's items that failed validation, by what can be read of them. */
  readonly foreign: readonly InvalidItem[];
  /**
   * Whether absence from the listing proves a deployment gone: false when an item whose id and
   * owner cannot be read may be one this listener runs (docs/design.md, "Deletion needs a
   * complete listing").
   */
  readonly complete: boolean;
}

/**
 * Sorts a listing. `known`: the deployments this listener has objects of, or holds as desired —
 * an unreadable item with such an id is this listener's, whatever else it says.
 */
export function listenerItems(
  listing: CompleteListing<Deployment>,
  listenerId: string,
  known: ReadonlySet<string>,
): ListenerItems {
  const invalid: (InvalidItem & { readonly id: string })[] = [];
  const foreign: InvalidItem[] = [];
  let complete = true;
  for (const item of listing.invalid) {
    const owner = item.identity?.listenerId;
    if (owner !== undefined && owner !== listenerId && (item.id === undefined || !known.has(item.id))) {
      foreign.push(item);
      continue;
    }
    // Whose it is cannot be read, nor which it is: it may be one this listener runs.
    if (item.id === undefined) {
      complete = false;
      continue;
    }
    if (known.has(item.id) || owner === listenerId) invalid.push({ ...item, id: item.id });
  }
  const mine = listing.items.filter((d) => isBoundTo(d, listenerId));
  return { mine, invalid, foreign, complete };
}
