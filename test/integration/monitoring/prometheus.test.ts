// A real Prometheus (built from the Go module) scrapes a running agent through a lifecycle —
// create, roll out, fail one, delete — with the PrometheusRule's groups loaded: every query of the
// Grafana dashboard returns at least one series (a moment of control-plane outage included), every
// series the alerts' promtool tests feed is one the agent exports, the failure's alert goes pending, and the
// agent's /metrics passes `promtool check metrics` (Prometheus's naming lint) without a complaint.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { type RunningProbeServer, startProbeServer } from '../../../src/cli/probeServer.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { type FaultyControlPlane, startFaultyControlPlane } from '../../support/faultyControlPlane.ts';
import { dashboardQueries } from '../../support/monitoringQueries.ts';
import {
  promtool,
  type RunningPrometheus,
  startPrometheus,
  writeRuleFile,
} from '../../support/prometheus.ts';

const JOB = 'k8s-listener';
const ALERT_TESTS = new URL('../../monitoring/alerts.test.yaml', import.meta.url).pathname;
/**
 * A namespace served by the agent that does not exist: a deployment there is reported failed and
 * retried (the namespace may be created), so its errors go on — the alert's scenario.
 */
const MISSING_NS = 'not-created-yet';

let world: World;
let proxy: FaultyControlPlane;
let agent: Agent;
let probes: RunningProbeServer;
let prometheus: RunningPrometheus;
let dir: string;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A dashboard query as Grafana sends it: its variables replaced by this job and a range. */
function asGrafanaSends(expr: string): string {
  return expr.replaceAll('$job', JOB).replaceAll('$__rate_interval', '5m');
}

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), {
    namespaces: 1,
    extraListenerNamespaces: [MISSING_NS],
  });
  // The process's own metrics, defaults included, as `run` registers them.
  const metrics = createMetrics();
  // The control plane through a proxy that can fail for a moment.
  proxy = await startFaultyControlPlane(world.emulator.url);
  agent = await startAgent(world, {
    baseUrl: proxy.url,
    allowedNamespaces: [...world.namespaces, MISSING_NS],
    metrics,
  });
  probes = await startProbeServer({
    host: '127.0.0.1',
    port: 0,
    registry: metrics.registry,
    isLive: () => agent.isLive(),
    isReady: () => agent.isReady(),
    logger: (await import('pino')).pino({ level: 'silent' }),
  });
  dir = await mkdtemp(join(tmpdir(), 'k8s-listener-prometheus-'));
  await writeRuleFile(join(dir, 'rules.yaml'));
  // The labels the Prometheus Operator's scrape of the chart's ServiceMonitor gives every series.
  prometheus = await startPrometheus({
    dir,
    port: await freePort(),
    config: stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [join(dir, 'rules.yaml')],
      scrape_configs: [
        {
          job_name: JOB,
          static_configs: [{ targets: [new URL(probes.url).host], labels: { namespace: 'ops' } }],
        },
      ],
    }),
  });
}, 600_000);

afterAll(async () => {
  await prometheus?.stop();
  await probes?.close();
  await agent?.stop();
  await proxy?.close();
  await world?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a real Prometheus scraping the agent through a lifecycle', () => {
  // The lifecycle once — create, roll out, fail one, delete, a moment of control-plane outage —
  // then what Prometheus makes of it, one thing an `it`.
  describe('after create, roll out, fail, delete and an outage', () => {
    beforeAll(async () => {
      const [ns = ''] = world.namespaces;
      const web = await world.client.createDeployment(app(world, 'web', ns));
      const bad = await world.client.createDeployment(app(world, 'nowhere', MISSING_NS));
      await waitForRevision(world, web, 'DEPLOYED');
      await waitForRevision(world, bad, 'DEPLOY_FAILED');
      const gone = await world.client.createDeployment(app(world, 'gone', ns));
      await waitForRevision(world, gone, 'DEPLOYED');
      await world.client.deleteDeployment(gone.id);
      await eventually(
        'the deleted deployment pruned (seen by Prometheus)',
        async () =>
          Number(
            (await prometheus.query(`sum(k8s_listener_objects_pruned_total{job="${JOB}"})`))[0]?.value[1] ??
              0,
          ) > 0
            ? true
            : undefined,
        60_000,
        500,
      );

      // A moment of control-plane outage: requests fail (503), then succeed again.
      proxy.fault = 'errors';
      try {
        await eventually(
          'a failed control-plane request seen by Prometheus',
          async () =>
            (await prometheus.query(`k8s_listener_control_plane_requests_total{job="${JOB}",code="503"} > 0`))
              .length > 0
              ? true
              : undefined,
          60_000,
          250,
        );
      } finally {
        proxy.fault = 'none';
      }
    }, 300_000);

    it('raises the failure’s alert, and none of a healthy agent’s', async () => {
      // The failure's alert: more than a quarter of this run's reconciles ended in an error.
      const alert = await eventually(
        'K8sListenerReconcileErrors pending or firing',
        async () =>
          (await prometheus.alerts()).find((a) => a.labels.alertname === 'K8sListenerReconcileErrors'),
        60_000,
        500,
      );
      expect(alert.state).toMatch(/^(pending|firing)$/);
      expect(alert.labels).toMatchObject({ job: JOB, namespace: 'ops', severity: 'warning' });
      // A healthy agent's alerts stay silent meanwhile.
      const active = (await prometheus.alerts()).map((a) => a.labels.alertname);
      for (const quiet of [
        'K8sListenerDown',
        'K8sListenerAbsent',
        'K8sListenerNoLeader',
        'K8sListenerPruneRefused',
      ])
        expect(active).not.toContain(quiet);
    });

    it('answers every query of the dashboard, as Grafana sends it, with at least one series', async () => {
      // A rate needs two scrapes of a series that has just appeared: a few seconds are given.
      const emptyQueries = async () => {
        const empty: string[] = [];
        for (const query of dashboardQueries()) {
          const result = await prometheus.query(asGrafanaSends(query.expr));
          if (result.length === 0) empty.push(`${query.source}: ${query.expr}`);
        }
        return empty;
      };
      // The queries still empty at the deadline are the timeout's cause.
      await eventually(
        'a series for every dashboard query',
        async () => {
          const empty = await emptyQueries();
          if (empty.length > 0) throw new Error(`queries without a series:\n${empty.join('\n')}`);
          return true;
        },
        10_000,
        500,
      );
      expect(dashboardQueries().length).toBeGreaterThan(30);
    });

    it('exports every series the alerts’ unit tests feed promtool', async () => {
      // Or Prometheus makes it for its target (`up`): the rule tests are about real metrics.
      const tests = parse(await readFile(ALERT_TESTS, 'utf8')) as {
        tests: { input_series: { series: string }[] }[];
      };
      const fed = new Set(
        tests.tests.flatMap((t) => t.input_series.map((i) => i.series.split('{')[0] ?? '')),
      );
      expect(fed.size).toBeGreaterThan(8);
      const unknown: string[] = [];
      for (const name of fed)
        if ((await prometheus.query(`count({__name__="${name}", job="${JOB}"})`)).length === 0)
          unknown.push(name);
      expect(unknown).toEqual([]);
    });
  });

  it('serves /metrics that promtool check metrics accepts without a complaint', async () => {
    const text = await (await fetch(`${probes.url}/metrics`)).text();
    const result = await promtool(['check', 'metrics'], text);
    expect(result.output.trim()).toBe('');
    expect(result.code).toBe(0);
    // And the lint bites: a gauge named like a counter is reported.
    const wrong = await promtool(
      ['check', 'metrics'],
      '# HELP x_total A gauge.\n# TYPE x_total gauge\nx_total 1\n',
    );
    expect(wrong.output).toContain('x_total');
    expect(wrong.code).not.toBe(0);
  });
});
