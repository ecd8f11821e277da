// What a Gateway controller writes on an HTTPRoute it reads: its word, per Gateway the route names,
// in `status.parents` (through the status subresource). The test cluster runs no Gateway
// controller, so tests write it by hand.
import * as k8s from '@kubernetes/client-node';
import type { AdminKube } from './adminKube.ts';

const GROUP = 'gateway.networking.k8s.io';

export interface GatewayWord {
  readonly status: 'True' | 'False';
  readonly reason: string;
  readonly message: string;
}

/** Sets the route's `Accepted` (and a resolved `ResolvedRefs`) as the named Gateway's controller. */
export async function gatewaySays(
  kube: AdminKube,
  route: { readonly namespace: string; readonly name: string },
  gateway: { readonly namespace: string; readonly name: string },
  accepted: GatewayWord,
): Promise<void> {
  const api = kube.config.makeApiClient(k8s.CustomObjectsApi);
  const live = (await api.getNamespacedCustomObject({
    group: GROUP,
    version: 'v1',
    namespace: route.namespace,
    plural: 'httproutes',
    name: route.name,
  })) as { metadata: { generation: number } };
  // Whole seconds: the condition's time is an RFC 3339 date-time.
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const condition = (type: string, word: GatewayWord) => ({
    type,
    ...word,
    observedGeneration: live.metadata.generation,
    lastTransitionTime: now,
  });
  await api.patchNamespacedCustomObjectStatus({
    group: GROUP,
    version: 'v1',
    namespace: route.namespace,
    plural: 'httproutes',
    name: route.name,
    // A JSON patch (the client's default type): the whole status, as a controller writes it.
    body: [
      {
        op: 'add',
        path: '/status',
        value: {
          parents: [
            {
              parentRef: { group: GROUP, kind: 'Gateway', ...gateway },
              controllerName: 'gateway.example.test/controller',
              conditions: [
                condition('Accepted', accepted),
                condition('ResolvedRefs', {
                  status: 'True',
                  reason: 'ResolvedRefs',
                  message: 'backend found',
                }),
              ],
            },
          ],
        },
      },
    ],
  });
}
