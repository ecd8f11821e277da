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
  it('drops data, templates and the spec but what the rollout status reads; keeps metadata and status', () => {
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
    expect(
      withoutBody({ kind: 'Service', spec: { type: 'ClusterIP', ports: [{ port: 80 }], selector: {} } }),
    ).toEqual({ kind: 'Service', spec: { type: 'ClusterIP' } });
    const deployment = {
      kind: 'Deployment',
      spec: {
        replicas: 2,
        progressDeadlineSeconds: 600,
        selector: { matchLabels: { app: 'web' } },
        template: {},
      },
    };
    expect(withoutBody(deployment)).toEqual({
      kind: 'Deployment',
      spec: { replicas: 2, progressDeadlineSeconds: 600 },
    });
    const bodiless = { kind: 'Service', spec: { type: 'ClusterIP', clusterIP: 'None' } };
    expect(withoutBody(bodiless)).toBe(bodiless);
  });

  it('digests the body alone: the same for a status change, another for a body change, none without one', () => {
    const one = statefulSet('postgres:16');
    expect(bodyDigest({ ...one, status: { readyReplicas: 0 } })).toBe(bodyDigest(one));
    expect(bodyDigest({ ...one, spec: { ...one.spec, replicas: 3 } })).toBe(bodyDigest(one));
    expect(bodyDigest(statefulSet('postgres:17'))).not.toBe(bodyDigest(one));
    expect(bodyDigest({ kind: 'Secret', data: { A: 'Yg==' } })).not.toBe(
      bodyDigest({ kind: 'Secret', data: { A: 'Yw==' } }),
    );
    // A scaler's replica count is kept, not body: it leaves the digest as it is.
    expect(bodyDigest({ ...one, spec: { ...one.spec, replicas: 5 } })).toBe(bodyDigest(one));
    const service = (port: number) => ({ kind: 'Service', spec: { type: 'ClusterIP', ports: [{ port }] } });
    expect(bodyDigest(service(80))).not.toBe(bodyDigest(service(81)));
    expect(bodyDigest({ kind: 'Service', spec: { type: 'ClusterIP' } })).toBeUndefined();
  });
});
