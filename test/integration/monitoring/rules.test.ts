// The PrometheusRule, held to Prometheus's own tools: `promtool check rules` on its groups, and
// `promtool test rules` (test/monitoring/alerts.test.yaml) with a firing scenario and a test of a
// healthy series (every evaluation silent) for every alert. A rule whose expression can never
// fire fails its scenario: each alert's test is shown to bite.
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readRules } from '../../support/monitoringQueries.ts';
import { promtool, writeRuleFile } from '../../support/prometheus.ts';

const ALERT_TESTS = new URL('../../monitoring/alerts.test.yaml', import.meta.url).pathname;

interface AlertTests {
  tests: {
    name: string;
    alert_rule_test: { eval_time: string; alertname: string; exp_alerts: unknown[] }[];
  }[];
}

/** A Prometheus duration (`90s`, `5m`, `1h30m`, `26h`) in seconds. */
function seconds(duration: string): number {
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };
  return [...duration.matchAll(/(\d+)(ms|s|m|h|d|w)/g)].reduce(
    (total, [, n = '0', u = 's']) => total + Number(n) * (unit[u] ?? 0),
    0,
  );
}

const rules = readRules();
const alerts = rules.spec.groups.flatMap((group) => group.rules).filter((rule) => rule.alert !== undefined);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'k8s-listener-rules-'));
  await copyFile(ALERT_TESTS, join(dir, 'alerts.test.yaml'));
}, 600_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the PrometheusRule under promtool', () => {
  it('passes promtool check rules', async () => {
    await writeRuleFile(join(dir, 'rules.yaml'));
    const result = await promtool(['check', 'rules', join(dir, 'rules.yaml')]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('passes promtool test rules', async () => {
    await writeRuleFile(join(dir, 'rules.yaml'));
    const result = await promtool(['test', 'rules', join(dir, 'alerts.test.yaml')]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('SUCCESS');
  });

  it('has, for every alert, a firing scenario and a test of a healthy series', async () => {
    const tests = parse(await readFile(ALERT_TESTS, 'utf8')) as AlertTests;
    const missing: string[] = [];
    for (const alert of alerts) {
      const own = tests.tests.map((test) => test.alert_rule_test.filter((c) => c.alertname === alert.alert));
      if (!own.some((cases) => cases.some((c) => c.exp_alerts.length > 0)))
        missing.push(`${alert.alert}: no firing case`);
      // A healthy series: a test in which every evaluation of the alert expects it silent, one of
      // them once its `for` has passed (before that it could not fire anyway). The quiet start of
      // a firing scenario is not one.
      const pending = seconds(alert.for ?? '0s');
      const healthy = own.some(
        (cases) =>
          cases.length > 0 &&
          cases.every((c) => c.exp_alerts.length === 0) &&
          cases.some((c) => seconds(c.eval_time) >= pending),
      );
      if (!healthy) missing.push(`${alert.alert}: no test of a healthy series`);
    }
    expect(missing).toEqual([]);
    expect(alerts.length).toBeGreaterThan(0);
  });

  it.each(alerts.map((alert) => alert.alert ?? ''))(
    'fails the tests when %s can never fire',
    async (name) => {
      const silenced = structuredClone(rules);
      for (const group of silenced.spec.groups)
        for (const rule of group.rules)
          if (rule.alert === name) Object.assign(rule, { expr: 'vector(1) == 2' });
      const mutant = await mkdtemp(join(dir, 'mutant-'));
      await writeRuleFile(join(mutant, 'rules.yaml'), silenced);
      await copyFile(ALERT_TESTS, join(mutant, 'alerts.test.yaml'));
      const result = await promtool(['test', 'rules', join(mutant, 'alerts.test.yaml')]);
      expect(result.code).not.toBe(0);
      expect(result.output).toContain(`alertname: ${name}`);
    },
  );
});
