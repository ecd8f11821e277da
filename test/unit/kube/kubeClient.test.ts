// KubeClient failure handling over loopback HTTP: expired continue tokens, failed pages, timeouts,
// watch ERROR events, and the Secret rule for error messages.
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isGone, isInvalid, isTransient, KubeApiError, KubeClient } from '../../../src/kube/index.ts';
import { FakeApiServer } from '../../support/fakeApiServer.ts';
import { kubeConfigConnection } from '../../support/kubeConfigConnection.ts';

const logger = pino({ level: 'silent' });
let fake: FakeApiServer;
let client: KubeClient;

beforeEach(async () => {
  fake = await FakeApiServer.start();
  client = await KubeClient.fromConnection(await kubeConfigConnection(fake.kubeConfig()), {
    logger,
    requestTimeoutMs: 1_000,
  });
});

afterEach(async () => {
  await client.close();
  await fake.close();
});

async function caught(promise: Promise<unknown>): Promise<KubeApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof KubeApiError) return error;
    throw error;
  }
  throw new Error('expected a KubeApiError, got success');
}

function seed(count: number): string[] {
  const names = Array.from({ length: count }, (_, i) => `cm-${String(i).padStart(2, '0')}`);
  for (const name of names) fake.put(name);
  return names;
}

describe('list', () => {
  it('starts over when a continue token expires, and returns the complete listing', async () => {
    const names = seed(7);
    fake.listScripts.push({ pass: true }, { status: 410, reason: 'Expired' });
    const listed = await client.list('ConfigMap', { namespace: 'fake', pageSize: 3 });
    expect(listed.map((item) => item.metadata.name)).toEqual(names);
    // 2 requests of the failed attempt, then 3 pages.
    const continues = fake.requests.map((request) => request.query.get('continue'));
    expect(continues).toEqual([null, '3', null, '3', '6']);
  });

  it('gives up after repeated expiries rather than loop forever', async () => {
    seed(4);
    for (let i = 0; i < 4; i++) fake.listScripts.push({ pass: true }, { status: 410, reason: 'Expired' });
    const error = await caught(client.list('ConfigMap', { namespace: 'fake', pageSize: 2 }));
    expect(isGone(error)).toBe(true);
    expect(fake.requests).toHaveLength(8);
  });

  it('throws when a later page fails: never a partial listing', async () => {
    seed(6);
    fake.listScripts.push({ pass: true }, { status: 500, reason: 'InternalError', message: 'etcd down' });
    const error = await caught(client.list('ConfigMap', { namespace: 'fake', pageSize: 2 }));
    expect(error.status).toBe(500);
    expect(error.message).toBe('ConfigMap/fake list failed: etcd down');
    expect(isTransient(error)).toBe(true);
  });

  it('sends the bearer token, the label selector and the page size', async () => {
    seed(1);
    await client.list('ConfigMap', { namespace: 'fake', labelSelector: 'a=b', pageSize: 9 });
    const [request] = fake.requests;
    expect(request?.query.get('labelSelector')).toBe('a=b');
    expect(request?.query.get('limit')).toBe('9');
  });
});

describe('timeouts and transport errors', () => {
  it('times out a request that gets no answer', async () => {
    fake.listScripts.push({ hang: true });
    const started = Date.now();
    const error = await caught(client.list('ConfigMap', { namespace: 'fake' }));
    const elapsed = Date.now() - started;
    expect(error.reason).toBe('ClientTimeout');
    expect(error.status).toBeUndefined();
    expect(isTransient(error)).toBe(true);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(5_000);
    expect(client.requestCounts().list).toBe(1);
  });

  it('honours a per-call timeout and an abort signal', async () => {
    fake.otherScripts.push({ hang: true }, { hang: true });
    const ref = { apiVersion: 'v1', kind: 'Secret', namespace: 'fake', name: 'x' };
    const started = Date.now();
    const timedOut = await caught(client.get(ref, { timeoutMs: 200 }));
    expect(timedOut.reason).toBe('ClientTimeout');
    expect(Date.now() - started).toBeLessThan(900);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const aborted = await caught(client.get(ref, { signal: controller.signal }));
    expect(aborted.reason).toBe('Aborted');
    expect(isTransient(aborted)).toBe(false);
  });

  it('reports a refused connection as a network error', async () => {
    await fake.close();
    const error = await caught(client.getNamespace('default'));
    expect(error.reason).toBe('NetworkError');
    expect(error.message).toContain('Namespace/default get failed: network error');
  });
});

describe('error messages', () => {
  const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: 'fake', name: 'creds' };
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'creds', namespace: 'fake', labels: {}, annotations: {} },
    stringData: { password: 'x' },
  };

  it('keeps only the status, reason and field path of a Secret apply that does not fit the schema', async () => {
    fake.otherScripts.push({
      status: 500,
      reason: '',
      message:
        'failed to create typed patch object (fake/creds; /v1, Kind=Secret): .stringData.password: expected string, got &value.valueUnstructured{Value:"s3cr3t-value"}',
    });
    const error = await caught(client.apply(secret, { force: false }));
    expect(error.message).toBe('Secret/fake/creds apply failed: 500 Invalid (fields: stringData.password)');
    expect(isInvalid(error)).toBe(true);
    expect(isTransient(error)).toBe(false);
  });

  it('never repeats a Secret Status message, whatever the status', async () => {
    fake.otherScripts.push({ status: 409, reason: 'Conflict', message: 'value s3cr3t-value conflicts' });
    const error = await caught(client.mergePatch(secretRef, { data: {} }));
    expect(error.message).toBe('Secret/fake/creds patch failed: 409 Conflict');
    expect(`${error.message} ${JSON.stringify(error)}`).not.toContain('s3cr3t');
  });
});

describe('watch', () => {
  it('streams events and throws an ERROR event as a KubeApiError (410 → isGone)', async () => {
    fake.watchScripts.push({ pass: true }, { watchError: 410, reason: 'Expired' });
    const controller = new AbortController();
    const seen: string[] = [];
    const stream = (async () => {
      for await (const event of client.watch('ConfigMap', { namespace: 'fake', signal: controller.signal })) {
        seen.push(`${event.type} ${event.object.metadata.name} ${event.object.kind}`);
        if (seen.length === 3) controller.abort();
      }
    })();
    while (fake.openWatches === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    fake.put('a');
    fake.put('a', { k: 'v' });
    fake.remove('a');
    await stream;
    expect(seen).toEqual(['ADDED a ConfigMap', 'MODIFIED a ConfigMap', 'DELETED a ConfigMap']);

    const gone = await caught(
      (async () => {
        for await (const _ of client.watch('ConfigMap', {
          namespace: 'fake',
          signal: new AbortController().signal,
        })) {
          // no events before the error
        }
      })(),
    );
    expect(isGone(gone)).toBe(true);
    expect(gone.verb).toBe('watch');
    expect(client.requestCounts().watch).toBe(2);
  });
});
