import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { LiveKubeObject } from '../../../src/kube/index.ts';
import {
  isRunningUnready,
  PodProblemClock,
  podProblemReasons,
  podProblemsOf,
  podSummary,
  podsOfRevision,
} from '../../../src/report/podProblems.ts';

const CASES: [string, string, string[]][] = [
  [
    'a pod the scheduler cannot place',
    `
status:
  phase: Pending
  conditions: [{ type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available: 3 Insufficient cpu." }]`,
    ['Unschedulable'],
  ],
  [
    'a pod waiting for its claim to be bound (the claim tells that)',
    `
status:
  phase: Pending
  conditions: [{ type: PodScheduled, status: "False", reason: Unschedulable, message: "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling." }]`,
    [],
  ],
  [
    'a pod scheduled after all',
    `
status:
  phase: Running
  conditions: [{ type: PodScheduled, status: "True" }, { type: Ready, status: "True" }]`,
    [],
  ],
  [
    'a pod not yet looked at by the scheduler',
    `
status: { phase: Pending }`,
    [],
  ],
  [
    'PodScheduled=False for another reason (scheduling gated)',
    `
status:
  phase: Pending
  conditions: [{ type: PodScheduled, status: "False", reason: SchedulingGated }]`,
    [],
  ],
  [
    'a crash-looping container and an image pull back-off in an init container',
    `
status:
  phase: Pending
  initContainerStatuses: [{ name: init, state: { waiting: { reason: ImagePullBackOff } } }]
  containerStatuses: [{ name: app, state: { waiting: { reason: CrashLoopBackOff } } }]`,
    ['ImagePullBackOff', 'CrashLoopBackOff'],
  ],
  [
    'a running container',
    `
status:
  phase: Running
  containerStatuses: [{ name: app, state: { running: { startedAt: "2026-11-22T12:00:00Z" } } }]`,
    [],
  ],
  ['no status at all', `metadata: { name: p }`, []],
  [
    'malformed status fields are ignored, not thrown',
    `
status:
  phase: Pending
  conditions: "not a list"
  containerStatuses: [{ name: app, state: { waiting: { reason: CrashLoopBackOff } } }]`,
    ['CrashLoopBackOff'],
  ],
];

describe('podProblemReasons', () => {
  it.each(CASES)('%s', (_name, yaml, reasons) => {
    expect(podProblemReasons(parse(yaml))).toEqual(reasons);
  });
});

describe('podSummary', () => {
  const identity = {
    name: 'web-1',
    namespace: 'apps',
    uid: 'u1',
    resourceVersion: '7',
    labels: { 'k8s-listener.io/deployment-id': 'd1' },
  };
  const asPod = (yaml: string): LiveKubeObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    ...parse(yaml),
    metadata: {
      ...identity,
      annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-11-23T00:00:00Z' },
      managedFields: [{ manager: 'kubelet' }],
    },
  });

  it.each(CASES)('keeps every problem of %s', (_name, yaml, reasons) => {
    expect(podProblemReasons(podSummary(asPod(yaml)))).toEqual(reasons);
  });

  it('keeps of a healthy pod its identity, labels and phase alone', () => {
    const pod = asPod(`
spec: { containers: [{ name: app, image: registry.example.test/app:1, env: [{ name: A, value: b }] }] }
status:
  phase: Running
  podIP: 10.0.0.7
  conditions: [{ type: Ready, status: "True" }, { type: PodScheduled, status: "True", lastTransitionTime: "2026-11-23T00:00:00Z" }]
  containerStatuses: [{ name: app, image: registry.example.test/app:1, restartCount: 3, state: { running: { startedAt: "2026-11-23T00:00:00Z" } } }]`);
    expect(podSummary(pod)).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...identity, annotations: {} },
      status: { phase: 'Running' },
    });
  });

  it('keeps of a troubled pod the conditions not True and the waiting containers alone', () => {
    const pod = asPod(`
status:
  phase: Pending
  conditions: [{ type: Ready, status: "False" }, { type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes" }]
  initContainerStatuses: [{ name: init, state: { terminated: { exitCode: 0 } } }]
  containerStatuses: [{ name: app, state: { waiting: { reason: ImagePullBackOff, message: "pull failed" } } }, { name: side, state: { running: {} } }]`);
    expect(podSummary(pod).status).toEqual({
      phase: 'Pending',
      conditions: [
        { type: 'Ready', status: 'False' },
        { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes' },
      ],
      containerStatuses: [{ name: 'app', state: { waiting: { reason: 'ImagePullBackOff' } } }],
    });
  });
});

describe('isRunningUnready', () => {
  const ready = (status: string) => ({ type: 'Ready', status });
  it.each([
    ['running, Ready False', { phase: 'Running', conditions: [ready('False')] }, true],
    ['running, Ready True', { phase: 'Running', conditions: [ready('True')] }, false],
    ['running, no Ready condition (a summary of a ready pod)', { phase: 'Running' }, false],
    ['pending, Ready False', { phase: 'Pending', conditions: [ready('False')] }, false],
  ])('%s: %s', (_name, status, expected) => {
    expect(isRunningUnready({ status })).toBe(expected);
    expect(
      isRunningUnready(
        podSummary({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'p', uid: 'u', resourceVersion: '1', labels: {}, annotations: {} },
          status,
        }),
      ),
    ).toBe(expected);
  });
});

describe('podProblemsOf', () => {
  it('names the containers waiting with each reason, and none for a pod no node takes', () => {
    expect(
      podProblemsOf({
        status: {
          phase: 'Pending',
          conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
          initContainerStatuses: [{ name: 'migrate', state: { waiting: { reason: 'CrashLoopBackOff' } } }],
          containerStatuses: [
            { name: 'app', state: { waiting: { reason: 'CrashLoopBackOff' } } },
            { name: 'proxy', state: { waiting: { reason: 'ImagePullBackOff' } } },
          ],
        },
      }),
    ).toEqual([
      { reason: 'Unschedulable', containers: [] },
      { reason: 'CrashLoopBackOff', containers: ['migrate', 'app'] },
      { reason: 'ImagePullBackOff', containers: ['proxy'] },
    ]);
  });
});

describe('podsOfRevision', () => {
  const pod = (name: string, revision?: string) => ({
    metadata: {
      name,
      ...(revision ? { annotations: { 'k8s-listener.io/revision-id': revision } } : {}),
    },
  });

  it("keeps the revision's pods and the stores' (no revision), not an older revision's", () => {
    const pods = [pod('web-old', 'r1'), pod('web-new', 'r2'), pod('db-0')];
    expect(podsOfRevision(pods, 'r2').map((p) => p.metadata.name)).toEqual(['web-new', 'db-0']);
    expect(podsOfRevision(pods, undefined)).toHaveLength(3);
  });

  it('is fed by pod summaries, which keep the revision annotation alone', () => {
    const live: LiveKubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web-old',
        uid: 'u1',
        resourceVersion: '1',
        labels: {},
        annotations: { 'k8s-listener.io/revision-id': 'r1', 'example.test/other': 'x' },
      },
    };
    const summary = podSummary(live);
    expect(summary.metadata.annotations).toEqual({ 'k8s-listener.io/revision-id': 'r1' });
    expect(podsOfRevision([summary], 'r2')).toEqual([]);
  });
});

describe('PodProblemClock', () => {
  const crashing = (name: string) => ({
    metadata: { name, uid: `uid-${name}` },
    status: {
      phase: 'Running',
      containerStatuses: [{ name: 'app', state: { waiting: { reason: 'CrashLoopBackOff' } } }],
    },
  });
  const healthy = (name: string) => ({
    metadata: { name, uid: `uid-${name}` },
    status: { phase: 'Running', containerStatuses: [{ name: 'app', state: { running: {} } }] },
  });
  const sinceOf = (problems: { pod: string; since: number }[], pod: string) =>
    problems.find((p) => p.pod === pod)?.since;

  it("restarts only the recovered pod's clock, never another pod's or another deployment's", () => {
    const clock = new PodProblemClock();
    clock.observe('d1', [crashing('a'), crashing('b')], 1_000);
    clock.observe('d2', [crashing('c')], 1_000);
    // Pod a recovers: its clock stops; b's keeps running.
    const afterReset = clock.observe('d1', [healthy('a'), crashing('b')], 5_000);
    expect(sinceOf(afterReset, 'b')).toBe(1_000);
    expect(sinceOf(afterReset, 'a')).toBeUndefined();
    // a crashes again: a new clock from now, b still from the start.
    const again = clock.observe('d1', [crashing('a'), crashing('b')], 9_000);
    expect([sinceOf(again, 'a'), sinceOf(again, 'b')]).toEqual([9_000, 1_000]);
    expect(sinceOf(clock.observe('d2', [crashing('c')], 9_000), 'c')).toBe(1_000);
  });

  it('holds only the live problems, however many pods came and went (no reset of all at a cap)', () => {
    const clock = new PodProblemClock();
    clock.observe('steady', [crashing('s')], 0);
    for (let i = 0; i < 20_000; i += 1) clock.observe('churn', [crashing(`p${i}`)], i);
    expect(clock.size).toBe(2);
    expect(sinceOf(clock.observe('steady', [crashing('s')], 30_000), 's')).toBe(0);
    clock.forget('steady');
    expect(sinceOf(clock.observe('steady', [crashing('s')], 31_000), 's')).toBe(31_000);
  });
});
