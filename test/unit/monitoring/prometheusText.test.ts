import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ExpositionError, parseExposition, seriesNames } from '../../support/prometheusText.ts';

describe('Prometheus text exposition parser', () => {
  it('reads what prom-client writes: families, types, help, labels with escapes, histograms', async () => {
    const registry = new Registry();
    new Counter({
      name: 'c_total',
      help: 'a "counter"\nwith a newline \\ and backslash',
      labelNames: ['l'],
      registers: [registry],
    }).inc({ l: 'quote " backslash \\ newline \n end' }, 3);
    new Histogram({ name: 'h_seconds', help: 'h', buckets: [0.1, 1], registers: [registry] }).observe(0.5);
    const families = parseExposition(await registry.metrics());
    const counter = families.get('c_total');
    expect(counter?.type).toBe('counter');
    expect(counter?.help).toBe('a "counter"\nwith a newline \\ and backslash');
    expect(counter?.samples).toEqual([
      { name: 'c_total', labels: { l: 'quote " backslash \\ newline \n end' }, value: 3 },
    ]);
    const histogram = families.get('h_seconds');
    expect(histogram?.type).toBe('histogram');
    expect(histogram?.samples.map((s) => [s.name, s.labels.le, s.value])).toEqual([
      ['h_seconds_bucket', '0.1', 0],
      ['h_seconds_bucket', '1', 1],
      ['h_seconds_bucket', '+Inf', 1],
      ['h_seconds_sum', undefined, 0.5],
      ['h_seconds_count', undefined, 1],
    ]);
    expect(seriesNames({ name: 'h_seconds', type: 'histogram' })).toEqual([
      'h_seconds_bucket',
      'h_seconds_sum',
      'h_seconds_count',
    ]);
  });

  it('reads values, timestamps and untyped samples', () => {
    const families = parseExposition('a 1.5e3 1700000000000\nb{x="y"} +Inf\nc -Inf\nd NaN\ne Nan\n');
    expect(families.get('a')?.samples[0]?.value).toBe(1500);
    expect(families.get('a')?.type).toBe('untyped');
    expect(families.get('b')?.samples[0]?.value).toBe(Number.POSITIVE_INFINITY);
    expect(families.get('c')?.samples[0]?.value).toBe(Number.NEGATIVE_INFINITY);
    expect(families.get('d')?.samples[0]?.value).toBeNaN();
    expect(families.get('e')?.samples[0]?.value).toBeNaN(); // as prom-client writes it
  });

  it.each([
    ['a bad metric name', '1abc 1'],
    ['a bad label name', 'a{1l="x"} 1'],
    ['an unterminated label value', 'a{l="x} 1'],
    ['a missing value', 'a{l="x"}'],
    ['a bad value', 'a{l="x"} one'],
    ['a bad escape', 'a{l="\\t"} 1'],
    ['a repeated label', 'a{l="x",l="y"} 1'],
    ['an unknown type', '# TYPE a meter\na 1'],
    ['a TYPE after samples', 'a 1\n# TYPE a gauge'],
    ['two HELP lines', '# HELP a x\n# HELP a y\na 1'],
    [
      'buckets that are not cumulative',
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\nh_sum 1',
    ],
    ['a histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\nh_sum 1'],
    [
      'a +Inf bucket that differs from _count',
      '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_count 2\nh_sum 1',
    ],
  ])('refuses %s', (_name, text) => {
    expect(() => parseExposition(text)).toThrow(ExpositionError);
  });
});
