// The prune guard: how many listed deployments may vanish at once before pruning stops.
import { describe, expect, it } from 'vitest';
import { decideVanished } from '../../../../src/reconcile/policy/pruneGuard.ts';

describe('prune guard', () => {
  const limits = { maxVanishedFraction: 0.5, maxVanishedCount: 2 };
  const ids = (n: number) => new Set(Array.from({ length: n }, (_, i) => `d${i}`));

  it.each([
    ['nothing vanished', 4, ['d0', 'd1', 'd2', 'd3'], true, []],
    ['one of four vanished', 4, ['d0', 'd1', 'd2'], true, ['d3']],
    ['two of two vanished (small fleet, under the count)', 2, ['x'], true, ['d0', 'd1']],
    ['three of four vanished', 4, ['d0'], false, ['d1', 'd2', 'd3']],
    ['an empty listing', 4, [], false, ['d0', 'd1', 'd2', 'd3']],
    ['an empty listing with one known', 1, [], false, ['d0']],
  ])('%s', (_name, known, listed, allowed, vanished) => {
    const decision = decideVanished(ids(known), new Set(listed), limits);
    expect([decision.allowed, decision.vanished]).toEqual([allowed, vanished]);
  });
});
