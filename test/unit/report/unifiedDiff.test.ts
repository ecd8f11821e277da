import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffLines, unifiedDiff } from '../../../src/report/unifiedDiff.ts';

const lines = (text: string) => (text === '' ? [] : text.split(' '));
const labels = { fromLabel: 'old', toLabel: 'new' };

describe('unifiedDiff', () => {
  // Expected texts are what GNU `diff -u` prints for the same inputs (headers aside).
  it.each([
    ['equal inputs give no diff', 'a b c', 'a b c', 3, ''],
    ['one line replaced', 'x', 'y', 3, '@@ -1 +1 @@\n-x\n+y\n'],
    ['a line deleted in the middle', 'a b c', 'a c', 3, '@@ -1,3 +1,2 @@\n a\n-b\n c\n'],
    ['from nothing', '', 'a b', 3, '@@ -0,0 +1,2 @@\n+a\n+b\n'],
    ['to nothing', 'a b', '', 3, '@@ -1,2 +0,0 @@\n-a\n-b\n'],
    ['context 1 at the start', 'a b c d e f g h', 'b c d e f g h', 1, '@@ -1,2 +1 @@\n-a\n b\n'],
    [
      'changes far apart make two hunks',
      'a b c d e f g h i j k l m',
      'a B c d e f g h i j k l m n',
      3,
      '@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -11,3 +11,4 @@\n k\n l\n m\n+n\n',
    ],
    [
      'changes whose contexts touch make one hunk',
      'a b c d e f g h i',
      'a B c d e f g H i',
      3,
      '@@ -1,9 +1,9 @@\n a\n-b\n+B\n c\n d\n e\n f\n g\n-h\n+H\n i\n',
    ],
    ['an insertion at the end', 'a b c d e', 'a b c d e f', 2, '@@ -4,2 +4,3 @@\n d\n e\n+f\n'],
  ])('%s', (_name, before, after, context, hunks) => {
    const text = unifiedDiff(lines(before), lines(after), { ...labels, context });
    expect(text).toBe(hunks === '' ? '' : `--- old\n+++ new\n${hunks}`);
  });

  it('prints the deletions of a change before its insertions', () => {
    expect(unifiedDiff(['a', 'b', 'c'], ['x', 'y', 'c'], labels)).toBe(
      '--- old\n+++ new\n@@ -1,3 +1,3 @@\n-a\n-b\n+x\n+y\n c\n',
    );
  });
});

/** Length of a longest common subsequence, by dynamic programming: the reference for minimality. */
function lcsLength(a: readonly string[], b: readonly string[]): number {
  const row = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    let diagonal = 0;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] ?? 0;
      row[j] = x === b[j - 1] ? diagonal + 1 : Math.max(above, row[j - 1] ?? 0);
      diagonal = above;
    }
  }
  return row[b.length] ?? 0;
}

/** Applies a unified diff to `before`, checking every context and deleted line on the way. */
function applyPatch(before: readonly string[], patch: string): string[] {
  const result: string[] = [];
  let cursor = 0;
  const body = patch.split('\n').slice(2, -1);
  for (let i = 0; i < body.length; i++) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(body[i] ?? '');
    if (!header) throw new Error(`not a hunk header: ${body[i]}`);
    const count = header[2] === undefined ? 1 : Number(header[2]);
    const start = count === 0 ? Number(header[1]) : Number(header[1]) - 1;
    result.push(...before.slice(cursor, start));
    cursor = start;
    while (i + 1 < body.length && !body[i + 1]?.startsWith('@@')) {
      const line = body[++i] ?? '';
      const text = line.slice(1);
      if (line.startsWith('+')) result.push(text);
      else {
        if (before[cursor] !== text) throw new Error(`line ${cursor + 1} is not ${text}`);
        if (line.startsWith(' ')) result.push(text);
        cursor++;
      }
    }
  }
  return [...result, ...before.slice(cursor)];
}

describe('diffLines and unifiedDiff properties', () => {
  const side = fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { maxLength: 40 });

  it('gives a shortest edit script that turns before into after', () => {
    fc.assert(
      fc.property(side, side, (before, after) => {
        const edits = diffLines(before, after);
        expect(edits.filter((e) => e.kind !== 'insert').map((e) => e.line)).toEqual(before);
        expect(edits.filter((e) => e.kind !== 'delete').map((e) => e.line)).toEqual(after);
        const changes = edits.filter((e) => e.kind !== 'equal').length;
        expect(changes).toBe(before.length + after.length - 2 * lcsLength(before, after));
      }),
      { numRuns: 500 },
    );
  });

  it('prints hunks that reproduce after when applied to before, for any context', () => {
    fc.assert(
      fc.property(side, side, fc.integer({ min: 0, max: 4 }), (before, after, context) => {
        const patch = unifiedDiff(before, after, { ...labels, context });
        if (patch === '') expect(after).toEqual(before);
        else expect(applyPatch(before, patch)).toEqual(after);
      }),
      { numRuns: 500 },
    );
  });
});
