import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../src/kube/kubeClient.ts';
import { maskSecretPair, pruneChange, stripServerFields } from '../../../src/kube/serverDiff.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

function live(extra: Record<string, unknown>, metadata: Record<string, unknown> = {}): LiveKubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'cm',
      namespace: 'ns',
      labels: { app: 'x' },
      annotations: {},
      uid: 'u-1',
      resourceVersion: '42',
      ...metadata,
    },
    ...extra,
  };
}

describe('stripServerFields', () => {
  it('drops what the API server maintains and kubectl last-applied, keeps everything else', () => {
    const object = live(
      { data: { a: '1' }, status: { phase: 'x' } },
      {
        generation: 3,
        creationTimestamp: '2026-01-01T00:00:00Z',
        managedFields: [{ manager: 'k8s-listener' }],
        selfLink: '/x',
        annotations: { keep: 'me', 'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"a":"1"}}' },
      },
    );
    expect(stripServerFields(object)).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace: 'ns', labels: { app: 'x' }, annotations: { keep: 'me' } },
      data: { a: '1' },
    });
    // The input is left as it was.
    expect(object.metadata.uid).toBe('u-1');
  });

  it('leaves out empty label and annotation maps', () => {
    expect(stripServerFields(live({}, { labels: {} })).metadata).toEqual({ name: 'cm', namespace: 'ns' });
  });
});

describe('maskSecretPair', () => {
  const secret = (data?: Record<string, string>, stringData?: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's' },
    ...(data ? { data } : {}),
    ...(stringData ? { stringData } : {}),
  });

  it.each([
    [
      'each key marked on both sides',
      secret({ same: b64('v'), changed: b64('old'), gone: b64('x') }),
      secret({ same: b64('v'), changed: b64('new'), added: b64('y') }),
      { changed: '(changed)', gone: '(removed)', same: '(unchanged)' },
      { added: '(added)', changed: '(changed)', same: '(unchanged)' },
    ],
    [
      'stringData is compared by its encoded value and folded into data',
      secret({ token: b64('abc') }),
      secret(undefined, { token: 'abc', other: 'z' }),
      { token: '(unchanged)' },
      { other: '(added)', token: '(unchanged)' },
    ],
  ])('%s', (_name, before, after, maskedBefore, maskedAfter) => {
    const [b, a] = maskSecretPair(before, after);
    expect(b?.data).toEqual(maskedBefore);
    expect(a?.data).toEqual(maskedAfter);
    expect(a).not.toHaveProperty('stringData');
    expect(JSON.stringify([b, a])).not.toMatch(/old|new|abc|YWJj|dg==/);
  });

  it('a creation is all additions, a deletion all removals', () => {
    expect(maskSecretPair(undefined, secret({ k: b64('v') }))[1]?.data).toEqual({ k: '(added)' });
    expect(maskSecretPair(secret({ k: b64('v') }), undefined)[0]?.data).toEqual({ k: '(removed)' });
  });

  it('leaves other kinds alone', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', data: { k: 'v' } };
    expect(maskSecretPair(cm, cm)).toEqual([cm, cm]);
  });

  it('a pruned Secret shows its keys as removed, never their values', () => {
    const entry = pruneChange({ ...live({ data: { password: b64('hunter2') } }), kind: 'Secret' });
    expect(entry.action).toBe('prune');
    expect(entry.after).toBeUndefined();
    expect(entry.before?.data).toEqual({ password: '(removed)' });
  });
});
