// Error classification against the real API server's Status structures: a missing or terminating
// namespace is recognised for every kind, Secrets included (whose messages the client shortens).
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  isAborted,
  isNamespaceUnavailable,
  isTransient,
  KubeApiError,
  KubeClient,
  type KubeObject,
} from '../../../src/kube/index.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { eventually } from '../../support/eventually.ts';

const kubeconfigPath = inject('kubeconfigPath');
const admin = adminKube(kubeconfigPath);
let client: KubeClient;
let terminating: string;
const HOLD = 'k8s-listener.io/test-hold';

function objectsIn(namespace: string): KubeObject[] {
  const metadata = (name: string) => ({ name, namespace, labels: {}, annotations: {} });
  return [
    { apiVersion: 'v1', kind: 'Secret', metadata: metadata('creds'), stringData: { password: 'p4ss' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: metadata('settings'), data: { a: '1' } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: metadata('web'),
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'a', image: 'a:1' }] },
        },
      },
    },
  ];
}

async function caught(promise: Promise<unknown>): Promise<KubeApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof KubeApiError) return error;
    throw error;
  }
  throw new Error('expected a KubeApiError, got success');
}

beforeAll(async () => {
  client = await KubeClient.fromKubeconfig(kubeconfigPath, { logger: pino({ level: 'silent' }) });
  // A namespace held in Terminating by a finalizer on an object inside it.
  terminating = uniqueNamespace('kube-errors-term');
  await createNamespace(admin, terminating);
  await admin.core.createNamespacedConfigMap({
    namespace: terminating,
    body: { metadata: { name: 'hold', finalizers: [HOLD] }, data: {} },
  });
  await admin.core.deleteNamespace({ name: terminating });
  await eventually('the namespace to be terminating', async () => {
    const ns = await admin.core.readNamespace({ name: terminating });
    return ns.status?.phase === 'Terminating' ? true : undefined;
  });
});

afterAll(async () => {
  await admin.core
    .patchNamespacedConfigMap({
      namespace: terminating,
      name: 'hold',
      body: [{ op: 'remove', path: '/metadata/finalizers' }],
    })
    .catch(() => {});
  await client?.close();
});

describe('namespace unavailable, by Status structure', () => {
  it.each(objectsIn('kube-errors-missing-namespace').map((o) => [o.kind, o] as const))(
    '%s into a missing namespace (apply and create)',
    async (_kind, object) => {
      // One request at a time: a second promise started early rejects before anything awaits it.
      for (const attempt of [() => client.apply(object, { force: true }), () => client.create(object)]) {
        const error = await caught(attempt());
        expect(error.status).toBe(404);
        expect(isNamespaceUnavailable(error)).toBe(true);
        expect(isTransient(error)).toBe(false);
      }
    },
  );

  it('every kind into a terminating namespace', async () => {
    for (const object of objectsIn(terminating)) {
      const error = await caught(client.create(object));
      expect({ kind: object.kind, status: error.status, unavailable: isNamespaceUnavailable(error) }).toEqual(
        {
          kind: object.kind,
          status: 403,
          unavailable: true,
        },
      );
    }
  });

  it('a Secret error message never carries the value, yet is classified', async () => {
    const secret = objectsIn(terminating)[0] as KubeObject;
    const error = await caught(client.create(secret));
    expect(error.message).not.toContain('p4ss');
    expect(isNamespaceUnavailable(error)).toBe(true);
  });

  it('an object that is not found in an existing namespace is not a missing namespace', async () => {
    const error = await caught(
      client.mergePatch({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'absent-x1' }, {}),
    );
    expect(error.status).toBe(404);
    expect(isNamespaceUnavailable(error)).toBe(false);
  });
});

describe('aborted requests', () => {
  it('are their own outcome: neither transient nor a failure of the object', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await caught(
      client.get(
        { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'x' },
        { signal: controller.signal },
      ),
    );
    expect(isAborted(error)).toBe(true);
    expect(isTransient(error)).toBe(false);
  });
});
