import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../src/kube/index.ts';
import { ownedDigest, specView } from '../../../src/reconcile/convergedState.ts';

const deployment = (over: Partial<LiveKubeObject['metadata']> = {}, status: unknown = {}): LiveKubeObject =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'apps',
      uid: 'u1',
      generation: 4,
      resourceVersion: '100',
      labels: { 'app.kubernetes.io/component': 'main', 'k8s-listener.io/deployment-id': 'd' },
      annotations: { 'k8s-listener.io/revision-id': 'r1', 'deployment.kubernetes.io/revision': '3' },
      ...over,
    },
    status,
  }) as unknown as LiveKubeObject;

describe('specView', () => {
  it('is unmoved by a status change and by annotations that are not the agent’s', () => {
    const view = specView('Deployment', deployment());
    expect(specView('Deployment', deployment({ resourceVersion: '101' }, { readyReplicas: 1 }))).toBe(view);
    expect(
      specView(
        'Deployment',
        deployment({
          annotations: { 'k8s-listener.io/revision-id': 'r1', 'deployment.kubernetes.io/revision': '4' },
        }),
      ),
    ).toBe(view);
  });

  it.each([
    ['a spec change (generation)', { generation: 5 }],
    ['a label', { labels: { 'app.kubernetes.io/component': 'queue', 'k8s-listener.io/deployment-id': 'd' } }],
    [
      'a label added',
      { labels: { 'app.kubernetes.io/component': 'main', 'k8s-listener.io/deployment-id': 'd', x: 'y' } },
    ],
    ['an annotation of the agent', { annotations: { 'k8s-listener.io/revision-id': 'r2' } }],
    ['another object under the name', { uid: 'u2' }],
  ])('moves with %s', (_what, over) => {
    expect(specView('Deployment', deployment(over))).not.toBe(specView('Deployment', deployment()));
  });

  it('takes any new resourceVersion of a kind whose generation does not stand for its spec', () => {
    const secret = (resourceVersion: string) =>
      ({ ...deployment({ resourceVersion, generation: 1 }), kind: 'Secret' }) as LiveKubeObject;
    expect(specView('Secret', secret('7'))).not.toBe(specView('Secret', secret('8')));
    expect(specView('HorizontalPodAutoscaler', secret('7'))).not.toBe(
      specView('HorizontalPodAutoscaler', secret('8')),
    );
  });

  it('tells an absent object from any live one', () => {
    expect(specView('Deployment', undefined)).toBe('absent');
    const entries = [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'apps', name: 'web' }];
    expect(ownedDigest(entries, () => undefined)).not.toBe(ownedDigest(entries, () => deployment()));
  });
});
