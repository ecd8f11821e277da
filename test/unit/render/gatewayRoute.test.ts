// custom_url as a Gateway API HTTPRoute (render.gateway.parentRefs): its host under the platform's
// domains, its path as a prefix, the main Service behind it; and never both an Ingress and a route.
import { describe, expect, it } from 'vitest';
import { parseRenderSection } from '../../../src/config/agentConfig.ts';
import { type KubeObject, type RenderInput, renderDeployment } from '../../../src/render/index.ts';
import { RenderConfig, type RenderConfigInput } from '../../../src/render/renderConfig.ts';
import { routeKindOf, routePathPrefix } from '../../../src/render/routes.ts';
import { minimalDeployment, withSpec } from '../../support/renderFixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered objects freely
type Json = Record<string, any>;

const GATEWAY: RenderConfigInput = {
  gateway: { parentRefs: [{ name: 'shared', namespace: 'gateways' }] },
  ingress: { allowedHostSuffixes: ['example.test'] },
};

function withUrl(customUrl: string): RenderInput {
  const input = withSpec({});
  return {
    ...input,
    deployment: {
      ...input.deployment,
      source_config: { ...minimalDeployment.source_config, custom_url: customUrl },
    },
  };
}

function rendered(input: RenderInput, overrides: RenderConfigInput = GATEWAY): KubeObject[] {
  const result = renderDeployment(input, RenderConfig.parse(overrides));
  if (!result.ok) throw result.error;
  return result.value.objects;
}

const route = (objects: KubeObject[]): Json | undefined =>
  objects.find((o) => o.kind === 'HTTPRoute') as Json | undefined;

describe('custom_url on a Gateway', () => {
  it('becomes an HTTPRoute to the main Service on the configured Gateway, and no Ingress', () => {
    const objects = rendered(withUrl('https://Hello.Example.test/team-a/'), {
      ...GATEWAY,
      gateway: { ...GATEWAY.gateway, annotations: { 'gateway.example.test/tier': 'public' } },
    });
    expect(objects.map((o) => o.kind)).not.toContain('Ingress');
    const httpRoute = route(objects);
    expect(httpRoute?.apiVersion).toBe('gateway.networking.k8s.io/v1');
    expect(httpRoute?.metadata.annotations['gateway.example.test/tier']).toBe('public');
    expect(httpRoute?.spec).toEqual({
      parentRefs: [{ name: 'shared', namespace: 'gateways' }],
      hostnames: ['hello.example.test'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/team-a' } }],
          filters: [
            {
              type: 'URLRewrite',
              urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } },
            },
          ],
          backendRefs: [{ name: 'hello', port: 80 }],
        },
      ],
    });
    // The backend is the main workload's Service, on its port.
    const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'hello') as Json;
    expect(service.spec.ports[0].port).toBe(80);
  });

  it('passes the path on as it came when the prefix is not to be rewritten, and has no filter at the root', () => {
    const kept = route(
      rendered(withUrl('https://hello.example.test/team-a'), {
        ...GATEWAY,
        gateway: { ...GATEWAY.gateway, rewritePathPrefix: false },
      }),
    );
    expect(kept?.spec.rules[0].filters).toBeUndefined();
    expect(kept?.spec.rules[0].matches[0].path.value).toBe('/team-a');
    const root = route(rendered(withUrl('hello.example.test')));
    expect(root?.spec.rules[0]).toEqual({
      matches: [{ path: { type: 'PathPrefix', value: '/' } }],
      backendRefs: [{ name: 'hello', port: 80 }],
    });
  });

  it.each([
    ['hello.example.test', '/'],
    ['https://hello.example.test', '/'],
    ['https://hello.example.test/', '/'],
    ['https://hello.example.test/team-a', '/team-a'],
    ['https://hello.example.test/team-a///', '/team-a'],
    ['https://hello.example.test/Team-A/v1', '/Team-A/v1'],
    ['https://hello.example.test/a/./b/../c', '/a/c'],
    ['https://hello.example.test/caf\u00e9', '/caf%C3%A9'],
  ])('%s matches the path prefix %s', (url, path) => {
    expect(routePathPrefix(url)).toEqual({ path });
  });

  it.each([
    ['https://hello.example.test/a?tab=1', 'no query or fragment'],
    ['https://hello.example.test/a#top', 'no query or fragment'],
    ['https://hello.example.test//a', 'no empty segment'],
    ['https://hello.example.test/a%2Fb', 'no encoded slash'],
    [`https://hello.example.test/${'a'.repeat(1100)}`, 'at most 1024'],
  ])('%s is refused, naming custom_url', (url, why) => {
    const result = renderDeployment(withUrl(url), RenderConfig.parse(GATEWAY));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.problems).toEqual([
      { path: 'source_config.custom_url', message: expect.stringContaining(why) },
    ]);
  });

  it('holds the host of a route to the platform’s domains, as an Ingress’s', () => {
    // Before routes were rendered, a host was checked only with an ingress class set.
    const result = renderDeployment(withUrl('https://hello.elsewhere.test'), RenderConfig.parse(GATEWAY));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.problems).toEqual([
      {
        path: 'source_config.custom_url',
        message: 'host hello.elsewhere.test is not under an allowed domain (example.test)',
      },
    ]);
    const none = renderDeployment(
      withUrl('https://hello.example.test'),
      RenderConfig.parse({ gateway: GATEWAY.gateway }),
    );
    expect(none.ok).toBe(false);
    if (!none.ok) expect(none.error.message).toContain('render.ingress.allowedHostSuffixes allows none');
  });

  it('renders no HTTPRoute without a Gateway, and no Ingress with one', () => {
    expect(route(rendered(withUrl('https://hello.example.test'), {}))).toBeUndefined();
    expect(
      rendered(withUrl('https://hello.example.test'), {
        ingress: { className: 'nginx', allowedHostSuffixes: ['example.test'] },
      }).map((o) => o.kind),
    ).toContain('Ingress');
    expect(routeKindOf(RenderConfig.parse({}))).toBeUndefined();
    expect(routeKindOf(RenderConfig.parse(GATEWAY))).toBe('HTTPRoute');
  });
});

describe('the route configuration', () => {
  it('refuses an ingress class and a Gateway together, at load, naming the key', () => {
    const both = RenderConfig.safeParse({
      ingress: { className: 'nginx' },
      gateway: { parentRefs: [{ name: 'shared' }] },
    });
    expect(both.success).toBe(false);
    expect(both.error?.issues).toEqual([
      expect.objectContaining({
        path: ['gateway', 'parentRefs'],
        message: expect.stringContaining('not both'),
      }),
    ]);
    expect(() =>
      parseRenderSection({
        render: { ingress: { className: 'nginx' }, gateway: { parentRefs: [{ name: 'shared' }] } },
      }),
    ).toThrow(/render\.gateway\.parentRefs.*not both/);
    // Either alone is taken.
    expect(RenderConfig.safeParse({ ingress: { className: 'nginx' } }).success).toBe(true);
    expect(RenderConfig.safeParse({ gateway: { parentRefs: [{ name: 'shared' }] } }).success).toBe(true);
  });

  it('refuses a parent reference with an unknown field or no name', () => {
    expect(RenderConfig.safeParse({ gateway: { parentRefs: [{ name: 'g', listener: 'x' }] } }).success).toBe(
      false,
    );
    expect(RenderConfig.safeParse({ gateway: { parentRefs: [{ namespace: 'gateways' }] } }).success).toBe(
      false,
    );
  });
});
