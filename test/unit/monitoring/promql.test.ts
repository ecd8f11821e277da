import { describe, expect, it } from 'vitest';
import { metricNames, PromqlSyntaxError } from '../../support/promqlMetricNames.ts';

describe('metric names of a PromQL expression', () => {
  it.each([
    ['a bare name', 'up', ['up']],
    ['a selector with matchers', 'k8s_listener_leader{job="a",namespace=~"x|y"}', ['k8s_listener_leader']],
    ['matcher values that look like names or hold braces', 'a{l="b{c}", m!="rate(d[5m])"}', ['a']],
    ['a range and a function', 'rate(workqueue_adds_total{name="deployment"}[5m])', ['workqueue_adds_total']],
    [
      'an aggregation with by before its argument',
      'sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket[5m]))',
      ['controller_runtime_reconcile_time_seconds_bucket'],
    ],
    ['an aggregation with without after its argument', 'max(x_total) without (instance)', ['x_total']],
    [
      'histogram_quantile with a scalar',
      'histogram_quantile(0.99, sum by (le) (rate(h_bucket[$__rate_interval])))',
      ['h_bucket'],
    ],
    [
      'vector matching with on and group_left()',
      'rate(e_total[5m]) * on (job, instance) group_left () k8s_listener_build_info',
      ['e_total', 'k8s_listener_build_info'],
    ],
    ['group_left with labels to copy', 'a * on (pod) group_left (version, node) b', ['a', 'b']],
    ['set operators and bool', 'a > bool 1 unless b and c or d', ['a', 'b', 'c', 'd']],
    ['offset and @ modifiers', 'a offset 5m - a @ start()', ['a']],
    ['numbers and durations are not names', '1e3 + 0.5 * 1e-3 - 0x1f + a[1h30m:1m]', ['a']],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a Grafana variable, not a template
    ['Grafana variables', 'a{job=~"$job"}[$__rate_interval] / ${b} / b', ['a', 'b']],
    ['a __name__ matcher', '{__name__="k8s_listener_leader", job="x"}', ['k8s_listener_leader']],
    ['a recording-rule style name with colons', 'job:errors:rate5m > 0', ['job:errors:rate5m']],
    ['label_replace strings', 'label_replace(a, "dst", "$1", "src", "(.*)")', ['a']],
    [
      'absent and time()',
      'absent(k8s_listener_build_info) or time() - b > 60',
      ['k8s_listener_build_info', 'b'],
    ],
    ['a comment', 'a # b is not read\n+ c', ['a', 'c']],
    ['inf and nan literals', 'a > Inf or a < NaN', ['a']],
    ['count aggregation over a selector', 'count(up == 0)', ['up']],
  ])('%s', (_name, expression, expected) => {
    expect([...metricNames(expression)].sort()).toEqual([...expected].sort());
  });

  it.each([
    ['an unclosed matcher', 'a{job="x"'],
    ['an unclosed range', 'rate(a[5m)'],
    ['an unterminated string', 'a{job="x}'],
    ['an unclosed label list', 'sum by (job'],
  ])('refuses %s', (_name, expression) => {
    expect(() => metricNames(expression)).toThrow(PromqlSyntaxError);
  });
});
