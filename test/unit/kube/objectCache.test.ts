import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../src/kube/kubeClient.ts';
import { ObjectCache } from '../../../src/kube/objectCache.ts';

function service(resourceVersion: string, uid = 'u1', extra: Record<string, unknown> = {}): LiveKubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'web',
      namespace: 'apps',
      uid,
      resourceVersion,
      labels: {},
      annotations: {},
      managedFields: [{ manager: 'k8s-listener' }],
    },
    ...extra,
  } as unknown as LiveKubeObject;
}

const ref = { apiVersion: 'v1', kind: 'Service', namespace: 'apps', name: 'web' };

describe('ObjectCache', () => {
  it('holds what the watch saw, by reference, without managed fields', () => {
    const cache = new ObjectCache();
    expect(cache.get(ref)).toBeUndefined();
    cache.observe({ type: 'ADDED', object: service('10') });
    expect(cache.get(ref)?.metadata.resourceVersion).toBe('10');
    expect(cache.get(ref)?.metadata).not.toHaveProperty('managedFields');
    expect(cache.get({ ...ref, namespace: 'other' })).toBeUndefined();
    expect(cache.get({ ...ref, kind: 'Secret' })).toBeUndefined();
  });

  it('keeps our own write when a watch event from before it arrives late', () => {
    const cache = new ObjectCache();
    cache.observe({ type: 'ADDED', object: service('10') });
    cache.written(service('12', 'u1', { spec: { ports: [] } }));
    cache.observe({ type: 'MODIFIED', object: service('11') });
    expect(cache.get(ref)?.metadata.resourceVersion).toBe('12');
    cache.observe({ type: 'MODIFIED', object: service('13') });
    expect(cache.get(ref)?.metadata.resourceVersion).toBe('13');
  });

  it('forgets a deleted object, but not one recreated since under the same name', () => {
    const cache = new ObjectCache();
    cache.observe({ type: 'ADDED', object: service('10', 'old') });
    cache.written(service('20', 'new'));
    cache.observe({ type: 'DELETED', object: service('15', 'old') });
    expect(cache.get(ref)?.metadata.uid).toBe('new');
    cache.observe({ type: 'DELETED', object: service('21', 'new') });
    expect(cache.get(ref)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('takes a version it cannot order as the newer one', () => {
    const cache = new ObjectCache();
    cache.observe({ type: 'ADDED', object: service('20') });
    cache.observe({ type: 'MODIFIED', object: service('opaque-1') });
    expect(cache.get(ref)?.metadata.resourceVersion).toBe('opaque-1');
  });
});
