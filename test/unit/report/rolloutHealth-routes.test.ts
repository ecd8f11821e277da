// An HTTPRoute's health is its Gateways' word: each parent's Accepted and ResolvedRefs conditions.
// And a KEDA ScaledObject's, like an HPA's: progress while KEDA cannot scale.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { withoutBody } from '../../../src/objects/body.ts';
import { ROLLOUT_KINDS } from '../../../src/objects/kinds.ts';
import {
  computeObjectStatus,
  computeRollout,
  isRoutineProgress,
  type LiveObject,
  Reason,
  STATUS_READ_KINDS,
} from '../../../src/report/rolloutHealth.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const clock = { now: NOW, failureGraceMs: 60_000 };
const RECENT = '2026-11-22T11:59:50Z';
const LONG_AGO = '2026-11-22T11:50:00Z';

function route(parents: string, generation = 2): LiveObject {
  return parse(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web, namespace: apps, generation: ${generation} }
spec:
  parentRefs:
    - { name: shared, namespace: gateways, sectionName: https }
  hostnames: [web.example.test]
status:
  parents: ${parents}`) as LiveObject;
}

const parent = (
  conditions: string,
  ref = '{ group: gateway.networking.k8s.io, kind: Gateway, name: shared, namespace: gateways, sectionName: https }',
) =>
  `
    - parentRef: ${ref}
      controllerName: gateway.example.test/controller
      conditions: ${conditions}`;

describe('an HTTPRoute', () => {
  it.each([
    [
      'accepted, its backend resolved',
      route(
        parent(
          `[{ type: Accepted, status: "True", reason: Accepted, observedGeneration: 2 }, { type: ResolvedRefs, status: "True", reason: ResolvedRefs, observedGeneration: 2 }]`,
        ),
      ),
      'Current',
      Reason.Current,
    ],
    ['not yet reported on by its Gateway', route('[]'), 'InProgress', Reason.RoutePending],
    [
      'reported on by another Gateway only',
      route(
        parent(
          `[{ type: Accepted, status: "True", reason: Accepted }]`,
          '{ name: other, namespace: gateways }',
        ),
      ),
      'InProgress',
      Reason.RoutePending,
    ],
    [
      'accepted for an older generation',
      route(parent(`[{ type: Accepted, status: "True", reason: Accepted, observedGeneration: 1 }]`)),
      'InProgress',
      Reason.RoutePending,
    ],
    [
      'pending at its Gateway',
      route(parent(`[{ type: Accepted, status: "False", reason: Pending, observedGeneration: 2 }]`)),
      'InProgress',
      Reason.RoutePending,
    ],
    [
      'refused by its Gateway',
      route(
        parent(
          `[{ type: Accepted, status: "False", reason: NotAllowedByListeners, message: "no listener admits namespace apps", observedGeneration: 2 }]`,
        ),
      ),
      'Failed',
      Reason.RouteRefused,
    ],
    [
      'refused for a host no listener has, even with a stale ResolvedRefs',
      route(
        parent(
          `[{ type: Accepted, status: "False", reason: NoMatchingListenerHostname, observedGeneration: 2 }, { type: ResolvedRefs, status: "False", reason: BackendNotFound, lastTransitionTime: "${LONG_AGO}", observedGeneration: 1 }]`,
        ),
      ),
      'Failed',
      Reason.RouteRefused,
    ],
    [
      'with a backend just not found',
      route(
        parent(
          `[{ type: Accepted, status: "True", reason: Accepted, observedGeneration: 2 }, { type: ResolvedRefs, status: "False", reason: BackendNotFound, lastTransitionTime: "${RECENT}", observedGeneration: 2 }]`,
        ),
      ),
      'InProgress',
      Reason.RouteRefsUnresolved,
    ],
    [
      'with a backend not found past the grace period',
      route(
        parent(
          `[{ type: Accepted, status: "True", reason: Accepted, observedGeneration: 2 }, { type: ResolvedRefs, status: "False", reason: BackendNotFound, lastTransitionTime: "${LONG_AGO}", observedGeneration: 2 }]`,
        ),
      ),
      'Failed',
      Reason.RouteRefsUnresolved,
    ],
  ])('%s: %s (%s)', (_name, object, status, reason) => {
    const result = computeObjectStatus(object, clock);
    expect(result.status).toBe(status);
    expect(result.reason).toBe(reason);
  });

  it('names the Gateway and its reason when it refuses the route, and fails the rollout with them', () => {
    const refused = route(
      parent(
        `[{ type: Accepted, status: "False", reason: NotAllowedByListeners, message: "no listener admits namespace apps", observedGeneration: 2 }]`,
      ),
    );
    const rollout = computeRollout({
      objects: [{ component: 'main', object: refused }],
      podProblems: [],
      now: NOW,
      failureGraceMs: 60_000,
    });
    expect(rollout).toEqual({
      revisionStatus: 'DEPLOY_FAILED',
      deploymentStatus: undefined,
      reason: Reason.RouteRefused,
      message:
        'HTTPRoute web: Gateway gateways/shared refused the route (NotAllowedByListeners: no listener admits namespace apps)',
    });
  });

  it('is read from the watch cache with its parents: they stay when the body is dropped', () => {
    expect(STATUS_READ_KINDS).toContain('HTTPRoute');
    const pending = route('[]');
    const slim = withoutBody(pending) as LiveObject;
    expect(slim.spec).toEqual({
      parentRefs: [{ name: 'shared', namespace: 'gateways', sectionName: 'https' }],
    });
    expect(computeObjectStatus(slim, clock).reason).toBe(Reason.RoutePending);
  });

  it('counts in the rollout of its deployment, as does a ScaledObject', () => {
    expect(ROLLOUT_KINDS.has('HTTPRoute')).toBe(true);
    expect(ROLLOUT_KINDS.has('ScaledObject')).toBe(true);
    // Only what carries a status the checks read: not the TriggerAuthentication.
    expect(ROLLOUT_KINDS.has('TriggerAuthentication')).toBe(false);
  });

  it('waiting for its Gateway is routine progress; a refusal or an unresolved backend is not', () => {
    expect(isRoutineProgress(Reason.RoutePending)).toBe(true);
    expect(isRoutineProgress(Reason.RouteRefused)).toBe(false);
    expect(isRoutineProgress(Reason.RouteRefsUnresolved)).toBe(false);
  });
});

describe('a KEDA ScaledObject', () => {
  const scaled = (conditions: string) =>
    parse(`
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: { name: web-queue, generation: 1 }
status: { conditions: ${conditions} }`) as LiveObject;

  it.each([
    ['without a word from KEDA', '[]', 'Current'],
    ['ready', '[{ type: Ready, status: "True", reason: ScaledObjectReady }]', 'Current'],
    [
      'unable to scale',
      '[{ type: Ready, status: "False", reason: ScaledObjectCheckFailed, message: "error parsing postgreSQL metadata" }]',
      'InProgress',
    ],
  ])('%s: %s', (_name, conditions, status) => {
    const result = computeObjectStatus(scaled(conditions), clock);
    expect(result.status).toBe(status);
    if (status === 'InProgress') {
      expect(result.reason).toBe(Reason.HpaUnable);
      expect(result.message).toContain('error parsing postgreSQL metadata');
    }
  });
});
