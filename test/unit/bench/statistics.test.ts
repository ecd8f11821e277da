// bench/statistics.ts: the median and the nearest-rank quantile the benchmarks report.
import { describe, expect, it } from 'vitest';
import { median, quantile } from '../../../bench/statistics.ts';

describe('bench/statistics.ts', () => {
  it('takes the middle value, or the mean of the two middle ones, in any order; NaN for none', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('takes the quantile as the nearest rank at or below, the last value past the end', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(sorted, 0.5)).toBe(51);
    expect(quantile(sorted, 0.99)).toBe(100);
    expect(quantile([7], 0.99)).toBe(7);
    expect(quantile([], 0.5)).toBeNaN();
  });
});
