import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { podProblemReasons } from '../../../src/report/podProblems.ts';

describe('podProblemReasons', () => {
  it.each([
    [
      'a pod the scheduler cannot place',
      `
status:
  phase: Pending
  conditions: [{ type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available: 3 Insufficient cpu." }]`,
      ['Unschedulable'],
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
  ])('%s', (_name, yaml, reasons) => {
    expect(podProblemReasons(parse(yaml))).toEqual(reasons);
  });
});
