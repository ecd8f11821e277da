import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  computeObjectStatus,
  computeRollout,
  type LiveObject,
  Reason,
} from '../../../src/report/rolloutStatus.ts';

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
status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }`,
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
      Reason.UpdatingReplicas,
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
status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 }`,
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
status: { observedGeneration: 1, readyReplicas: 1, currentReplicas: 1, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-1 }`,
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
status: { observedGeneration: 1, readyReplicas: 0 }`,
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
status: { observedGeneration: 2, readyReplicas: 2, currentReplicas: 1, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2 }`,
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

describe('computeRollout', () => {
  const ready = obj(`
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 1 }
status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 }`);
  const dbNotReady = obj(`
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: db, generation: 1 }
spec: { replicas: 1 }
status: { observedGeneration: 1, readyReplicas: 0 }`);
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
