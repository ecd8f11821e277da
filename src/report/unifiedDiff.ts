// Line diffs as unified diff text (`diff -u`, `kubectl diff`): Myers' O(ND) shortest edit script,
// grouped into hunks with context lines. The labels and lines are printed escaped (terminalText):
// they are a tenant's text, and each must stay one line of the diff. Pure.
import { terminalText } from './terminalText.ts';

export type EditKind = 'equal' | 'delete' | 'insert';

/** One step of an edit script: a line kept, deleted from `before`, or inserted from `after`. */
export interface Edit {
  readonly kind: EditKind;
  /** The line's text (from `before` for equal and delete, from `after` for insert). */
  readonly line: string;
}

export interface UnifiedDiffOptions {
  /** The `---` header (the old side), e.g. `Deployment/ns/web (live)` or `/dev/null`. */
  readonly fromLabel: string;
  /** The `+++` header (the new side). */
  readonly toLabel: string;
  /** Unchanged lines shown around each change. Default 3, as diff -u. */
  readonly context?: number;
}

/**
 * A shortest edit script from `before` to `after` (Myers 1986). Within each run of changes the
 * deletions come first, as diff prints them.
 */
export function diffLines(before: readonly string[], after: readonly string[]): Edit[] {
  const n = before.length;
  const m = after.length;
  const max = n + m;
  // v[k] is the furthest x reached on diagonal k = x - y; one snapshot per round d, kept for the
  // diagonals that round can read ([-d-1, d+1]), to walk the path back.
  const v = new Int32Array(2 * max + 3);
  const offset = max + 1;
  const trace: Int32Array[] = [];
  let rounds = -1;
  outer: for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && before[x] === after[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        rounds = d;
        break outer;
      }
    }
  }

  const reversed: Edit[] = [];
  let x = n;
  let y = m;
  for (let d = rounds; d >= 0; d--) {
    const snapshot = trace[d] ?? new Int32Array(0);
    const at = (k: number) => snapshot[k + d + 1] ?? 0;
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const previousK = down ? k + 1 : k - 1;
    const previousX = d === 0 ? 0 : at(previousK);
    const previousY = d === 0 ? 0 : previousX - previousK;
    while (x > previousX && y > previousY) {
      x--;
      y--;
      reversed.push({ kind: 'equal', line: before[x] ?? '' });
    }
    if (d === 0) break;
    if (down) {
      y--;
      reversed.push({ kind: 'insert', line: after[y] ?? '' });
    } else {
      x--;
      reversed.push({ kind: 'delete', line: before[x] ?? '' });
    }
  }
  return deletionsFirst(reversed.reverse());
}

/**
 * The unified diff of two texts given as lines; '' when they are equal. Hunk headers follow
 * GNU diff: `@@ -start,count +start,count @@`, `,1` left out, an empty side numbered by the line
 * before it.
 */
export function unifiedDiff(
  before: readonly string[],
  after: readonly string[],
  options: UnifiedDiffOptions,
): string {
  const context = options.context ?? 3;
  const edits = diffLines(before, after);
  const changed = edits.flatMap((edit, index) => (edit.kind === 'equal' ? [] : [index]));
  if (changed.length === 0) return '';

  // Group changes whose context would touch or overlap into one hunk.
  const groups: [number, number][] = [];
  for (const index of changed) {
    const last = groups.at(-1);
    if (last && index - last[1] - 1 <= 2 * context) last[1] = index;
    else groups.push([index, index]);
  }

  // Line numbers (0-based) of both sides at the start of each edit.
  const oldAt: number[] = [];
  const newAt: number[] = [];
  let oldLine = 0;
  let newLine = 0;
  for (const edit of edits) {
    oldAt.push(oldLine);
    newAt.push(newLine);
    if (edit.kind !== 'insert') oldLine++;
    if (edit.kind !== 'delete') newLine++;
  }

  const out = [`--- ${terminalText(options.fromLabel)}`, `+++ ${terminalText(options.toLabel)}`];
  for (const [first, last] of groups) {
    const start = Math.max(0, first - context);
    const end = Math.min(edits.length - 1, last + context);
    const slice = edits.slice(start, end + 1);
    const oldCount = slice.filter((e) => e.kind !== 'insert').length;
    const newCount = slice.filter((e) => e.kind !== 'delete').length;
    out.push(
      `@@ -${range(oldAt[start] ?? 0, oldCount)} +${range(newAt[start] ?? 0, newCount)} @@`,
      ...slice.map(
        (e) => `${e.kind === 'equal' ? ' ' : e.kind === 'delete' ? '-' : '+'}${terminalText(e.line)}`,
      ),
    );
  }
  return `${out.join('\n')}\n`;
}

function range(startIndex: number, count: number): string {
  if (count === 0) return `${startIndex},0`;
  return count === 1 ? `${startIndex + 1}` : `${startIndex + 1},${count}`;
}

/** Reorders each run of changes to its deletions, then its insertions (same edit, diff's order). */
function deletionsFirst(edits: Edit[]): Edit[] {
  const result: Edit[] = [];
  let run: Edit[] = [];
  const flush = () => {
    result.push(...run.filter((e) => e.kind === 'delete'), ...run.filter((e) => e.kind === 'insert'));
    run = [];
  };
  for (const edit of edits) {
    if (edit.kind === 'equal') {
      flush();
      result.push(edit);
    } else run.push(edit);
  }
  flush();
  return result;
}
