// The report step alone: what reaches the control plane, Events, the status annotation and the
// gauges for a sequence of statuses of one deployment.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../src/kube/index.ts';
import { ANNOTATION_STATUS } from '../../../src/objects/ownership.ts';
import { TerminalError } from '../../../src/reconcile/outcome.ts';
import { DeploymentReport } from '../../../src/report/deploymentReport.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import type { RolloutStatus } from '../../../src/report/rolloutStatus.ts';
import { parseStatusAnnotation } from '../../../src/report/statusAnnotation.ts';
import type { StatusChange } from '../../../src/report/statusReporter.ts';
import { MemoryCluster } from '../../support/memoryCluster.ts';

const log = pino({ level: 'silent' });
const annotated = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'k8s-listener-inv-d1' };

const status = (revisionStatus: RolloutStatus['revisionStatus'], message: string): RolloutStatus => ({
  revisionStatus,
  deploymentStatus: undefined,
  reason: revisionStatus === 'DEPLOY_FAILED' ? 'ApplyRejected' : 'Current',
  message,
});

async function setUp() {
  const cluster = new MemoryCluster(['apps']);
  const main = (await cluster.apply(
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'apps', labels: {}, annotations: {} },
    },
    { force: true },
  )) as LiveKubeObject;
  await cluster.apply(
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...annotated, labels: {}, annotations: {} } },
    { force: true },
  );
  const recorded: StatusChange[] = [];
  const events: string[] = [];
  const metrics = createMetrics({ defaultMetrics: false });
  const report = new DeploymentReport({
    reporter: {
      record: (change) => {
        const last = recorded.at(-1);
        if (last && JSON.stringify(last) === JSON.stringify(change)) return false;
        recorded.push(change);
        return true;
      },
    },
    events: { record: async (_subject, details) => void events.push(details.reason) },
    objects: { read: (ref) => cluster.get(ref), mergePatch: (ref, patch) => cluster.mergePatch(ref, patch) },
    metrics,
  });
  const annotation = async () =>
    parseStatusAnnotation((await cluster.get(annotated))?.metadata.annotations[ANNOTATION_STATUS]);
  const gauge = async (value: string) =>
    (await metrics.deploymentsByStatus.get()).values.find((v) => v.labels.status === value)?.value;
  return { cluster, main, report, recorded, events, annotation, gauge, metrics };
}

describe('DeploymentReport', () => {
  it('reports each change once: control plane, Event, annotation, gauges', async () => {
    const { main, report, recorded, events, annotation, gauge, metrics } = await setUp();
    const send = (s: RolloutStatus) =>
      report.status({ deploymentId: 'd1', revisionId: 'r1', status: s, main, annotated }, log);

    await send(status('DEPLOYING', '0 of 1 updated'));
    expect(metrics.deployingSince.has('d1')).toBe(true);
    const first = await annotation();
    await send(status('DEPLOYING', '1 of 1 updated'));
    // A new message within the same status is no transition: `since` is kept.
    expect((await annotation())?.since).toBe(first?.since);
    await send(status('DEPLOYED', 'available'));
    // Scaling afterwards looks like a rollout again; a revision once DEPLOYED stays so.
    await send(status('DEPLOYING', '1 of 2 updated'));

    expect(recorded.map((r) => r.revision_status)).toEqual(['DEPLOYING', 'DEPLOYING', 'DEPLOYED']);
    expect(events).toEqual(['RollingOut', 'RollingOut', 'RolloutComplete']);
    expect(await annotation()).toMatchObject({ revisionId: 'r1', status: 'DEPLOYED', message: 'available' });
    expect(await gauge('DEPLOYED')).toBe(1);
    expect(await gauge('DEPLOYING')).toBe(0);
    expect(metrics.deployingSince.has('d1')).toBe(false);
  });

  it('a failure without objects is reported, with no Event and no annotation', async () => {
    const { report, recorded, events, annotation, gauge } = await setUp();
    await report.failed('d1', 'r1', { reason: 'RenderInvalid', message: 'bad spec' }, log);
    expect(recorded).toEqual([
      {
        deployment_id: 'd1',
        revision_id: 'r1',
        revision_status: 'DEPLOY_FAILED',
        deployment_status: null,
        message: 'bad spec',
      },
    ]);
    expect(events).toEqual([]);
    expect(await annotation()).toBeUndefined();
    expect(await gauge('DEPLOY_FAILED')).toBe(1);
  });

  it('a failure given as the TerminalError itself keeps its message', async () => {
    const { report, recorded } = await setUp();
    // What the reconciler passes; an Error's message is not enumerable, so a spread would drop it.
    await report.failed(
      'd1',
      'r1',
      new TerminalError('RenderInvalid', 'name: cannot be a Kubernetes name'),
      log,
    );
    expect(recorded[0]?.message).toBe('name: cannot be a Kubernetes name');
  });

  it('a status annotation that cannot be written is logged, not thrown', async () => {
    const { cluster, main, report, recorded } = await setUp();
    cluster.before = ({ verb }) => {
      if (verb === 'patch') throw new Error('API server unavailable');
    };
    await report.status(
      { deploymentId: 'd1', revisionId: 'r1', status: status('DEPLOYED', 'ok'), main, annotated },
      log,
    );
    expect(recorded.map((r) => r.revision_status)).toEqual(['DEPLOYED']);
  });

  it('a deleted deployment is reported deleted and leaves the gauges', async () => {
    const { main, report, recorded, gauge } = await setUp();
    await report.status(
      { deploymentId: 'd1', revisionId: 'r1', status: status('DEPLOYED', 'ok'), main, annotated },
      log,
    );
    report.deleted('d1');
    expect(recorded.at(-1)).toEqual({ deployment_id: 'd1', deleted: true, message: 'resources removed' });
    expect(await gauge('DEPLOYED')).toBe(0);
  });
});
