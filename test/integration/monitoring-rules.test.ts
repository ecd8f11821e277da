// The PrometheusRule, held to Prometheus's own tools: `promtool check rules` on its groups, and
// `promtool test rules` (test/monitoring/alerts.test.yaml) with a firing scenario and a healthy
// series for every alert. A rule whose expression can never fire fails its scenario: each alert's
// test is shown to bite.
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readRules } from '../support/monitoringQueries.ts';
import { promtool, writeRuleFile } from '../support/prometheus.ts';

const ALERT_TESTS = new URL('../monitoring/alerts.test.yaml', import.meta.url).pathname;

interface AlertTests {
  tests: { name: string; alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
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

  it('passes promtool test rules: every alert fires in its scenario and is silent in a healthy one', async () => {
    await writeRuleFile(join(dir, 'rules.yaml'));
    const result = await promtool(['test', 'rules', join(dir, 'alerts.test.yaml')]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('SUCCESS');

    const tests = parse(await readFile(ALERT_TESTS, 'utf8')) as AlertTests;
    const cases = tests.tests.flatMap((test) => test.alert_rule_test);
    for (const alert of alerts) {
      const own = cases.filter((c) => c.alertname === alert.alert);
      expect(
        own.some((c) => c.exp_alerts.length > 0),
        `${alert.alert} has a firing case`,
      ).toBe(true);
      expect(
        own.some((c) => c.exp_alerts.length === 0),
        `${alert.alert} has a silent case`,
      ).toBe(true);
    }
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
