// The kind table and paths, MicroTime formatting, and error classification: pure functions.
import { describe, expect, it } from 'vitest';
import {
  findResourceType,
  formatMicroTime,
  isConflict,
  isForbidden,
  isInvalid,
  isManagedKind,
  isNotFound,
  isTransient,
  KubeApiError,
  parseMicroTime,
  resourcePath,
  resourceTypeOf,
} from '../../../src/kube/index.ts';

describe('resource paths', () => {
  it.each([
    ['v1', 'Secret', 'ns', 'creds', '/api/v1/namespaces/ns/secrets/creds'],
    ['v1', 'Namespace', undefined, 'team-a', '/api/v1/namespaces/team-a'],
    ['apps/v1', 'StatefulSet', 'ns', 'db', '/apis/apps/v1/namespaces/ns/statefulsets/db'],
    [
      'autoscaling/v2',
      'HorizontalPodAutoscaler',
      'ns',
      'web',
      '/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers/web',
    ],
    [
      'policy/v1',
      'PodDisruptionBudget',
      'ns',
      'web',
      '/apis/policy/v1/namespaces/ns/poddisruptionbudgets/web',
    ],
    [
      'networking.k8s.io/v1',
      'Ingress',
      'ns',
      'web',
      '/apis/networking.k8s.io/v1/namespaces/ns/ingresses/web',
    ],
    [
      'coordination.k8s.io/v1',
      'Lease',
      'ns',
      'leader',
      '/apis/coordination.k8s.io/v1/namespaces/ns/leases/leader',
    ],
    ['events.k8s.io/v1', 'Event', 'ns', 'web.1', '/apis/events.k8s.io/v1/namespaces/ns/events/web.1'],
    ['v1', 'Event', 'ns', 'web.1', '/api/v1/namespaces/ns/events/web.1'],
    ['v1', 'PodTemplate', 'ns', 'exec', '/api/v1/namespaces/ns/podtemplates/exec'],
  ])('%s %s → path', (apiVersion, kind, namespace, name, path) => {
    const type = findResourceType(apiVersion, kind);
    expect(type).toBeDefined();
    if (type) expect(resourcePath(type, namespace, name)).toBe(path);
  });

  it('gives cluster-wide and namespaced collections, and escapes names', () => {
    const deployments = resourceTypeOf('Deployment');
    expect(deployments?.apiVersion).toBe('apps/v1');
    if (!deployments) return;
    expect(resourcePath(deployments, undefined)).toBe('/apis/apps/v1/deployments');
    expect(resourcePath(deployments, 'ns')).toBe('/apis/apps/v1/namespaces/ns/deployments');
    expect(resourcePath(deployments, 'ns', 'a/b')).toBe('/apis/apps/v1/namespaces/ns/deployments/a%2Fb');
  });

  it('resolves Event to events.k8s.io and rejects unknown kinds', () => {
    expect(resourceTypeOf('Event')?.apiVersion).toBe('events.k8s.io/v1');
    expect(resourceTypeOf({ apiVersion: 'v1', kind: 'Event' })?.group).toBe('');
    expect(findResourceType('apps/v1beta1', 'Deployment')).toBeUndefined();
    expect(findResourceType('v1', 'Node')).toBeUndefined();
    expect(isManagedKind('Ingress')).toBe(true);
    expect(isManagedKind('CronJob')).toBe(false);
  });
});

describe('MicroTime', () => {
  it('has exactly six fractional digits and round-trips to the millisecond', () => {
    const ms = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
    expect(formatMicroTime(ms)).toBe('2025-01-02T03:04:05.678000Z');
    expect(parseMicroTime(formatMicroTime(ms))).toBe(ms);
    expect(parseMicroTime('2025-01-02T03:04:05.678123Z')).toBe(ms);
    expect(parseMicroTime('not a time')).toBeUndefined();
    expect(parseMicroTime(undefined)).toBeUndefined();
  });
});

describe('error classification', () => {
  const error = (status: number | undefined, reason?: string) =>
    new KubeApiError({ verb: 'apply', kind: 'Deployment', namespace: 'apps', name: 'web', status, reason });

  it.each([
    [
      404,
      'NotFound',
      { notFound: true, conflict: false, invalid: false, forbidden: false, transient: false },
    ],
    [
      409,
      'Conflict',
      { notFound: false, conflict: true, invalid: false, forbidden: false, transient: false },
    ],
    [422, 'Invalid', { notFound: false, conflict: false, invalid: true, forbidden: false, transient: false }],
    [
      400,
      'BadRequest',
      { notFound: false, conflict: false, invalid: true, forbidden: false, transient: false },
    ],
    [500, 'Invalid', { notFound: false, conflict: false, invalid: true, forbidden: false, transient: false }],
    [
      403,
      'Forbidden',
      { notFound: false, conflict: false, invalid: false, forbidden: true, transient: false },
    ],
    [
      429,
      'TooManyRequests',
      { notFound: false, conflict: false, invalid: false, forbidden: false, transient: true },
    ],
    [
      503,
      'ServiceUnavailable',
      { notFound: false, conflict: false, invalid: false, forbidden: false, transient: true },
    ],
    [
      undefined,
      'NetworkError',
      { notFound: false, conflict: false, invalid: false, forbidden: false, transient: true },
    ],
    [
      undefined,
      'Aborted',
      { notFound: false, conflict: false, invalid: false, forbidden: false, transient: false },
    ],
  ])('%s %s', (status, reason, expected) => {
    const e = error(status, reason);
    expect({
      notFound: isNotFound(e),
      conflict: isConflict(e),
      invalid: isInvalid(e),
      forbidden: isForbidden(e),
      transient: isTransient(e),
    }).toEqual(expected);
  });

  it('names the object and verb; a Secret keeps only status, reason and fields', () => {
    const plain = new KubeApiError({
      verb: 'apply',
      kind: 'Deployment',
      namespace: 'apps',
      name: 'web',
      status: 422,
      reason: 'Invalid',
      serverMessage: 'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1',
    });
    expect(plain.message).toBe(
      'Deployment/apps/web apply failed: Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1',
    );
    expect(plain.code).toBe('KUBE_API');
    expect(plain.ref).toBe('Deployment/apps/web');
    const secret = new KubeApiError({
      verb: 'create',
      kind: 'Secret',
      namespace: 'apps',
      name: 'db',
      status: 422,
      reason: 'Invalid',
      serverMessage: 'Secret "db" is invalid: data[x]: Invalid value: "p4ss"',
      causes: [{ field: 'data[x]', reason: 'FieldValueInvalid' }],
    });
    expect(secret.message).toBe('Secret/apps/db create failed: 422 Invalid (fields: data[x])');
    expect(isNotFound(new Error('404'))).toBe(false);
  });
});
