import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../src/kube/kubeClient.ts';
import { ObjectCache } from '../../../src/kube/objectCache.ts';

function service(
  resourceVersion: string,
  uid = 'u1',
  extra: Record<string, unknown> = {},
  labels: Record<string, string> = {},
): LiveKubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'web',
      namespace: 'apps',
      uid,
      resourceVersion,
      labels,
      annotations: {},
      managedFields: [{ manager: 'k8s-listener' }],
    },
    ...extra,
  } as unknown as LiveKubeObject;
}

const ref = { apiVersion: 'v1', kind: 'Service', namespace: 'apps', name: 'web' };

describe('ObjectCache', () => {
  it('holds what the watch saw, by reference, without managed fields', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    expect(cache.get(ref)).toBeUndefined();
    cache.observe({ type: 'ADDED', object: service('10') });
    expect(cache.get(ref)?.metadata.resourceVersion).toBe('10');
    expect(cache.get(ref)?.metadata).not.toHaveProperty('managedFields');
    expect(cache.get({ ...ref, namespace: 'other' })).toBeUndefined();
    expect(cache.get({ ...ref, kind: 'Secret' })).toBeUndefined();
  });

  it('keeps our own write when a watch event from before it arrives late', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    cache.observe({ type: 'ADDED', object: service('10') });
    cache.written(service('12', 'u1', { spec: { ports: [] } }));
    cache.observe({ type: 'MODIFIED', object: service('11') });
    expect(cache.get(ref)?.metadata.resourceVersion).toBe('12');
    cache.observe({ type: 'MODIFIED', object: service('13') });
    expect(cache.get(ref)?.metadata.resourceVersion).toBe('13');
  });

  it('forgets a deleted object, but not one recreated since under the same name', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    cache.observe({ type: 'ADDED', object: service('10', 'old') });
    cache.written(service('20', 'new'));
    cache.observe({ type: 'DELETED', object: service('15', 'old') });
    expect(cache.get(ref)?.metadata.uid).toBe('new');
    cache.observe({ type: 'DELETED', object: service('21', 'new') });
    expect(cache.get(ref)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('takes a version it cannot order as the newer one', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    cache.observe({ type: 'ADDED', object: service('20') });
    cache.observe({ type: 'MODIFIED', object: service('opaque-1') });
    expect(cache.get(ref)?.metadata.resourceVersion).toBe('opaque-1');
  });

  it('says what an event told: not the echo of our own write, nor one older than it', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    expect(cache.observe({ type: 'ADDED', object: service('10') })).toBe('changed');
    cache.written(service('12'));
    expect(cache.observe({ type: 'MODIFIED', object: service('12') })).toBe('none');
    expect(cache.observe({ type: 'MODIFIED', object: service('11') })).toBe('none');
    expect(cache.observe({ type: 'MODIFIED', object: service('13') })).toBe('changed');
    expect(cache.observe({ type: 'DELETED', object: service('14', 'other-uid') })).toBe('none');
    expect(cache.observe({ type: 'DELETED', object: service('14') })).toBe('changed');
  });

  it('tells a change of status alone (same generation) from a change of spec', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    const deployment = (resourceVersion: string, generation: number, uid = 'u1') =>
      ({
        ...service(resourceVersion, uid),
        kind: 'Deployment',
        metadata: { ...service(resourceVersion, uid).metadata, generation },
      }) as LiveKubeObject;
    cache.written(deployment('10', 1));
    expect(cache.observe({ type: 'MODIFIED', object: deployment('11', 1) })).toBe('status');
    expect(cache.observe({ type: 'MODIFIED', object: deployment('12', 2) })).toBe('changed');
    // Recreated under the same name: a new object, whatever its generation.
    expect(cache.observe({ type: 'ADDED', object: deployment('13', 2, 'u2') })).toBe('changed');
  });

  it('lists by the index label, following relabels and deletions', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    cache.observe({ type: 'ADDED', object: service('10', 'u1', {}, { deployment: 'd1' }) });
    expect(cache.byLabel('Service', 'apps', 'd1').map((o) => o.metadata.uid)).toEqual(['u1']);
    expect(cache.byLabel('Service', 'other', 'd1')).toEqual([]);
    expect(cache.byLabel('Secret', 'apps', 'd1')).toEqual([]);
    cache.observe({ type: 'MODIFIED', object: service('11', 'u1', {}, { deployment: 'd2' }) });
    expect(cache.byLabel('Service', 'apps', 'd1')).toEqual([]);
    expect(cache.byLabel('Service', 'apps', 'd2')).toHaveLength(1);
    cache.observe({ type: 'DELETED', object: service('12', 'u1', {}, { deployment: 'd2' }) });
    expect(cache.byLabel('Service', 'apps', 'd2')).toEqual([]);
  });

  it('drops a body found to hold our fields, while later versions keep the same body', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    const template = { spec: { containers: [{ name: 'app', image: 'web:1' }] } };
    const deployment = (resourceVersion: string, image = 'web:1', ready = 0) =>
      ({
        ...service(resourceVersion),
        kind: 'Deployment',
        spec: { replicas: 2, template: { ...template, spec: { containers: [{ name: 'app', image }] } } },
        status: { readyReplicas: ready },
      }) as unknown as LiveKubeObject;
    cache.observe({ type: 'ADDED', object: deployment('10') });
    const whole = cache.get({ ...ref, kind: 'Deployment' });
    expect(whole && cache.isSlim(whole)).toBe(false);
    // A check of an older version than the one held is ignored.
    cache.checked(deployment('9'));
    expect(cache.get({ ...ref, kind: 'Deployment' })).toHaveProperty('spec.template');
    if (whole) cache.checked(whole);
    const slim = cache.get({ ...ref, kind: 'Deployment' });
    expect(slim && cache.isSlim(slim)).toBe(true);
    expect(slim).not.toHaveProperty('spec.template');
    expect(slim).toMatchObject({ spec: { replicas: 2 }, status: { readyReplicas: 0 } });

    // Status updates carry the same body: still held slim, with the new status.
    cache.observe({ type: 'MODIFIED', object: deployment('11', 'web:1', 1) });
    const updated = cache.get({ ...ref, kind: 'Deployment' });
    expect(updated && cache.isSlim(updated)).toBe(true);
    expect(updated).toMatchObject({ status: { readyReplicas: 1 } });

    // A changed body (a hand edit of the image) is held whole, for the next drift check.
    cache.observe({ type: 'MODIFIED', object: deployment('12', 'web:2', 1) });
    const edited = cache.get({ ...ref, kind: 'Deployment' });
    expect(edited && cache.isSlim(edited)).toBe(false);
    expect(edited).toMatchObject({ spec: { template: { spec: { containers: [{ image: 'web:2' }] } } } });
    // And stays whole when the body goes back: it has not been checked since.
    cache.observe({ type: 'MODIFIED', object: deployment('13', 'web:1', 1) });
    expect(cache.get({ ...ref, kind: 'Deployment' })).toHaveProperty('spec.template');
  });

  it('holds a checked Secret without its data', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    const secret = {
      ...service('10', 'u1', { data: { PASSWORD: 'c2VjcmV0' } }),
      kind: 'Secret',
    } as LiveKubeObject;
    cache.written(secret);
    const held = cache.get({ ...ref, kind: 'Secret' });
    if (held) cache.checked(held);
    expect(cache.get({ ...ref, kind: 'Secret' })).not.toHaveProperty('data');
    // An object without a body has nothing to drop: held as it is.
    cache.written(service('11'));
    const plain = cache.get(ref);
    if (plain) cache.checked(plain);
    expect(plain && cache.isSlim(plain)).toBe(false);
  });

  it('calls a kind complete in a namespace only once its watch has listed there', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    expect(cache.isSynced('Pod', 'apps')).toBe(false);
    cache.markSynced(['Pod', 'Service'], 'apps');
    expect(cache.isSynced('Pod', 'apps')).toBe(true);
    expect(cache.isSynced('Service', 'apps')).toBe(true);
    expect(cache.isSynced('Pod', 'other')).toBe(false);
  });
});

describe('ObjectCache string pool', () => {
  const labels = (deployment: string) => ({ deployment: `d-${deployment}`, listener: ['l', 'x'].join('-') });
  const named = (name: string, resourceVersion: string, uid: string, deployment = '111') => {
    const object = service(resourceVersion, uid, {}, labels(deployment));
    object.metadata.name = name;
    return object;
  };

  it('shares one copy of each label value and namespace between objects, and lets go of the last', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment' });
    cache.observe({ type: 'ADDED', object: named('web', '10', 'ua') });
    cache.observe({ type: 'ADDED', object: named('api', '11', 'ub') });
    // The deployment, the listener and the namespace: three values, however many objects.
    expect(cache.pooledStrings).toBe(3);
    const web = cache.get(ref);
    const api = cache.get({ ...ref, name: 'api' });
    expect(web?.metadata.labels).toEqual(labels('111'));
    expect(api?.metadata.labels.deployment).toBe(web?.metadata.labels.deployment);
    expect(
      cache
        .byLabel('Service', 'apps', 'd-111')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['api', 'web']);

    // New versions with another deployment label: the old value goes once no object carries it.
    cache.observe({ type: 'MODIFIED', object: named('web', '12', 'ua', '222') });
    expect(cache.pooledStrings).toBe(4);
    cache.observe({ type: 'MODIFIED', object: named('api', '13', 'ub', '222') });
    expect(cache.pooledStrings).toBe(3);
    expect(cache.byLabel('Service', 'apps', 'd-111')).toEqual([]);
    expect(cache.byLabel('Service', 'apps', 'd-222')).toHaveLength(2);

    cache.observe({ type: 'DELETED', object: named('web', '14', 'ua', '222') });
    expect(cache.pooledStrings).toBe(3);
    cache.observe({ type: 'DELETED', object: named('api', '15', 'ub', '222') });
    expect(cache.size).toBe(0);
    expect(cache.pooledStrings).toBe(0);
  });

  it('holds only the metadata anyone reads, and of the annotations only the kept ones', () => {
    const cache = new ObjectCache({
      indexLabel: 'deployment',
      keptAnnotations: (key) => key.startsWith('agent/'),
      sharedAnnotations: ['agent/revision'],
    });
    const withMetadata = (name: string, uid: string) => {
      const object = service('10', uid, {}, { deployment: 'd1' });
      object.metadata.name = name;
      Object.assign(object.metadata, {
        generation: 3,
        ownerReferences: [{ kind: 'ReplicaSet', name: 'rs' }],
        finalizers: ['kubernetes.io/pvc-protection'],
        generateName: 'web-',
        annotations: {
          'agent/revision': `r${'1'.repeat(3)}`,
          'agent/spec-hash': `h-${name}`,
          'deployment.kubernetes.io/revision': '1',
        },
      });
      return object;
    };
    cache.observe({ type: 'ADDED', object: withMetadata('web', 'u1') });
    cache.observe({ type: 'ADDED', object: withMetadata('api', 'u2') });
    const web = cache.get(ref);
    const api = cache.get({ ...ref, name: 'api' });
    expect(web?.metadata).toEqual({
      name: 'web',
      namespace: 'apps',
      uid: 'u1',
      resourceVersion: '10',
      generation: 3,
      labels: { deployment: 'd1' },
      annotations: { 'agent/revision': 'r111', 'agent/spec-hash': 'h-web' },
    });
    // A shared annotation's value is one pooled copy, counted with the label values: the
    // deployment label, the namespace and the revision.
    expect(cache.pooledStrings).toBe(3);
    cache.observe({ type: 'DELETED', object: withMetadata('web', 'u1') });
    expect(cache.pooledStrings).toBe(3);
    expect(api?.metadata.annotations['agent/revision']).toBe('r111');
    cache.observe({ type: 'DELETED', object: withMetadata('api', 'u2') });
    expect(cache.pooledStrings).toBe(0);

    // An object none of whose annotations is kept holds none.
    const bare = service('20', 'u3');
    bare.metadata.annotations = { 'other/note': 'x' };
    cache.observe({ type: 'ADDED', object: bare });
    expect(cache.get(ref)?.metadata.annotations).toEqual({});
  });
});

describe('ObjectCache: what it holds', () => {
  it('indexes only the kinds it is asked to list, and refuses to list any other', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment', indexedKinds: ['Pod'] });
    const pod = { ...service('10', 'p1', {}, { deployment: 'd1' }), kind: 'Pod' } as LiveKubeObject;
    cache.observe({ type: 'ADDED', object: pod });
    cache.observe({ type: 'ADDED', object: service('11', 'u1', {}, { deployment: 'd1' }) });
    expect(cache.byLabel('Pod', 'apps', 'd1').map((o) => o.metadata.uid)).toEqual(['p1']);
    expect(() => cache.byLabel('Service', 'apps', 'd1')).toThrow('Service is not indexed');
    // Still held by reference.
    expect(cache.get(ref)?.metadata.uid).toBe('u1');
  });

  it('holds the kinds whose body nobody reads without it from the first event', () => {
    const cache = new ObjectCache({ indexLabel: 'deployment', bodylessKinds: ['ConfigMap'] });
    const configMap = {
      ...service('10', 'c1'),
      kind: 'ConfigMap',
      metadata: { ...service('10', 'c1').metadata, annotations: { status: 'DEPLOYED' } },
      data: { inventory: '{"entries":[]}' },
    } as unknown as LiveKubeObject;
    cache.observe({ type: 'ADDED', object: configMap });
    const held = cache.get({ ...ref, kind: 'ConfigMap' });
    expect(held).not.toHaveProperty('data');
    expect(held?.metadata.annotations).toEqual({ status: 'DEPLOYED' });
    expect(held && cache.isSlim(held)).toBe(true);
    // Other kinds keep theirs until checked.
    cache.observe({ type: 'ADDED', object: { ...configMap, kind: 'Secret' } as LiveKubeObject });
    expect(cache.get({ ...ref, kind: 'Secret' })).toHaveProperty('data');
  });

  it('keeps the status only of the kinds whose status is read, without the fields nobody reads', () => {
    const cache = new ObjectCache({
      indexLabel: 'deployment',
      statusKinds: ['Deployment'],
      detailedConditions: ['ReplicaFailure'],
    });
    const condition = {
      type: 'Available',
      status: 'True',
      reason: 'MinimumReplicasAvailable',
      message: 'Deployment has minimum availability.',
      lastUpdateTime: '2026-11-25T07:00:00Z',
      lastTransitionTime: '2026-11-25T07:00:01Z',
    };
    const withStatus = (kind: string, uid: string) =>
      ({
        ...service('10', uid, {
          status: { replicas: 1, conditions: [condition, { ...condition, type: 'ReplicaFailure' }] },
        }),
        kind,
        metadata: { ...service('10', uid).metadata, creationTimestamp: '2026-11-25T06:59:59Z' },
      }) as LiveKubeObject;
    cache.observe({ type: 'ADDED', object: withStatus('Deployment', 'd') });
    cache.observe({ type: 'ADDED', object: withStatus('PodDisruptionBudget', 'p') });
    const deployment = cache.get({ ...ref, kind: 'Deployment' }) as LiveKubeObject & { status?: unknown };
    expect(deployment.status).toEqual({
      replicas: 1,
      conditions: [
        { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
        {
          type: 'ReplicaFailure',
          status: 'True',
          reason: 'MinimumReplicasAvailable',
          message: 'Deployment has minimum availability.',
          lastTransitionTime: '2026-11-25T07:00:01Z',
        },
      ],
    });
    expect(deployment.metadata).not.toHaveProperty('creationTimestamp');
    expect(cache.get({ ...ref, kind: 'PodDisruptionBudget' })).not.toHaveProperty('status');

    // Conditions read for type, status and reason alone are one shared copy across workloads.
    cache.observe({
      type: 'ADDED',
      object: {
        ...withStatus('Deployment', 'e'),
        metadata: { ...service('10', 'e').metadata, name: 'other' },
      },
    });
    const conditionsOf = (name: string) =>
      (
        cache.get({ ...ref, kind: 'Deployment', name }) as LiveKubeObject & {
          status: { conditions: object[] };
        }
      ).status.conditions;
    expect(conditionsOf('other')[0]).toBe(conditionsOf(ref.name)[0]);
    expect(conditionsOf('other')[1]).not.toBe(conditionsOf(ref.name)[1]);
  });
});
