// One model of a change to one object, for `run` and `diff` alike: why the applier writes it
// (missing, our render of it changed, a field of ours edited) and what that does to it (create,
// configure, nothing). The applier plans with it and logs its words; `diff` shows the same change
// beside the API server's dry run, so that what it prints is what `run` would do.
import type { ChangeAction } from '../../kube/serverDiff.ts';

/** Why an object is written: missing, our render of it changed, or a field of ours was edited (its path). */
export type WriteReason =
  | { readonly kind: 'missing' }
  | { readonly kind: 'spec-changed' }
  | { readonly kind: 'drift'; readonly path: string };

/** A change as run makes it: its action, and why in the words run logs. */
export interface Change {
  readonly action: Exclude<ChangeAction, 'prune'>;
  readonly reason: string;
}

/** The words of a write's reason, as logged: `missing`, `spec changed`, or the drifted field's path. */
export function describeWrite(why: WriteReason): string {
  return why.kind === 'missing' ? 'missing' : why.kind === 'spec-changed' ? 'spec changed' : why.path;
}

/** What run does to an object, from why it writes it (undefined: found as desired). */
export function changeOf(why: WriteReason | undefined): Change {
  if (why === undefined) return { action: 'unchanged', reason: 'as desired: run writes nothing' };
  return { action: why.kind === 'missing' ? 'create' : 'configure', reason: describeWrite(why) };
}
