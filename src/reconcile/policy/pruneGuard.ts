// The rule on deletions (docs/design.md, "Deletion needs a complete listing"): a deployment's
// objects go only when a complete listing shows it gone, and a sudden mass disappearance is
// refused.

export interface PruneGuardLimits {
  readonly maxVanishedFraction: number;
  readonly maxVanishedCount: number;
}

export type PruneDecision =
  | { readonly allowed: true; readonly vanished: readonly string[] }
  | { readonly allowed: false; readonly vanished: readonly string[]; readonly reason: string };

/**
 * `known`: deployments this listener has objects for; `listed`: those of a complete, successful
 * listing. Deletions asked for explicitly (AWAITING_DELETE) are not subject to this guard.
 */
export function decideVanished(
  known: ReadonlySet<string>,
  listed: ReadonlySet<string>,
  limits: PruneGuardLimits,
): PruneDecision {
  const vanished = [...known].filter((id) => !listed.has(id)).sort();
  if (vanished.length === 0) return { allowed: true, vanished };
  if (listed.size === 0) {
    return {
      allowed: false,
      vanished,
      reason: `the listing is empty while ${known.size} deployments have objects: refusing to delete`,
    };
  }
  const fraction = vanished.length / known.size;
  if (vanished.length > limits.maxVanishedCount && fraction > limits.maxVanishedFraction) {
    return {
      allowed: false,
      vanished,
      reason: `${vanished.length} of ${known.size} deployments vanished at once (over ${Math.round(limits.maxVanishedFraction * 100)} % and ${limits.maxVanishedCount}): refusing to delete`,
    };
  }
  return { allowed: true, vanished };
}
