// The canonical hash writes what it always wrote: every object's keys sorted, whether it copies
// an object to sort it or takes one already in order as it is (spec hashes stored in clusters
// must not change with the agent's version).

import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalHash } from '../../../src/render/canonicalHash.ts';

/** The first canonical form: a sorted copy of every object. */
function copiedCanonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copiedCanonical);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, copiedCanonical((value as Record<string, unknown>)[key])]),
    );
  return value;
}
const reference = (value: unknown) =>
  createHash('sha256')
    .update(JSON.stringify(copiedCanonical(value)))
    .digest('hex')
    .slice(0, 16);

describe('canonicalHash', () => {
  it('hashes any JSON value as the sorted copy did', () => {
    const key = fc.constantFrom('a', 'b', 'name', 'value', 'valueFrom', '10', '9', 'Z', 'é', '');
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 1 }),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(key, tie('value'), { maxKeys: 5 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        expect(canonicalHash(value)).toBe(reference(value));
      }),
      { numRuns: 2_000 },
    );
  });

  it('writes a Date and undefined as JSON.stringify does after the sorted copy', () => {
    const value = { when: new Date(0), list: [undefined, 1], gone: undefined, b: { d: 1, c: 2 } };
    expect(canonicalHash(value)).toBe(reference(value));
  });
});
