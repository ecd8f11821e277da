import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../../src/kube/index.ts';
import { ownedDigest, specView as viewOf } from '../../../../src/reconcile/steps/convergedState.ts';
import { RenderConfig } from '../../../../src/render/index.ts';
import { ownedAnnotations } from '../../../../src/render/ownedAnnotations.ts';

const AUTH_URL = 'nginx.ingress.kubernetes.io/auth-url';
const WHITELIST = 'nginx.ingress.kubernetes.io/whitelist-source-range';
/** The annotations an agent with an ingress controller's annotations configured writes. */
const owned = ownedAnnotations(
  RenderConfig.parse({
    ingress: {
      className: 'nginx',
      annotations: { [AUTH_URL]: 'https://auth.example.test/check', [WHITELIST]: '10.0.0.0/8' },
    },
  }),
);
const specView = (kind: string, live: LiveKubeObject | undefined) => viewOf(kind, live, owned);

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
    expect(ownedDigest(entries, () => undefined, owned)).not.toBe(
      ownedDigest(entries, () => deployment(), owned),
    );
  });

  describe('of an Ingress, whose generation no annotation edit moves', () => {
    const ingress = (annotations: Record<string, string>, resourceVersion = '100') =>
      ({
        ...deployment({ resourceVersion, generation: 1, annotations }),
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
      }) as LiveKubeObject;
    const rendered = {
      'k8s-listener.io/spec-hash': 'h1',
      [AUTH_URL]: 'https://auth.example.test/check',
      [WHITELIST]: '10.0.0.0/8',
    };
    const view = specView('Ingress', ingress(rendered));

    it.each([
      ['the auth-url annotation removed', { ...rendered, [AUTH_URL]: undefined }],
      ['the whitelist widened', { ...rendered, [WHITELIST]: '0.0.0.0/0' }],
    ])('moves with %s by hand', (_what, edited) => {
      const annotations = Object.fromEntries(
        Object.entries(edited).filter((entry): entry is [string, string] => entry[1] !== undefined),
      );
      expect(specView('Ingress', ingress(annotations, '101'))).not.toBe(view);
    });

    it("is unmoved by a controller's own annotation, which the agent does not write", () => {
      const annotated = { ...rendered, 'field.cattle.io/publicEndpoints': '[]' };
      expect(specView('Ingress', ingress(annotated, '101'))).toBe(view);
    });
  });
});
