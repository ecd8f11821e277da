// The annotations the agent writes on its objects' metadata are all known from its configuration,
// so that the watch cache keeps them and the spec view covers them: a render with every source of
// them (an ingress controller's, a Gateway's, KEDA's) writes none that `ownedAnnotations` misses.
import { describe, expect, it } from 'vitest';
import { RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import { ownedAnnotations } from '../../../src/render/ownedAnnotations.ts';
import {
  gatewayKedaConfig,
  goldenConfig,
  listener,
  maximalDeployment,
} from '../../support/renderFixtures.ts';

const withIngressAnnotations = RenderConfig.parse({
  ...goldenConfig,
  ingress: {
    ...goldenConfig.ingress,
    annotations: {
      'nginx.ingress.kubernetes.io/auth-url': 'https://auth.example.test/check',
      'nginx.ingress.kubernetes.io/whitelist-source-range': '10.0.0.0/8',
    },
  },
});

describe('ownedAnnotations', () => {
  it.each([
    ['an Ingress with its controller’s annotations', withIngressAnnotations, 'Ingress'],
    ['an HTTPRoute and a KEDA ScaledObject', gatewayKedaConfig, 'ScaledObject'],
  ])('covers every annotation of every object rendered: %s', (_case, config, kind) => {
    const owned = ownedAnnotations(config);
    const result = renderDeployment(
      { deployment: maximalDeployment, revision: undefined, listener, allowedNamespaces: undefined },
      config,
    );
    if (!result.ok) throw result.error;
    const keys = result.value.objects.flatMap((object) =>
      Object.keys(object.metadata.annotations).map((key) => `${object.kind} ${key}`),
    );
    // The route's own annotations are among them: the check is not vacuous.
    expect(keys.some((key) => key.startsWith(`${kind} `) && !key.includes('k8s-listener.io/'))).toBe(true);
    expect(keys.filter((key) => !owned(key.slice(key.indexOf(' ') + 1)))).toEqual([]);
  });

  it('leaves out what others write on the same objects', () => {
    const owned = ownedAnnotations(withIngressAnnotations);
    for (const key of [
      'deployment.kubernetes.io/revision',
      'kubectl.kubernetes.io/last-applied-configuration',
      'nginx.ingress.kubernetes.io/rewrite-target',
      'pv.kubernetes.io/bind-completed',
    ])
      expect(owned(key), key).toBe(false);
  });
});
