// `check` says whether the API server serves the custom resources the configuration has the agent
// write: a cluster without the Gateway API's or KEDA's CRDs would refuse every such deployment.
import { describe, expect, it } from 'vitest';
import { servedKindLines } from '../../../src/cli/check.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';
import { RenderConfig } from '../../../src/render/renderConfig.ts';

/** An API server serving the resources of these group-versions, and 404 for any other. */
function server(served: Record<string, string[]>) {
  const asked: string[] = [];
  return {
    asked,
    requestJson: async (_method: 'GET' | 'POST', path: string) => {
      asked.push(path);
      const groupVersion = path.replace(/^\/apis\//, '');
      const resources = served[groupVersion];
      if (!resources)
        throw new KubeApiError({ verb: 'get', kind: 'APIResourceList', status: 404, reason: 'NotFound' });
      return { kind: 'APIResourceList', groupVersion, resources: resources.map((name) => ({ name })) };
    },
  };
}

const BOTH = RenderConfig.parse({
  gateway: { parentRefs: [{ name: 'shared' }] },
  autoscaling: { queue: 'keda' },
});

describe('check: the custom resources render writes', () => {
  it('asks nothing when the configuration writes none', async () => {
    const kube = server({});
    expect(await servedKindLines(kube, RenderConfig.parse({}))).toEqual([]);
    expect(kube.asked).toEqual([]);
  });

  it('passes each served kind', async () => {
    const kube = server({
      'gateway.networking.k8s.io/v1': ['httproutes', 'httproutes/status', 'gateways'],
      'keda.sh/v1alpha1': ['scaledobjects', 'triggerauthentications'],
    });
    const lines = await servedKindLines(kube, BOTH);
    expect(lines.map((line) => [line.id, line.ok])).toEqual([
      ['kind/httproutes.gateway.networking.k8s.io/v1', true],
      ['kind/scaledobjects.keda.sh/v1alpha1', true],
      ['kind/triggerauthentications.keda.sh/v1alpha1', true],
    ]);
  });

  it('fails a kind whose group is not served, or that its group does not list, saying what to install', async () => {
    const kube = server({ 'keda.sh/v1alpha1': ['scaledobjects'] });
    const lines = await servedKindLines(kube, BOTH);
    expect(lines).toEqual([
      {
        id: 'kind/httproutes.gateway.networking.k8s.io/v1',
        ok: false,
        title:
          'the API server does not serve httproutes.gateway.networking.k8s.io/v1, which render.gateway.parentRefs has the agent write',
        reason: 'the API server does not serve gateway.networking.k8s.io/v1',
        fix: "install the Gateway API's standard CRDs in the cluster, or unset render.gateway.parentRefs",
      },
      expect.objectContaining({ id: 'kind/scaledobjects.keda.sh/v1alpha1', ok: true }),
      expect.objectContaining({
        id: 'kind/triggerauthentications.keda.sh/v1alpha1',
        ok: false,
        reason: 'keda.sh/v1alpha1 lists no triggerauthentications',
        fix: 'install KEDA in the cluster, or unset render.autoscaling.queue: keda',
      }),
    ]);
  });
});
