// A running agent (against the emulator and the test cluster) seen as an operator sees it: its
// /metrics accepted by `promtool check metrics` and read for the values an operator reads, labels
// bounded, and its JSON log lines about one deployment carrying that deployment's fields. (That
// Prometheus scrapes it and that every dashboard query and alert reads a series it exports:
// monitoring/prometheus.test.ts.)
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../../src/cli/logger.ts';
import { type RunningProbeServer, startProbeServer } from '../../../src/cli/probeServer.ts';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import { AGENT_VERSION } from '../../../src/version.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { declaredFamilies, readSamples, type Sample, sampleValue } from '../../support/metricSamples.ts';
import { promtool } from '../../support/prometheus.ts';

/** Metric names an operator reads: controller-runtime's where it has one, then the agent's own. */
const REQUIRED = [
  'workqueue_depth',
  'workqueue_adds_total',
  'workqueue_queue_duration_seconds',
  'workqueue_work_duration_seconds',
  'workqueue_retries_total',
  'workqueue_unfinished_work_seconds',
  'workqueue_longest_running_processor_seconds',
  'controller_runtime_reconcile_total',
  'controller_runtime_reconcile_errors_total',
  'controller_runtime_reconcile_time_seconds',
  'k8s_listener_control_plane_requests_total',
  'k8s_listener_control_plane_request_duration_seconds',
  'k8s_listener_kube_requests_total',
  'k8s_listener_kube_request_duration_seconds',
  'k8s_listener_build_info',
  'k8s_listener_rollout_oldest_deploying_seconds',
  // The agent's own.
  'k8s_listener_deployments',
  'k8s_listener_reconcile_duration_seconds',
  'k8s_listener_reconcile_errors_total',
  'k8s_listener_polls_total',
  'k8s_listener_poll_duration_seconds',
  'k8s_listener_queue_depth',
  'k8s_listener_queue_dropped_total',
  'k8s_listener_leader',
  'k8s_listener_status_reports_total',
  'k8s_listener_prune_refusals_total',
  'k8s_listener_objects_applied_total',
  'k8s_listener_objects_pruned_total',
  'k8s_listener_process_resident_memory_bytes',
];

const FORBIDDEN_NS = 'not-allowed-by-agent';
let world: World;
let agent: Agent;
let probes: RunningProbeServer;
let ns: string;
let web: Deployment;
let bad: Deployment;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), {
    namespaces: 1,
    extraListenerNamespaces: [FORBIDDEN_NS],
  });
  [ns = ''] = world.namespaces;
  // The process logger itself (redaction and all), written to memory instead of stdout.
  const logger = createLogger(
    'info',
    new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    }),
  );
  const metrics = createMetrics();
  agent = await startAgent(world, { allowedNamespaces: world.namespaces, metrics, logger });
  probes = await startProbeServer({
    host: '127.0.0.1',
    port: 0,
    registry: metrics.registry,
    isLive: () => agent.isLive(),
    isReady: () => agent.isReady(),
    logger,
  });
  web = await world.client.createDeployment(app(world, 'web', ns));
  // Its namespace is the listener's but not the agent's: it fails alone, terminally.
  bad = await world.client.createDeployment(app(world, 'outside', FORBIDDEN_NS));
  await waitForRevision(world, web, 'DEPLOYED');
  await waitForRevision(world, bad, 'DEPLOY_FAILED');
}, 120_000);

afterAll(async () => {
  await probes?.close();
  await agent?.stop();
  await world?.close();
});

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const response = await fetch(`${probes.url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  const text = await response.text();
  return { text, samples: readSamples(text) };
}

describe('/metrics of a running agent', () => {
  it('passes `promtool check metrics` without a complaint', async () => {
    const result = await promtool(['check', 'metrics'], (await scrape()).text);
    expect(result.output.trim()).toBe('');
    expect(result.code).toBe(0);
  });

  it('has every metric named in the issue, with the values this run gave them', async () => {
    const { text, samples } = await scrape();
    const families = declaredFamilies(text);
    expect(REQUIRED.filter((name) => !families.has(name))).toEqual([]);
    const value = (name: string, labels: Record<string, string> = {}) => sampleValue(samples, name, labels);
    expect(value('k8s_listener_build_info', { version: AGENT_VERSION })).toBe(1);
    const queue = { name: 'deployment', controller: 'deployment' };
    expect(value('workqueue_adds_total', queue)).toBeGreaterThanOrEqual(2);
    expect(value('workqueue_depth', queue)).toBeGreaterThanOrEqual(0);
    expect(value('workqueue_work_duration_seconds_count', queue)).toBeGreaterThanOrEqual(2);
    const controller = { controller: 'deployment' };
    const total = (result: string) =>
      value('controller_runtime_reconcile_total', { ...controller, result }) ?? 0;
    expect(total('success')).toBeGreaterThanOrEqual(1);
    expect(total('requeue_after')).toBeGreaterThanOrEqual(1); // rolling out: checked again
    expect(total('error')).toBeGreaterThanOrEqual(1); // the deployment outside the allow-list
    expect(value('controller_runtime_terminal_reconcile_errors_total', controller)).toBeGreaterThanOrEqual(1);
    expect(
      value('k8s_listener_control_plane_requests_total', {
        endpoint: '/v2/deployments/{deployment_id}/revisions',
        method: 'GET',
        code: '200',
      }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      value('k8s_listener_kube_request_duration_seconds_count', { verb: 'patch', kind: 'Deployment' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('keeps labels bounded: no id, name or namespace of a deployment in any label value', async () => {
    const { samples } = await scrape();
    const values = new Set(samples.flatMap((sample) => Object.values(sample.labels)));
    const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
    expect([...values].filter((v) => uuid.test(v))).toEqual([]);
    for (const forbidden of [
      web.id,
      bad.id,
      world.listenerId,
      ns,
      'web',
      'outside',
      'integration-secret-value',
    ])
      expect(values.has(forbidden), forbidden).toBe(false);
  });
});

describe('log lines about one deployment', () => {
  const about = (id: string) => lines.filter((line) => line.deployment_id === id);

  it('carry deployment_id, revision_id and namespace, in snake_case', () => {
    const webLines = about(web.id);
    expect(webLines.map((l) => l.msg)).toEqual(expect.arrayContaining(['applying', 'rollout status']));
    for (const line of webLines) {
      expect(line, String(line.msg)).toMatchObject({ revision_id: web.latest_revision_id, namespace: ns });
    }
    const badLines = about(bad.id);
    expect(badLines.map((l) => l.msg)).toContain('deployment failed');
    for (const line of badLines)
      expect(line, String(line.msg)).toMatchObject({
        revision_id: bad.latest_revision_id,
        namespace: FORBIDDEN_NS,
      });
  });

  it('carry the namespace when the deployment is deleted (known from its inventory)', async () => {
    await world.client.deleteDeployment(web.id);
    await eventually(
      'the deletion logged',
      async () => (about(web.id).some((l) => l.msg === 'deployment deleted') ? true : undefined),
      30_000,
    );
    expect(about(web.id).find((l) => l.msg === 'deployment deleted')).toMatchObject({ namespace: ns });
  });

  it('every line that mentions a deployment id is bound to it, and no line uses the camelCase field', () => {
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) {
      const text = JSON.stringify(line);
      expect(text).not.toContain('"deploymentId"');
      expect(text).not.toContain('integration-secret-value');
      for (const id of [web.id, bad.id])
        if (text.includes(id)) expect(line.deployment_id, `${line.msg}: ${text}`).toBe(id);
    }
  });
});
