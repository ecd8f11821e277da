// The monitoring files of deploy/monitoring/, read: the dashboard's PromQL expressions (panels and
// variables), each with where it came from, and the PrometheusRule.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export const MONITORING_DIR = new URL('../../deploy/monitoring/', import.meta.url).pathname;
export const CHART_FILES_DIR = new URL('../../charts/k8s-listener/files/', import.meta.url).pathname;
export const MONITORING_FILES = ['grafana-dashboard.json', 'prometheus-rule.yaml'] as const;

export interface Query {
  /** e.g. `dashboard panel "Queue depth" A`, `rule K8sListenerNoLeader`. */
  readonly source: string;
  readonly expr: string;
}

interface Panel {
  readonly title?: string;
  readonly panels?: Panel[];
  readonly targets?: { readonly refId?: string; readonly expr?: string }[];
}

interface Dashboard {
  readonly panels: Panel[];
  readonly templating?: { readonly list: { readonly name: string; readonly query?: unknown }[] };
}

export interface RuleFile {
  readonly apiVersion: string;
  readonly kind: string;
  readonly spec: {
    readonly groups: {
      readonly name: string;
      readonly rules: {
        readonly alert?: string;
        readonly record?: string;
        readonly expr: string;
        readonly for?: string;
        readonly labels?: Record<string, string>;
        readonly annotations?: Record<string, string>;
      }[];
    }[];
  };
}

export function readDashboard(dir = MONITORING_DIR): Dashboard {
  return JSON.parse(readFileSync(`${dir}grafana-dashboard.json`, 'utf8')) as Dashboard;
}

export function readRules(dir = MONITORING_DIR): RuleFile {
  return parse(readFileSync(`${dir}prometheus-rule.yaml`, 'utf8')) as RuleFile;
}

export function dashboardQueries(dashboard: Dashboard = readDashboard()): Query[] {
  const queries: Query[] = [];
  const walk = (panels: readonly Panel[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? [])
        if (target.expr !== undefined)
          queries.push({ source: `dashboard panel "${panel.title}" ${target.refId}`, expr: target.expr });
      walk(panel.panels ?? []);
    }
  };
  walk(dashboard.panels);
  for (const variable of dashboard.templating?.list ?? []) {
    const query = variable.query as { query?: string } | string | undefined;
    const text = typeof query === 'string' ? query : query?.query;
    if (text === undefined || text === 'prometheus') continue;
    // Grafana's label_values(metric, label): the metric part is PromQL, the label is not.
    const labelValues = /^label_values\((.+),\s*\w+\)$/.exec(text.trim());
    queries.push({
      source: `dashboard variable ${variable.name}`,
      expr: labelValues ? (labelValues[1] ?? '') : text,
    });
  }
  return queries;
}
