// The body of an object (what only a drift check reads) and its digest.
import { describe, expect, it } from 'vitest';
import { bodyDigest, withoutBody } from '../../../src/objects/body.ts';

const statefulSet = (image: string) => ({
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  metadata: { name: 'db', labels: { app: 'db' } },
  spec: {
    replicas: 1,
    updateStrategy: { type: 'RollingUpdate' },
    template: { spec: { containers: [{ name: 'db', image }] } },
    volumeClaimTemplates: [{ metadata: { name: 'data' } }],
  },
  status: { readyReplicas: 1 },
});

describe('object body', () => {
  it('drops pod and claim templates and data, keeps metadata, status and the rest of the spec', () => {
    const slim = withoutBody(statefulSet('postgres:16'));
    expect(slim).toEqual({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', labels: { app: 'db' } },
      spec: { replicas: 1, updateStrategy: { type: 'RollingUpdate' } },
      status: { readyReplicas: 1 },
    });
    expect(withoutBody({ kind: 'Secret', metadata: {}, type: 'Opaque', data: { A: 'Yg==' } })).toEqual({
      kind: 'Secret',
      metadata: {},
      type: 'Opaque',
    });
    const service = { kind: 'Service', spec: { ports: [{ port: 80 }] } };
    expect(withoutBody(service)).toBe(service);
  });

  it('digests the body alone: the same for a status change, another for a body change, none without one', () => {
    const one = statefulSet('postgres:16');
    expect(bodyDigest({ ...one, status: { readyReplicas: 0 } })).toBe(bodyDigest(one));
    expect(bodyDigest({ ...one, spec: { ...one.spec, replicas: 3 } })).toBe(bodyDigest(one));
    expect(bodyDigest(statefulSet('postgres:17'))).not.toBe(bodyDigest(one));
    expect(bodyDigest({ kind: 'Secret', data: { A: 'Yg==' } })).not.toBe(
      bodyDigest({ kind: 'Secret', data: { A: 'Yw==' } }),
    );
    expect(bodyDigest({ kind: 'Service', spec: { ports: [] } })).toBeUndefined();
  });
});
