// A change set as `kubectl diff` prints it: one unified diff per object that would change, YAML
// on both sides with keys sorted (a stable order), `/dev/null` for the side that does not exist.
// Secret values were masked before they got here (src/kube/serverDiff.ts). Both sides are a
// tenant's objects: their YAML is terminal-safe (src/report/terminalText.ts). Pure.
import type { ChangeAction, ChangeSetEntry } from '../kube/serverDiff.ts';
import { SecretDataSchema } from '../objects/fields.ts';
import { formatRef } from '../objects/objectRef.ts';
import { terminalLine, terminalYaml } from './terminalText.ts';
import { unifiedDiff } from './unifiedDiff.ts';

// A Secret key that changed reads `(changed)` on both sides; the line diff must still see two
// different lines, so each side carries its own stand-in until the text is printed.
const CHANGED = '(changed)';
const CHANGED_BEFORE = 'k8s-listener-changed-secret-value-before';
const CHANGED_AFTER = 'k8s-listener-changed-secret-value-after';

/**
 * YAML with keys in sorted order; YAML 1.1 quoting, as the render command prints; a string with a
 * control character double-quoted, with it escaped.
 */
export function objectYaml(object: Record<string, unknown>): string {
  return terminalYaml(object, { lineWidth: 0, version: '1.1', sortMapEntries: true });
}

/** The unified diff of one entry; '' when it is unchanged. */
export function formatChange(entry: ChangeSetEntry): string {
  if (entry.action === 'unchanged') return '';
  const name = formatRef(entry.ref);
  const before = entry.before === undefined ? [] : yamlLines(standIn(entry.before, CHANGED_BEFORE));
  const after = entry.after === undefined ? [] : yamlLines(standIn(entry.after, CHANGED_AFTER));
  const text = unifiedDiff(before, after, {
    fromLabel: entry.before === undefined ? '/dev/null' : `${name} (live)`,
    toLabel: entry.after === undefined ? '/dev/null' : `${name} (after apply)`,
  });
  const diff = text.replaceAll(CHANGED_BEFORE, CHANGED).replaceAll(CHANGED_AFTER, CHANGED);
  // Why `run` writes it: the path of a drifted field is the tenant's too, so terminal-safe.
  return entry.reason === undefined ? diff : `${terminalLine(`# ${name}: ${entry.reason}`)}${diff}`;
}

export type ChangeCounts = Readonly<Record<ChangeAction, number>>;

export function countChanges(entries: readonly ChangeSetEntry[]): ChangeCounts {
  const counts = { create: 0, configure: 0, unchanged: 0, prune: 0 };
  for (const entry of entries) counts[entry.action]++;
  return counts;
}

/** `1 to create, 2 to configure, 1 to prune`, or `no changes`. */
export function describeCounts(counts: ChangeCounts): string {
  const parts = [
    counts.create > 0 ? `${counts.create} to create` : '',
    counts.configure > 0 ? `${counts.configure} to configure` : '',
    counts.prune > 0 ? `${counts.prune} to prune` : '',
  ].filter(Boolean);
  return parts.length === 0 ? 'no changes' : parts.join(', ');
}

function yamlLines(object: Record<string, unknown>): string[] {
  return objectYaml(object).replace(/\n$/, '').split('\n');
}

function standIn(object: Record<string, unknown>, marker: string): Record<string, unknown> {
  const values = object.kind === 'Secret' ? SecretDataSchema.safeParse(object).data?.data : undefined;
  if (values === undefined || values === null) return object;
  const data = Object.fromEntries(
    Object.entries(values).map(([key, value]) => [key, value === CHANGED ? marker : value]),
  );
  return { ...object, data };
}
