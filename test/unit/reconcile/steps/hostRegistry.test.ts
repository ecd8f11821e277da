// The candidates for a host's holder: both route kinds in every namespace asked, whatever the
// configuration renders; a kind not served has none; one the agent may not list fails closed.
import { describe, expect, it } from 'vitest';
import { KubeApiError, KubeUnsupportedKindError } from '../../../../src/kube/index.ts';
import { WaitingError } from '../../../../src/reconcile/outcome.ts';
import { listRoutes } from '../../../../src/reconcile/steps/hostRegistry.ts';
import { MemoryCluster } from '../../../support/memoryCluster.ts';

const DEPLOYMENT = '00000000-0000-4000-8000-0000000000aa';

function route(kind: 'Ingress' | 'HTTPRoute', namespace: string, name: string) {
  return {
    apiVersion: kind === 'Ingress' ? 'networking.k8s.io/v1' : 'gateway.networking.k8s.io/v1',
    kind,
    metadata: { name, namespace, labels: {}, annotations: {} },
    spec: kind === 'Ingress' ? { rules: [{ host: 'a.example.test' }] } : { hostnames: ['a.example.test'] },
  };
}

async function cluster(): Promise<MemoryCluster> {
  const kube = new MemoryCluster(['apps', 'other']);
  await kube.create(route('Ingress', 'apps', 'platform'));
  await kube.create(route('HTTPRoute', 'other', 'neighbour'));
  return kube;
}

describe('listRoutes', () => {
  it('lists Ingresses and HTTPRoutes in every namespace asked', async () => {
    const kube = await cluster();
    const routes = await listRoutes(kube, ['apps', 'other'], DEPLOYMENT, undefined);
    expect(routes.map((r) => `${r.kind}/${r.metadata.namespace}/${r.metadata.name}`).sort()).toEqual([
      'HTTPRoute/other/neighbour',
      'Ingress/apps/platform',
    ]);
    const lists = kube.calls.filter((c) => c.verb === 'list');
    expect(lists.map((c) => `${c.kind} ${c.namespace}`).sort()).toEqual([
      'HTTPRoute apps',
      'HTTPRoute other',
      'Ingress apps',
      'Ingress other',
    ]);
  });

  it.each([
    [
      'answers 404 (its CRD is not installed)',
      new KubeApiError({ verb: 'list', kind: 'HTTPRoute', status: 404, reason: 'NotFound' }),
    ],
    [
      'is not in the client’s table',
      new KubeUnsupportedKindError('gateway.networking.k8s.io/v1', 'HTTPRoute'),
    ],
  ])('finds no holder of a kind the API server %s', async (_, failure) => {
    const kube = await cluster();
    kube.before = ({ kind }) => {
      if (kind === 'HTTPRoute') throw failure;
    };
    const routes = await listRoutes(kube, ['apps', 'other'], DEPLOYMENT, undefined);
    expect(routes.map((r) => r.metadata.name)).toEqual(['platform']);
  });

  it('fails closed on a kind it may not list, naming the kind and the namespace', async () => {
    const kube = await cluster();
    kube.before = ({ kind, namespace }) => {
      if (kind === 'Ingress' && namespace === 'other')
        throw new KubeApiError({ verb: 'list', kind, namespace, status: 403, reason: 'Forbidden' });
    };
    const error = await listRoutes(kube, ['apps', 'other'], DEPLOYMENT, undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitingError);
    expect((error as WaitingError).reason).toBe('HostsUnreadable');
    expect((error as WaitingError).deploymentId).toBe(DEPLOYMENT);
    expect((error as WaitingError).message).toContain(
      'the agent may not list Ingress objects in namespace other',
    );
  });

  it('passes any other failure on (retried as it is)', async () => {
    const kube = await cluster();
    const unavailable = new KubeApiError({
      verb: 'list',
      kind: 'HTTPRoute',
      status: 503,
      reason: 'ServiceUnavailable',
    });
    kube.before = ({ kind }) => {
      if (kind === 'HTTPRoute') throw unavailable;
    };
    await expect(listRoutes(kube, ['apps'], DEPLOYMENT, undefined)).rejects.toBe(unavailable);
  });
});
