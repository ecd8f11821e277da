// The chart's monitoring objects: off by default; when enabled, a PrometheusRule carrying exactly
// the rules of deploy/monitoring/ (its CRD is not installed in the test cluster: checked by
// structure) and a Grafana dashboard ConfigMap the API server accepts (server-side dry run).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { adminKube, createNamespace, kubectlWithInput, uniqueNamespace } from '../../support/adminKube.ts';
import { MONITORING_DIR, readRules } from '../../support/monitoringQueries.ts';

const run = promisify(execFile);
const kubeconfigPath = inject('kubeconfigPath');
const binDir = inject('clusterBinDir');
const chart = new URL('../../../charts/k8s-listener', import.meta.url).pathname;
const exampleValues = new URL('../../../deploy/values-example.yaml', import.meta.url).pathname;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  data?: Record<string, string>;
  spec?: { groups?: unknown };
}

async function template(namespace: string, sets: string[]): Promise<{ text: string; manifests: Manifest[] }> {
  const args = [
    'template',
    'agent',
    chart,
    '-n',
    namespace,
    '-f',
    exampleValues,
    '--set',
    'controlPlane.apiKey=k',
  ];
  for (const set of sets) args.push('--set', set);
  const { stdout } = await run(join(binDir, 'helm'), args, { maxBuffer: 16 * 1024 * 1024 });
  const manifests = parseAllDocuments(stdout)
    .map((doc) => doc.toJSON() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
  return { text: stdout, manifests };
}

describe('chart monitoring objects', () => {
  it('renders neither by default', async () => {
    const { manifests } = await template('listener', []);
    expect(manifests.map((m) => m.kind)).not.toContain('PrometheusRule');
    expect(manifests.filter((m) => m.metadata.labels?.grafana_dashboard === '1')).toEqual([]);
  });

  it('renders the PrometheusRule of deploy/monitoring/ and a dashboard ConfigMap the API server accepts', async () => {
    const release = uniqueNamespace('mon');
    const dashboards = uniqueNamespace('grafana');
    const target = uniqueNamespace('apps');
    const kube = adminKube(kubeconfigPath);
    for (const ns of [release, dashboards, target]) await createNamespace(kube, ns);
    const { manifests } = await template(release, [
      'createNamespaces=false',
      `namespaces={${target}}`,
      'monitoring.prometheusRule.enabled=true',
      'monitoring.prometheusRule.labels.release=prometheus',
      'monitoring.grafanaDashboard.enabled=true',
      `monitoring.grafanaDashboard.namespace=${dashboards}`,
      'monitoring.grafanaDashboard.annotations.grafana_folder=Platform',
    ]);

    // The PrometheusRule, by structure: its CRD is not in the test cluster.
    const rules = manifests.filter((m) => m.kind === 'PrometheusRule');
    expect(rules).toHaveLength(1);
    const [rule] = rules;
    expect(rule?.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rule?.metadata).toMatchObject({
      name: 'agent-k8s-listener',
      namespace: release,
      labels: { release: 'prometheus', 'app.kubernetes.io/instance': 'agent' },
    });
    expect(rule?.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(rule?.spec?.groups).toEqual(readRules().spec.groups);
    expect(Object.keys(rule?.spec ?? {})).toEqual(['groups']);

    // The dashboard ConfigMap: the file's bytes, labelled for the Grafana sidecar.
    const [configMap, ...others] = manifests.filter((m) => m.metadata.labels?.grafana_dashboard === '1');
    expect(others).toEqual([]);
    expect(configMap?.kind).toBe('ConfigMap');
    expect(configMap?.metadata.namespace).toBe(dashboards);
    expect(configMap?.metadata.annotations).toEqual({ grafana_folder: 'Platform' });
    const json = configMap?.data?.['k8s-listener.json'] ?? '';
    expect(json).toBe(readFileSync(`${MONITORING_DIR}grafana-dashboard.json`, 'utf8').trimEnd());
    expect(JSON.parse(json).uid).toBe('k8s-listener');

    // Every object but the PrometheusRule passes a strict server-side dry run.
    const accepted = manifests.filter((m) => m.kind !== 'PrometheusRule');
    const applied = await kubectlWithInput(
      binDir,
      kubeconfigPath,
      ['apply', '--dry-run=server', '--validate=strict', '-f', '-'],
      accepted.map((m) => stringify(m)).join('---\n'),
    );
    expect(applied).toContain('configmap/agent-k8s-listener-dashboard created (server dry run)');
    expect(applied.trim().split('\n')).toHaveLength(accepted.length);
  });

  it('refuses an unknown monitoring key and a bad namespace (values.schema.json)', async () => {
    for (const set of [
      'monitoring.prometheusRule.enable=true',
      'monitoring.grafanaDashboard.namespace=Not_A_Namespace',
    ]) {
      const failure = await template('listener', [set]).then(
        () => '',
        (error: { stderr: string }) => error.stderr,
      );
      expect(failure, set).toContain('/monitoring/');
    }
  });
});
