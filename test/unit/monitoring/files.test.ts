// The monitoring files: the chart's copies equal deploy/monitoring/, and their content is sound.
// (Their queries are held to Prometheus itself: promtool checks and unit-tests the rules, and a
// real Prometheus scraping a running agent answers every dashboard query, in
// test/integration/monitoring/*.test.ts.)
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CHART_FILES_DIR,
  dashboardQueries,
  MONITORING_DIR,
  MONITORING_FILES,
  readDashboard,
  readRules,
} from '../../support/monitoringQueries.ts';

describe('monitoring files', () => {
  it.each(MONITORING_FILES)('the chart carries deploy/monitoring/%s unchanged', (file) => {
    const chartCopy = readFileSync(CHART_FILES_DIR + file, 'utf8');
    const source = readFileSync(MONITORING_DIR + file, 'utf8');
    // On failure: cp deploy/monitoring/* charts/k8s-listener/files/
    expect(
      chartCopy === source,
      `charts/k8s-listener/files/${file} differs from deploy/monitoring/${file}`,
    ).toBe(true);
  });

  it('the rule file is a PrometheusRule with named, labelled, described alerts', () => {
    const rules = readRules();
    expect(rules.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rules.kind).toBe('PrometheusRule');
    const alerts = rules.spec.groups.flatMap((g) => g.rules);
    const names = alerts.map((a) => a.alert);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining([
        'K8sListenerDown',
        'K8sListenerAbsent',
        'K8sListenerNoLeader',
        'K8sListenerReconcileErrors',
        'K8sListenerRolloutStuck',
        'K8sListenerControlPlaneUnreachable',
        'K8sListenerPruneRefused',
      ]),
    );
    for (const alert of alerts) {
      expect(alert.labels?.severity, alert.alert).toMatch(/^(critical|warning|info)$/);
      expect(alert.annotations?.summary, alert.alert).toBeTruthy();
      expect(alert.annotations?.description, alert.alert).toBeTruthy();
      if (alert.for !== undefined) expect(alert.for, alert.alert).toMatch(/^\d+[smh]$/);
    }
    expect(alerts.find((a) => a.alert === 'K8sListenerNoLeader')?.for).toBe('5m');
  });

  it('the dashboard has unique panel ids, a Prometheus data source variable and a job filter on every panel query', () => {
    const dashboard = readDashboard();
    const ids = dashboard.panels.map((p) => (p as { id?: number }).id);
    expect(new Set(ids).size).toBe(ids.length);
    const variables = dashboard.templating?.list.map((v) => v.name);
    expect(variables).toEqual(['datasource', 'job']);
    for (const query of dashboardQueries().filter((q) => q.source.startsWith('dashboard panel')))
      expect(query.expr, query.source).toContain('job=~"$job"');
  });
});
