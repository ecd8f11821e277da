import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { declaredFamilies, readSamples, sampleValue } from '../../support/metricSamples.ts';

describe('the sample reader of the metrics tests', () => {
  it('reads what prom-client writes: escaped label values, braces in them, histogram series', async () => {
    const registry = new Registry();
    new Counter({ name: 'c_total', help: 'c', labelNames: ['l', 'endpoint'], registers: [registry] }).inc(
      { l: 'quote " backslash \\ newline \n end', endpoint: '/v2/deployments/{deployment_id}' },
      3,
    );
    new Histogram({ name: 'h_seconds', help: 'h', buckets: [1], registers: [registry] }).observe(0.5);
    const text = await registry.metrics();
    const samples = readSamples(text);
    expect(samples[0]).toEqual({
      name: 'c_total',
      labels: { l: 'quote " backslash \\ newline \n end', endpoint: '/v2/deployments/{deployment_id}' },
      value: 3,
    });
    expect(sampleValue(samples, 'h_seconds_bucket', { le: '+Inf' })).toBe(1);
    expect(sampleValue(samples, 'h_seconds_sum')).toBe(0.5);
    expect(sampleValue(samples, 'h_seconds_count', { le: '1' })).toBeUndefined();
    expect(declaredFamilies(text)).toEqual(new Set(['c_total', 'h_seconds']));
  });

  it('reads timestamps, infinities and NaN as Prometheus does', () => {
    const samples = readSamples('a 1.5e3 1700000000000\nb{x="y"} +Inf\nc -Inf\nd Nan\n');
    expect(samples.map((s) => s.value)).toEqual([
      1500,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      Number.NaN,
    ]);
  });
});
