// The report step alone: what reaches the control plane, Events, the status annotation and the
// gauges for a sequence of statuses of one deployment.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../src/kube/index.ts';
import { ANNOTATION_STATUS } from '../../../src/objects/ownership.ts';
import { TerminalError } from '../../../src/reconcile/outcome.ts';
import type { StatusChange } from '../../../src/report/controlPlaneReporter.ts';
import { DeploymentReport, MAX_REPORT_MESSAGE, withEvidence } from '../../../src/report/deploymentReport.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import type { Reason, RolloutStatus } from '../../../src/report/rolloutHealth.ts';
import { parseStatusAnnotation } from '../../../src/report/statusAnnotation.ts';
import { MemoryCluster } from '../../support/memoryCluster.ts';

const log = pino({ level: 'silent' });
const annotated = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'k8s-listener-inv-d1' };

const status = (revisionStatus: RolloutStatus['revisionStatus'], message: string): RolloutStatus => ({
  revisionStatus,
  deploymentStatus: undefined,
  reason:
    revisionStatus === 'DEPLOY_FAILED'
      ? 'ApplyRejected'
      : revisionStatus === 'DEPLOYING'
        ? 'WaitingForAvailable'
        : 'Current',
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
  it('reports each change to the control plane, each transition in the cluster (Event, annotation), and the gauges', async () => {
    const { main, report, recorded, events, annotation, gauge, metrics } = await setUp();
    const send = (s: RolloutStatus) =>
      report.status({ deploymentId: 'd1', revisionId: 'r1', status: s, main, annotated }, log);

    await send(status('DEPLOYING', '0 of 1 updated'));
    expect(metrics.deployingSince.has('d1')).toBe(true);
    // A rollout's start is told by an Event alone: the annotation keeps outcomes.
    expect(await annotation()).toBeUndefined();
    await send(status('DEPLOYING', '1 of 1 updated'));
    await send(status('DEPLOYED', 'available'));
    const first = await annotation();
    await send(status('DEPLOYED', 'available, 2 replicas'));
    // A new message within the same status is no transition: `since` is kept.
    expect((await annotation())?.since).toBe(first?.since);
    // Scaling afterwards looks like a rollout again; a revision once DEPLOYED stays so.
    await send(status('DEPLOYING', '1 of 2 updated'));

    expect(recorded.map((r) => r.revision_status)).toEqual([
      'DEPLOYING',
      'DEPLOYING',
      'DEPLOYED',
      'DEPLOYED',
    ]);
    // A routine rollout is no Event, its steps no transition: its outcome is told.
    expect(events).toEqual(['RolloutComplete']);
    expect(await annotation()).toMatchObject({ revisionId: 'r1', status: 'DEPLOYED', message: 'available' });
    expect(await gauge('DEPLOYED')).toBe(1);
    expect(await gauge('DEPLOYING')).toBe(0);
    expect(metrics.deployingSince.has('d1')).toBe(false);
  });

  it("tells each failure's new message in the cluster, and a new revision's rollout", async () => {
    const { main, report, events, annotation } = await setUp();
    const send = (revisionId: string, s: RolloutStatus) =>
      report.status({ deploymentId: 'd1', revisionId, status: s, main, annotated }, log);
    await send('r1', status('DEPLOYING', '0 of 1 updated'));
    await send('r1', status('DEPLOY_FAILED', 'pod web-1: CrashLoopBackOff for 2m'));
    await send('r1', status('DEPLOY_FAILED', 'pod web-1: ImagePullBackOff for 2m'));
    expect(await annotation()).toMatchObject({ message: 'pod web-1: ImagePullBackOff for 2m' });
    await send('r2', status('DEPLOYING', '0 of 1 updated'));
    await send('r2', status('DEPLOYING', '0 of 1 ready'));
    expect(events).toEqual(['RolloutFailed', 'RolloutFailed']);
    // The last outcome stays recorded while the next revision rolls out.
    expect(await annotation()).toMatchObject({ revisionId: 'r1', status: 'DEPLOY_FAILED' });
  });

  it('tells the steps of a rollout once, and a warning sign while rolling out', async () => {
    const { main, report, recorded, events, annotation } = await setUp();
    const send = (reason: Reason, message: string) =>
      report.status(
        {
          deploymentId: 'd1',
          revisionId: 'r1',
          status: { revisionStatus: 'DEPLOYING', deploymentStatus: undefined, reason, message },
          main,
          annotated,
        },
        log,
      );
    await send('GenerationNotObserved', 'main: the latest spec is not yet observed');
    await send('CreatingReplicas', 'main: 0 of 2 replicas');
    await send('WaitingForAvailable', 'main: 0 of 2 updated replicas available');
    await send('ClaimPending', 'database: claim data-0 is Pending');
    expect(recorded).toHaveLength(4);
    // Routine steps are no Event; a warning sign is, once.
    expect(events).toEqual([]);
    await send('ReplicaFailure', 'main: pods "web-1" is forbidden: exceeded quota');
    await send('ReplicaFailure', 'main: pods "web-1" is forbidden: exceeded quota');
    expect(events).toEqual(['RollingOut']);
    // Told by Events alone while DEPLOYING: no annotation write.
    expect(await annotation()).toBeUndefined();
  });

  it('tells a warning sign of a rollout just applied at the next look, if it is still there', async () => {
    const { main, report, recorded, events, annotation } = await setUp();
    const warning: RolloutStatus = {
      revisionStatus: 'DEPLOYING',
      deploymentStatus: undefined,
      reason: 'ReplicaFailure',
      message: 'main: pods "web-1" is forbidden: exceeded quota',
    };
    const send = (s: RolloutStatus, justApplied: boolean) =>
      report.status({ deploymentId: 'd1', revisionId: 'r1', status: s, main, annotated, justApplied }, log);
    await send(warning, true);
    expect(recorded.map((r) => r.revision_status)).toEqual(['DEPLOYING']);
    expect(events).toEqual([]);
    expect(await annotation()).toBeUndefined();
    await send(warning, false);
    expect(events).toEqual(['RollingOut']);
    // A rollout done by its next look is told done.
    await send(status('DEPLOYED', 'available'), true);
    expect(events).toEqual(['RollingOut', 'RolloutComplete']);
  });

  it('after a restart, a transition the annotation already records is not told again', async () => {
    const first = await setUp();
    const sent = { deploymentId: 'd1', revisionId: 'r1', main: first.main, annotated };
    await first.report.status({ ...sent, status: status('DEPLOYED', 'available') }, log);
    expect(first.events).toEqual(['RolloutComplete']);
    // A new agent process: a fresh report over the same cluster.
    const again = new DeploymentReport({
      reporter: { record: () => true },
      events: { record: async (_subject, details) => void first.events.push(details.reason) },
      objects: {
        read: (ref) => first.cluster.get(ref),
        mergePatch: (ref, patch) => first.cluster.mergePatch(ref, patch),
      },
      metrics: first.metrics,
    });
    const annotationBefore = await first.annotation();
    await again.status({ ...sent, status: status('DEPLOYED', 'available') }, log);
    expect(first.events).toEqual(['RolloutComplete']);
    expect(await first.annotation()).toEqual(annotationBefore);
    // A new revision's outcome is told.
    await again.status({ ...sent, revisionId: 'r2', status: status('DEPLOYING', '0 of 1 updated') }, log);
    await again.status({ ...sent, revisionId: 'r2', status: status('DEPLOYED', 'available') }, log);
    expect(first.events).toEqual(['RolloutComplete', 'RolloutComplete']);
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
    // Not told, so told again at the next look, once the write goes through.
    cluster.before = () => undefined;
    await report.status(
      { deploymentId: 'd1', revisionId: 'r1', status: status('DEPLOYED', 'ok'), main, annotated },
      log,
    );
    expect(
      parseStatusAnnotation((await cluster.get(annotated))?.metadata.annotations[ANNOTATION_STATUS]),
    ).toMatchObject({
      status: 'DEPLOYED',
    });
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

  it('sends the evidence of a failure under its message, each new evidence once; the cluster hears the failure once', async () => {
    const { main, report, recorded, events, annotation } = await setUp();
    const failed = (evidence: string[]): RolloutStatus => ({
      ...status('DEPLOY_FAILED', 'pod web-1 is in CrashLoopBackOff for more than 120 s'),
      evidence,
    });
    const send = (s: RolloutStatus) =>
      report.status({ deploymentId: 'd1', revisionId: 'r1', status: s, main, annotated }, log);
    await send(failed(['pod web-1 container api: restarts: 3', '  | ImportError: no module named nope']));
    await send(failed(['pod web-1 container api: restarts: 3', '  | ImportError: no module named nope']));
    await send(failed(['pod web-1 container api: restarts: 4', '  | ImportError: no module named nope']));
    expect(recorded.map((r) => r.message)).toEqual([
      'pod web-1 is in CrashLoopBackOff for more than 120 s\npod web-1 container api: restarts: 3\n  | ImportError: no module named nope',
      'pod web-1 is in CrashLoopBackOff for more than 120 s\npod web-1 container api: restarts: 4\n  | ImportError: no module named nope',
    ]);
    expect(events).toEqual(['RolloutFailed']);
    expect((await annotation())?.message).toBe('pod web-1 is in CrashLoopBackOff for more than 120 s');
  });

  it('keeps a message with its evidence within the report’s bound, in whole lines', () => {
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i} `.padEnd(200, 'x'));
    const message = withEvidence({ message: 'headline', evidence: lines });
    expect(message.length).toBeLessThanOrEqual(MAX_REPORT_MESSAGE);
    expect(message.split('\n').at(-1)).toMatch(/more lines of evidence left out$/);
    expect(message.split('\n').slice(1, -1)).toEqual(lines.slice(0, message.split('\n').length - 2));
  });
});
