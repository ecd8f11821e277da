// KubeClient against a real API server: server-side apply, strict validation, field-manager
// conflicts, complete paged listings, deletion, merge patches, request counting and metrics.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectionsTo } from '../../../bench/procfs.ts';
import {
  isConflict,
  isInvalid,
  isNotFound,
  isTransient,
  KubeApiError,
  KubeClient,
  type KubeObject,
} from '../../../src/kube/index.ts';
import { FIELD_MANAGER } from '../../../src/objects/ownership.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';

const kubeconfigPath = inject('kubeconfigPath');
const admin = adminKube(kubeconfigPath);
const logger = pino({ level: 'silent' });
const registry = new Registry();
let client: KubeClient;
let namespace: string;

function configMap(
  name: string,
  data: Record<string, string>,
  labels: Record<string, string> = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, labels, annotations: {} },
    data,
  };
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
  client = await KubeClient.fromKubeconfig(kubeconfigPath, { logger, registry, requestTimeoutMs: 15_000 });
  namespace = uniqueNamespace('kube-client');
  await createNamespace(admin, namespace);
});

afterAll(async () => {
  await client?.close();
  await admin.core.deleteNamespace({ name: namespace }).catch(() => {});
});

describe('KubeClient over HTTP/2 (bench:transport measures it; the agent stays on HTTP/1.1)', () => {
  /** The connections this process opens to the API server for 8 requests at once, after a first. */
  async function connectionsFor8(http2: boolean): Promise<number> {
    const kube = await KubeClient.fromKubeconfig(kubeconfigPath, { logger, http2 });
    const port = Number(new URL(kube.server).port);
    try {
      const before = await connectionsTo(port);
      await kube.apply(configMap(`h2-${http2}-0`, { a: '0' }), { force: true });
      const live = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          kube.apply(configMap(`h2-${http2}-${i + 1}`, { a: '1' }), { force: true }),
        ),
      );
      expect(live.map((o) => o.metadata.uid).every((uid) => uid !== '')).toBe(true);
      return (await connectionsTo(port)) - before;
    } finally {
      await kube.close();
    }
  }

  it('sends concurrent requests as streams of one connection, where HTTP/1.1 opens one each', async () => {
    expect(await connectionsFor8(true)).toBe(1);
    expect(await connectionsFor8(false)).toBeGreaterThanOrEqual(8);
  });
});

describe('KubeClient.apply', () => {
  it('creates, leaves an identical object untouched, then updates', async () => {
    const before = client.requestCounts();
    const created = await client.apply(configMap('web-config', { mode: 'a' }, { tier: 'web' }), {
      force: false,
    });
    expect(created.metadata.uid).not.toBe('');
    expect(created.metadata.labels).toEqual({ tier: 'web' });

    const again = await client.apply(configMap('web-config', { mode: 'a' }, { tier: 'web' }), {
      force: false,
    });
    expect(again.metadata.resourceVersion).toBe(created.metadata.resourceVersion);

    const changed = await client.apply(configMap('web-config', { mode: 'b' }, { tier: 'web' }), {
      force: false,
    });
    expect(changed.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);
    const live = await admin.core.readNamespacedConfigMap({ name: 'web-config', namespace });
    expect(live.data).toEqual({ mode: 'b' });
    expect(live.metadata?.managedFields?.map((entry) => [entry.manager, entry.operation])).toEqual([
      [FIELD_MANAGER, 'Apply'],
    ]);
    expect((client.requestCounts().patch ?? 0) - (before.patch ?? 0)).toBe(3);
  });

  it('applies apps/v1 objects and reads back defaults the server filled in', async () => {
    const labels = { app: 'api' };
    const deployment: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'api', namespace, labels, annotations: { note: 'x' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'api', image: 'nginx:1.27' }] } },
      },
    };
    const live = await client.apply(deployment, { force: false });
    expect(live.metadata.generation).toBe(1);
    const spec = live.spec as { strategy?: { type?: string } };
    expect(spec.strategy?.type).toBe('RollingUpdate');
    const read = await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace, name: 'api' });
    expect(read?.metadata.uid).toBe(live.metadata.uid);
  });

  it('dry-runs without writing and counts it apart', async () => {
    const before = client.requestCounts();
    const dry = await client.apply(configMap('dry-only', { a: '1' }), { force: false, dryRun: true });
    expect(dry.metadata.name).toBe('dry-only');
    expect(
      await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name: 'dry-only' }),
    ).toBeUndefined();
    const after = client.requestCounts();
    expect((after['patch:dryRun'] ?? 0) - (before['patch:dryRun'] ?? 0)).toBe(1);
    expect(after.patch ?? 0).toBe(before.patch ?? 0);
  });

  it('rejects an unknown field (strict validation) with an error naming the object', async () => {
    const error = await caught(
      client.apply({ ...configMap('strict', { a: '1' }), bogus: true }, { force: false }),
    );
    expect(error.message).toContain(`ConfigMap/${namespace}/strict apply failed:`);
    expect(error.message).toContain('bogus');
    expect(error.verb).toBe('apply');
    expect(isInvalid(error)).toBe(true);
    expect(isTransient(error)).toBe(false);
    expect(error.causes.map((cause) => cause.field)).toContain('bogus');
    expect(
      await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name: 'strict' }),
    ).toBeUndefined();

    const created = await caught(client.create({ ...configMap('strict', { a: '1' }), bogus: true }));
    expect(isInvalid(created)).toBe(true);
    expect(created.message).toContain(`ConfigMap/${namespace}/strict create failed:`);
  });

  it('never puts the Status message of a Secret in its error', async () => {
    const value = `hunter-${randomBytes(6).toString('hex')} not a label`;
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds', namespace, labels: { leaked: value }, annotations: {} },
      stringData: { password: value },
    };
    const error = await caught(client.apply(secret, { force: false }));
    expect(error.status).toBe(422);
    expect(error.reason).toBe('Invalid');
    expect(error.message).toContain(`Secret/${namespace}/creds apply failed: 422 Invalid`);
    expect(error.message).toContain('metadata.labels');
    expect(JSON.stringify({ ...error, message: error.message })).not.toContain('hunter-');

    // The same mistake on a ConfigMap shows the server's message: the filter is about Secrets.
    const plain = await caught(client.apply(configMap('plain', {}, { leaked: value }), { force: false }));
    expect(plain.message).toContain('hunter-');
  });

  it('refuses a field owned by another manager without force, and takes it with force', async () => {
    await admin.core.createNamespacedConfigMap({
      namespace,
      fieldManager: 'someone-else',
      body: { metadata: { name: 'shared' }, data: { owner: 'them' } },
    });
    const refused = await caught(client.apply(configMap('shared', { owner: 'us' }), { force: false }));
    expect(refused.status).toBe(409);
    expect(isConflict(refused)).toBe(true);
    expect(refused.message).toContain('someone-else');
    expect((await admin.core.readNamespacedConfigMap({ name: 'shared', namespace })).data).toEqual({
      owner: 'them',
    });

    const forced = await client.apply(configMap('shared', { owner: 'us' }), { force: true });
    expect(forced.data).toEqual({ owner: 'us' });
    const managers = (await admin.core.readNamespacedConfigMap({ name: 'shared', namespace })).metadata
      ?.managedFields;
    const ours = managers?.find((entry) => entry.manager === FIELD_MANAGER);
    expect(JSON.stringify(ours?.fieldsV1)).toContain('f:owner');
  });
});

describe('KubeClient.create, get, mergePatch, delete', () => {
  it('creates once, then conflicts', async () => {
    const created = await client.create(configMap('once', { a: '1' }));
    expect(created.metadata.resourceVersion).not.toBe('');
    const again = await caught(client.create(configMap('once', { a: '2' })));
    expect(again.status).toBe(409);
    expect(again.reason).toBe('AlreadyExists');
  });

  it('gets undefined for a missing object and a missing namespace', async () => {
    expect(
      await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name: 'absent' }),
    ).toBeUndefined();
    expect(await client.getNamespace(`absent-${randomBytes(3).toString('hex')}`)).toBeUndefined();
    expect((await client.getNamespace(namespace))?.metadata.name).toBe(namespace);
  });

  it('merge-patches one annotation and leaves the rest', async () => {
    await client.apply(configMap('annotated', { a: '1' }), { force: false });
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: 'annotated' };
    const patched = await client.mergePatch(ref, {
      metadata: { annotations: { 'example.com/status': 'ok' } },
    });
    expect(patched.metadata.annotations).toEqual({ 'example.com/status': 'ok' });
    expect(patched.data).toEqual({ a: '1' });
    const missing = await caught(client.mergePatch({ ...ref, name: 'nope' }, { metadata: {} }));
    expect(isNotFound(missing)).toBe(true);
  });

  it('deletes, then reports not_found; a uid precondition protects a recreated object', async () => {
    const first = await client.create(configMap('doomed', { a: '1' }));
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: 'doomed' };
    expect(await client.delete(ref, { propagationPolicy: 'Background' })).toBe('deleted');
    expect(await client.get(ref)).toBeUndefined();
    expect(await client.delete(ref)).toBe('not_found');

    await client.create(configMap('doomed', { a: '2' }));
    const stale = await caught(client.delete(ref, { preconditionUid: first.metadata.uid }));
    expect(stale.status).toBe(409);
    expect(await client.get(ref)).toBeDefined();
  });
});

describe('KubeClient.list', () => {
  it('pages through many objects with a small page size and returns all of them', async () => {
    const run = randomBytes(3).toString('hex');
    const names = Array.from({ length: 23 }, (_, i) => `paged-${run}-${String(i).padStart(2, '0')}`);
    for (const name of names) await client.create(configMap(name, {}, { run }));
    await client.create(configMap(`other-${run}`, {}, { run: `${run}-x` }));

    const before = client.requestCounts().list ?? 0;
    const listed = await client.list('ConfigMap', { namespace, labelSelector: `run=${run}`, pageSize: 5 });
    expect(listed.map((item) => item.metadata.name).sort()).toEqual(names);
    expect((client.requestCounts().list ?? 0) - before).toBe(5);
    expect(listed.every((item) => item.apiVersion === 'v1' && item.kind === 'ConfigMap')).toBe(true);

    // Across namespaces, through the cluster-wide collection.
    const everywhere = await client.listWithVersion('ConfigMap', {
      labelSelector: `run=${run}`,
      pageSize: 7,
    });
    expect(everywhere.items).toHaveLength(23);
    expect(everywhere.resourceVersion).toMatch(/^\d+$/);
  });

  it('throws rather than returning a partial listing', async () => {
    const error = await caught(client.list('ConfigMap', { namespace, labelSelector: 'bad selector !!' }));
    expect(error.status).toBe(400);
    expect(error.verb).toBe('list');
    expect(error.ref).toBe(`ConfigMap/${namespace}`);
  });
});

describe('request accounting', () => {
  it('counts requests by verb and kind and exports the counter', async () => {
    const writesBefore = client.writeRequestCount();
    await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name: 'web-config' });
    expect(client.writeRequestCount()).toBe(writesBefore);
    await client.mergePatch(
      { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: 'web-config' },
      { metadata: { annotations: { touched: 'yes' } } },
    );
    expect(client.writeRequestCount()).toBe(writesBefore + 1);
    const writesOf = (kind: string) => {
      const counts = client.requestCounts({ kind });
      return (counts.create ?? 0) + (counts.update ?? 0) + (counts.patch ?? 0) + (counts.delete ?? 0);
    };
    expect(writesOf('Deployment')).toBe(1);
    expect(client.writeRequestCount({ ignoreKinds: ['ConfigMap'] })).toBe(
      writesOf('Deployment') + writesOf('Secret'),
    );
    const metric = await registry.getSingleMetric('k8s_listener_kube_requests_total')?.get();
    const getOk = metric?.values.find(
      (value) =>
        value.labels.verb === 'get' && value.labels.kind === 'ConfigMap' && value.labels.code === '200',
    );
    expect(getOk?.value).toBeGreaterThanOrEqual(1);
    const notFound = metric?.values.find(
      (value) =>
        value.labels.verb === 'get' && value.labels.kind === 'ConfigMap' && value.labels.code === '404',
    );
    expect(notFound?.value).toBeGreaterThanOrEqual(1);
  });
});
