import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  computeObjectStatus,
  computeRollout,
  type LiveObject,
  Reason,
} from '../../../src/report/rolloutHealth.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const clock = { now: NOW, failureGraceMs: 60_000 };
const obj = (yaml: string) => parse(yaml) as LiveObject;

describe('computeObjectStatus', () => {
  it.each([
    [
      'Deployment available',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 2 }
spec: { replicas: 2 }
status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2 }`,
      'Current',
      Reason.Current,
    ],
    [
      'Deployment not observed yet',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 3 }
spec: { replicas: 2 }
status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }`,
      'InProgress',
      Reason.NotObserved,
    ],
    [
      'Deployment rolling',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 2 }
spec: { replicas: 3 }
status: { observedGeneration: 2, replicas: 3, updatedReplicas: 1, availableReplicas: 2 }`,
      'InProgress',
      Reason.UpdatingReplicas,
    ],
    [
      'Deployment old replicas terminating',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 2 }
spec: { replicas: 2 }
status: { observedGeneration: 2, replicas: 3, updatedReplicas: 2, availableReplicas: 2 }`,
      'InProgress',
      Reason.ExtraPods,
    ],
    [
      'Deployment waiting for available',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 2 }
status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }`,
      'InProgress',
      Reason.WaitingForAvailable,
    ],
    [
      'Deployment past its progress deadline',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 1 }
status:
  observedGeneration: 1
  conditions: [{ type: Progressing, status: "False", reason: ProgressDeadlineExceeded }]`,
      'Failed',
      Reason.ProgressDeadlineExceeded,
    ],
    [
      'Deployment with a fresh replica failure',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 1 }
status:
  observedGeneration: 1
  conditions: [{ type: ReplicaFailure, status: "True", lastTransitionTime: "2026-11-22T11:59:30Z", message: no service account }]`,
      'InProgress',
      Reason.ReplicaFailure,
    ],
    [
      'Deployment with a persistent replica failure',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 1 }
status:
  observedGeneration: 1
  conditions: [{ type: ReplicaFailure, status: "True", lastTransitionTime: "2026-11-22T11:50:00Z", message: no service account }]`,
      'Failed',
      Reason.ReplicaFailure,
    ],
    [
      'Deployment scaled by an HPA (no replicas in spec)',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: {}
status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1 }`,
      'Current',
      Reason.Current,
    ],
    [
      'Deployment being deleted',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, deletionTimestamp: "2026-11-22T11:00:00Z" }`,
      'Terminating',
      Reason.Terminating,
    ],
    [
      'StatefulSet ready',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: db, generation: 1 }
spec: { replicas: 1 }
status: { observedGeneration: 1, replicas: 1, readyReplicas: 1, currentReplicas: 1, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-1 }`,
      'Current',
      Reason.Current,
    ],
    [
      'StatefulSet not ready',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: db, generation: 1 }
spec: { replicas: 1 }
status: { observedGeneration: 1, replicas: 1, readyReplicas: 0 }`,
      'InProgress',
      Reason.WaitingForReady,
    ],
    [
      'StatefulSet mid update',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: db, generation: 2 }
spec: { replicas: 2 }
status: { observedGeneration: 2, replicas: 2, readyReplicas: 2, currentReplicas: 1, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2 }`,
      'InProgress',
      Reason.UpdateRevisionPending,
    ],
    [
      'PVC bound',
      `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: data-db-0 }
status: { phase: Bound }`,
      'Current',
      Reason.Current,
    ],
    [
      'PVC pending',
      `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: data-db-0 }
status: { phase: Pending }`,
      'InProgress',
      Reason.ClaimPending,
    ],
    [
      'PVC lost',
      `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: data-db-0 }
status: { phase: Lost }`,
      'Failed',
      Reason.ClaimLost,
    ],
    [
      'HPA able to scale',
      `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: { name: web }
status: { conditions: [{ type: AbleToScale, status: "True" }] }`,
      'Current',
      Reason.Current,
    ],
    [
      'HPA unable to scale',
      `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: { name: web }
status: { conditions: [{ type: AbleToScale, status: "False", reason: FailedGetScale }] }`,
      'InProgress',
      Reason.HpaUnable,
    ],
    [
      'Service exists',
      `
apiVersion: v1
kind: Service
metadata: { name: web }`,
      'Current',
      Reason.Current,
    ],
  ])('%s', (_name, yaml, status, reason) => {
    const result = computeObjectStatus(obj(yaml), clock);
    expect([result.status, result.reason]).toEqual([status, reason]);
  });

  it('reports a missing object', () => {
    expect(computeObjectStatus(undefined, clock).status).toBe('NotFound');
  });
});

// kstatus's own cases (sigs.k8s.io/cli-utils pkg/kstatus/status/status_compute_test.go), for the
// kinds the agent tracks, with kstatus's name and status; the reason is this module's name for it.
describe('computeObjectStatus: the kstatus cases', () => {
  it.each([
    [
      'depNoStatus',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: test, generation: 1 }`,
      'InProgress',
      Reason.CreatingReplicas,
    ],
    [
      'depOK',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: test, generation: 1 }
status:
  observedGeneration: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  replicas: 1
  conditions:
    - { type: Progressing, status: "True", reason: NewReplicaSetAvailable }
    - { type: Available, status: "True" }`,
      'Current',
      Reason.Current,
    ],
    [
      'depNotProgressing',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: test, generation: 1 }
spec: { progressDeadlineSeconds: 45 }
status:
  observedGeneration: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  replicas: 1
  conditions:
    - { type: Progressing, status: "False", reason: Some reason }
    - { type: Available, status: "True" }`,
      'InProgress',
      Reason.UpdatingReplicas,
    ],
    [
      'depNoProgressDeadlineSeconds',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: test, generation: 1 }
status:
  observedGeneration: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  replicas: 1
  conditions: [{ type: Available, status: "True" }]`,
      'Current',
      Reason.Current,
    ],
    [
      'depNotAvailable',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: test, generation: 1 }
status:
  observedGeneration: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  replicas: 1
  conditions:
    - { type: Progressing, status: "True", reason: NewReplicaSetAvailable }
    - { type: Available, status: "False" }`,
      'InProgress',
      Reason.NotAvailable,
    ],
    [
      'depLessReady (available but not ready: minReadySeconds 0, readiness lost)',
      `
apiVersion: apps/v1
kind: Deployment
metadata: { name: test, generation: 1 }
spec: { replicas: 2 }
status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 1 }`,
      'InProgress',
      Reason.WaitingForReady,
    ],
    [
      'stsNoStatus',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 1 }`,
      'InProgress',
      Reason.CreatingReplicas,
    ],
    [
      'stsBadStatus',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 1 }
status: { observedGeneration: 1, currentReplicas: 1 }`,
      'InProgress',
      Reason.CreatingReplicas,
    ],
    [
      'stsOK',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 1 }
spec: { replicas: 4 }
status: { observedGeneration: 1, currentReplicas: 4, readyReplicas: 4, replicas: 4 }`,
      'Current',
      Reason.Current,
    ],
    [
      'stsLessReady',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 1 }
spec: { replicas: 4 }
status: { observedGeneration: 1, currentReplicas: 4, readyReplicas: 2, replicas: 4 }`,
      'InProgress',
      Reason.WaitingForReady,
    ],
    [
      'stsLessCurrent',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 1 }
spec: { replicas: 4 }
status: { observedGeneration: 1, currentReplicas: 2, readyReplicas: 4, replicas: 4 }`,
      'InProgress',
      Reason.UpdateRevisionPending,
    ],
    [
      'stsExtraPods (more pods than desired: still rolling out)',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 1 }
spec: { replicas: 4 }
status: { observedGeneration: 1, currentReplicas: 4, readyReplicas: 4, replicas: 8 }`,
      'InProgress',
      Reason.ExtraPods,
    ],
    [
      'stsOnDelete (core.go: user-managed updates)',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 1 }
spec: { replicas: 2, updateStrategy: { type: OnDelete } }
status: { observedGeneration: 1, replicas: 0 }`,
      'Current',
      Reason.Current,
    ],
    [
      'stsPartitionRollout (core.go)',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 2 }
spec: { replicas: 4, updateStrategy: { type: RollingUpdate, rollingUpdate: { partition: 2 } } }
status: { observedGeneration: 2, replicas: 4, readyReplicas: 4, currentReplicas: 3, updatedReplicas: 1 }`,
      'InProgress',
      Reason.PartitionRollout,
    ],
    [
      'stsPartitionComplete (core.go)',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 2 }
spec: { replicas: 4, updateStrategy: { type: RollingUpdate, rollingUpdate: { partition: 2 } } }
status: { observedGeneration: 2, replicas: 4, readyReplicas: 4, currentReplicas: 2, updatedReplicas: 2 }`,
      'Current',
      Reason.Current,
    ],
    [
      'stsRevisionMismatch (core.go)',
      `
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: test, generation: 2 }
spec: { replicas: 1 }
status: { observedGeneration: 2, replicas: 1, readyReplicas: 1, currentReplicas: 1, currentRevision: a, updateRevision: b }`,
      'InProgress',
      Reason.UpdateRevisionPending,
    ],
    [
      'pvcNoStatus',
      `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: test, generation: 1 }`,
      'InProgress',
      Reason.ClaimPending,
    ],
    [
      'pvcBound',
      `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: test, generation: 1 }
status: { phase: Bound }`,
      'Current',
      Reason.Current,
    ],
    [
      'serviceDefault',
      `
apiVersion: v1
kind: Service
metadata: { name: test, generation: 1 }`,
      'Current',
      Reason.Current,
    ],
    [
      'serviceNodePort',
      `
apiVersion: v1
kind: Service
metadata: { name: test, generation: 1 }
spec: { type: NodePort }`,
      'Current',
      Reason.Current,
    ],
    [
      'serviceLBok',
      `
apiVersion: v1
kind: Service
metadata: { name: test, generation: 1 }
spec: { type: LoadBalancer, clusterIP: 1.2.3.4 }`,
      'Current',
      Reason.Current,
    ],
    [
      'serviceLBnok',
      `
apiVersion: v1
kind: Service
metadata: { name: test, generation: 1 }
spec: { type: LoadBalancer }`,
      'InProgress',
      Reason.NoIpAssigned,
    ],
    [
      'hpaCurrentStatus',
      `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: { name: test, generation: 1 }
status:
  conditions:
    - { type: AbleToScale, status: "True" }
    - { type: ScalingActive, status: "True" }`,
      'Current',
      Reason.Current,
    ],
  ])('%s', (_name, yaml, status, reason) => {
    const result = computeObjectStatus(obj(yaml), clock);
    expect([result.status, result.reason]).toEqual([status, reason]);
  });

  // Where the agent departs from kstatus, on purpose.
  it.each([
    // kstatus: Unknown. The HPA controller syncs every 15 s to a minute: a fresh HPA must not
    // hold a rollout back, and its target Deployment is what shows the pods.
    [
      'hpaNoStatus',
      `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: { name: test, generation: 1 }`,
      'Current',
    ],
    // kstatus: Failed. ScalingLimited is true whenever the HPA sits at its minimum or maximum,
    // the normal state of an idle deployment: no reason to fail its revision.
    [
      'hpaScalingLimitedStatus',
      `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: { name: test, generation: 1 }
status:
  conditions:
    - { type: AbleToScale, status: "True" }
    - { type: ScalingActive, status: "True" }
    - { type: ScalingLimited, status: "True" }`,
      'Current',
    ],
    // kstatus: InProgress (it has no Lost case). A lost claim does not come back by itself.
    [
      'pvcLost',
      `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: test }
status: { phase: Lost }`,
      'Failed',
    ],
  ])('%s (deliberately not as kstatus)', (_name, yaml, status) => {
    expect(computeObjectStatus(obj(yaml), clock).status).toBe(status);
  });
});

describe('computeRollout', () => {
  const ready = obj(`
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 1 }
status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1 }`);
  const dbNotReady = obj(`
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: db, generation: 1 }
spec: { replicas: 1 }
status: { observedGeneration: 1, replicas: 1, readyReplicas: 0 }`);
  const base = { podProblems: [], now: NOW, failureGraceMs: 60_000 };

  it('is DEPLOYED and READY when every workload is current', () => {
    expect(computeRollout({ ...base, objects: [{ component: 'main', object: ready }] })).toMatchObject({
      revisionStatus: 'DEPLOYED',
      deploymentStatus: 'READY',
    });
  });

  it('is DEPLOYING and AWAITING_DATABASE while the database is not ready', () => {
    expect(
      computeRollout({
        ...base,
        objects: [
          { component: 'main', object: ready },
          { component: 'database', object: dbNotReady },
        ],
      }),
    ).toMatchObject({
      revisionStatus: 'DEPLOYING',
      deploymentStatus: 'AWAITING_DATABASE',
      reason: Reason.WaitingForReady,
    });
  });

  it.each([
    ['ImagePullBackOff', Reason.PodImagePull],
    ['CrashLoopBackOff', Reason.PodCrashLoop],
    ['CreateContainerConfigError', Reason.PodConfigError],
    ['Unschedulable', Reason.PodUnschedulable],
  ])('fails on a pod in %s past the grace period, not before', (waiting, reason) => {
    const objects = [{ component: 'main', object: ready }];
    const fresh = computeRollout({
      ...base,
      objects,
      podProblems: [{ pod: 'web-1', reason: waiting, since: NOW - 10_000 }],
    });
    expect(fresh.revisionStatus).toBe('DEPLOYED');
    const stuck = computeRollout({
      ...base,
      objects,
      podProblems: [{ pod: 'web-1', reason: waiting, since: NOW - 61_000 }],
    });
    expect([stuck.revisionStatus, stuck.reason]).toEqual(['DEPLOY_FAILED', reason]);
    expect(stuck.message).toContain('web-1');
  });

  it('names the containers that wait, so the owner knows which of the pod failed', () => {
    const one = computeRollout({
      ...base,
      objects: [{ component: 'main', object: ready }],
      podProblems: [{ pod: 'web-1', containers: ['app'], reason: 'CrashLoopBackOff', since: NOW - 61_000 }],
    });
    expect(one.message).toBe('pod web-1 (container app) is in CrashLoopBackOff for more than 60 s');
    const two = computeRollout({
      ...base,
      objects: [{ component: 'main', object: ready }],
      podProblems: [
        { pod: 'web-1', containers: ['app', 'proxy'], reason: 'ImagePullBackOff', since: NOW - 61_000 },
      ],
    });
    expect(two.message).toContain('(containers app, proxy) is in ImagePullBackOff');
  });

  it('fails when an object failed', () => {
    const deadline = obj(`
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
status: { observedGeneration: 1, conditions: [{ type: Progressing, status: "False", reason: ProgressDeadlineExceeded }] }`);
    expect(computeRollout({ ...base, objects: [{ component: 'main', object: deadline }] })).toMatchObject({
      revisionStatus: 'DEPLOY_FAILED',
      reason: Reason.ProgressDeadlineExceeded,
    });
  });
});
