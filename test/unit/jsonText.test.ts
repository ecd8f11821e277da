// How deep a parsed value nests, judged without recursion: at any depth JSON.parse builds.
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan, pathPastDepth } from '../../src/jsonText.ts';

const objects = (levels: number) => JSON.parse(`${'{"k":'.repeat(levels)}1${'}'.repeat(levels)}`) as unknown;
const arrays = (levels: number) => JSON.parse(`${'['.repeat(levels)}1${']'.repeat(levels)}`) as unknown;

describe('nesting depth', () => {
  it('counts the value itself as level 1, objects and arrays alike, scalars as nothing', () => {
    for (const make of [objects, arrays]) {
      expect(nestsDeeperThan(make(8), 8)).toBe(false);
      expect(nestsDeeperThan(make(9), 8)).toBe(true);
    }
    for (const scalar of [null, 1, 'text', true, undefined]) expect(nestsDeeperThan(scalar, 1)).toBe(false);
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({ a: {} }, 1)).toBe(true);
  });

  it('judges a value 100,000 deep (past any recursive walk) without overflowing', () => {
    expect(nestsDeeperThan(objects(100_000), 64)).toBe(true);
    expect(pathPastDepth(arrays(100_000), 64)).toHaveLength(64);
  });

  it('names the keys down to the first value past the bound, walking keys in order', () => {
    const value = { a: 1, b: [{ shallow: true }, { c: { d: { e: 'bottom' } } }], f: { g: { h: { i: 1 } } } };
    expect(pathPastDepth(value, 8)).toBeUndefined();
    // `{e}` is the fifth level under b[1] (value, b, b[1], c, d): past 4.
    expect(pathPastDepth(value, 4)).toEqual(['b', 1, 'c', 'd']);
    expect(pathPastDepth(value, 3)).toEqual(['b', 1, 'c']);
  });
});
