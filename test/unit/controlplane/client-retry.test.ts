import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/cli/logger.ts';
import type { ControlPlaneClientOptions } from '../../../src/controlplane/client.ts';
import { ControlPlaneError } from '../../../src/controlplane/errors.ts';
import { parseRetryAfter, retryDelayMs } from '../../../src/controlplane/retryPolicy.ts';
import { ControlPlaneTestClient } from '../../support/controlPlaneTestClient.ts';

const API_KEY = 'sk-live-never-print-me-4242';
const listenerJson = {
  id: '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11',
  compute_type: 'k8s',
  compute_id: 'c',
  created_at: '2026-11-01T09:00:00Z',
  updated_at: '2026-11-01T09:00:00Z',
};
const deploymentJson = (n: number) => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  tenant_id: '00000000-0000-4000-8000-000000000001',
  name: `d-${n}`,
  source: 'external_container',
  source_config: {},
  source_revision_config: {},
  secrets: [],
  status: 'READY',
  created_at: '2026-11-01T09:00:00Z',
  updated_at: '2026-11-01T09:00:00Z',
  latest_revision_id: null,
  active_revision_id: null,
});

type Behaviour = (req: IncomingMessage, res: ServerResponse, attempt: number) => void;

let server: Server | undefined;
let client: ControlPlaneTestClient | undefined;
afterEach(async () => {
  await client?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  client = undefined;
});

/** A server that misbehaves on purpose; counts the requests it sees. */
async function misbehaving(behaviour: Behaviour, options: Partial<ControlPlaneClientOptions> = {}) {
  const seen: { url: string; apiKey: string | undefined }[] = [];
  server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', apiKey: req.headers['x-api-key'] as string | undefined });
    res.setHeader('x-request-id', `req-${seen.length}`);
    behaviour(req, res, seen.length);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = new ControlPlaneTestClient({
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: API_KEY,
    logger: pino({ level: 'silent' }),
    timeoutMs: 300,
    retry: { retries: 3, minDelayMs: 5, maxDelayMs: 2_000, maxElapsedMs: 10_000 },
    ...options,
  });
  return { client, seen };
}

const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

async function failure(promise: Promise<unknown>): Promise<ControlPlaneError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ControlPlaneError);
  return error as ControlPlaneError;
}

describe('retries', () => {
  it('retries a GET after a 500 and succeeds', async () => {
    const { client, seen } = await misbehaving((_req, res, attempt) =>
      attempt === 1
        ? json(res, 500, { error: { code: 'internal', message: 'boom' } })
        : json(res, 200, listenerJson),
    );
    expect((await client.getListener(listenerJson.id)).compute_id).toBe('c');
    expect(seen).toHaveLength(2);
  });

  it('honours Retry-After on 429', async () => {
    const { client, seen } = await misbehaving((_req, res, attempt) => {
      if (attempt === 1) res.writeHead(429, { 'retry-after': '1' }).end();
      else json(res, 200, listenerJson);
    });
    const started = Date.now();
    await client.getListener(listenerJson.id);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(seen).toHaveLength(2);
  });

  it('retries after a connection reset', async () => {
    const { client, seen } = await misbehaving((req, res, attempt) => {
      if (attempt === 1) req.socket.destroy();
      else json(res, 200, listenerJson);
    });
    expect((await client.getListener(listenerJson.id)).id).toBe(listenerJson.id);
    expect(seen).toHaveLength(2);
  });

  it('times out a response slower than the timeout, retries, and reports TIMEOUT when all are slow', async () => {
    const { client, seen } = await misbehaving((_req, res) => {
      setTimeout(() => json(res, 200, listenerJson), 1_000).unref();
    });
    const error = await failure(client.getListener(listenerJson.id));
    expect(error.code).toBe('TIMEOUT');
    expect(seen).toHaveLength(4);
  });

  it('is bounded: retries stop after the configured count', async () => {
    const { client, seen } = await misbehaving((_req, res) =>
      json(res, 503, { error: { code: 'unavailable', message: 'later' } }),
    );
    const error = await failure(client.getListener(listenerJson.id));
    expect([error.code, error.status, error.serverCode, error.requestId]).toEqual([
      'HTTP',
      503,
      'unavailable',
      'req-4',
    ]);
    expect(seen).toHaveLength(4);
  });

  it('is bounded in total time too', async () => {
    const { client, seen } = await misbehaving(
      (_req, res) => res.writeHead(503, { 'retry-after': '1' }).end(),
      {
        retry: { retries: 10, minDelayMs: 5, maxDelayMs: 2_000, maxElapsedMs: 1_500 },
      },
    );
    const started = Date.now();
    await failure(client.getListener(listenerJson.id));
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(seen.length).toBeLessThanOrEqual(3);
  });

  it.each([400, 401, 404, 409, 422])('does not retry a %i', async (status) => {
    const { client, seen } = await misbehaving((_req, res) =>
      json(res, status, { error: { code: 'x', message: 'no' } }),
    );
    expect((await failure(client.getListener(listenerJson.id))).status).toBe(status);
    expect(seen).toHaveLength(1);
  });

  it('does not repeat a PATCH after a 500 (it may have taken effect), but does after a 503', async () => {
    let { client, seen } = await misbehaving((_req, res) =>
      json(res, 500, { error: { code: 'internal', message: 'boom' } }),
    );
    await failure(client.patchDeployment(deploymentJson(1).id, {}));
    expect(seen).toHaveLength(1);
    await client.close();
    server?.close();
    ({ client, seen } = await misbehaving((_req, res, attempt) =>
      attempt === 1 ? res.writeHead(503).end() : json(res, 200, deploymentJson(1)),
    ));
    expect((await client.patchDeployment(deploymentJson(1).id, {})).name).toBe('d-1');
    expect(seen).toHaveLength(2);
  });

  const policy = { retries: 5, minDelayMs: 100, maxDelayMs: 1_000, maxElapsedMs: 10_000 };

  it('computes full-jitter delays within the exponential ceiling', () => {
    expect(retryDelayMs(policy, 1, new Error('x'), () => 0.999)).toBe(99);
    expect(retryDelayMs(policy, 4, new Error('x'), () => 0.5)).toBe(400);
    expect(retryDelayMs(policy, 10, new Error('x'), () => 0.999)).toBe(999);
    expect(retryDelayMs(policy, 1, new Error('x'), () => 0)).toBe(0);
  });

  it('prefers Retry-After, up to the longest delay', () => {
    const limited = new ControlPlaneError('429', {
      code: 'HTTP',
      method: 'GET',
      path: '/',
      status: 429,
      retryAfterMs: 5_000,
    });
    expect(retryDelayMs(policy, 1, limited)).toBe(1_000);
  });

  it('reads Retry-After as seconds or as a date, and ignores anything else', () => {
    expect(parseRetryAfter('3')).toBe(3_000);
    expect(parseRetryAfter(new Date(Date.now() + 2_000).toUTCString(), Date.now())).toBeGreaterThan(900);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});

describe('responses', () => {
  it('reports invalid JSON as INVALID_RESPONSE', async () => {
    const { client } = await misbehaving((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id": '),
    );
    const error = await failure(client.getListener(listenerJson.id));
    expect([error.code, error.requestId]).toEqual(['INVALID_RESPONSE', 'req-1']);
  });

  it('yields a schema-invalid item as invalid, and the valid items around it', async () => {
    const { client } = await misbehaving((req, res) => {
      const offset = Number(new URL(req.url ?? '', 'http://x').searchParams.get('offset'));
      if (offset > 0) return json(res, 200, { resources: [], offset });
      json(res, 200, {
        resources: [deploymentJson(1), { ...deploymentJson(2), status: 42 }, deploymentJson(3)],
        offset: 3,
      });
    });
    const listing = await client.listAllDeployments();
    expect(listing.items.map((d) => d.name)).toEqual(['d-1', 'd-3']);
    expect(listing.invalid.map((i) => i.id)).toEqual([deploymentJson(2).id]);
    expect(listing.invalid[0]?.error.message).toContain('status');
  });

  it('throws when a page fails midway, never passing off a partial list', async () => {
    const { client, seen } = await misbehaving((req, res) => {
      const offset = Number(new URL(req.url ?? '', 'http://x').searchParams.get('offset'));
      if (offset === 0)
        return json(res, 200, { resources: [deploymentJson(1), deploymentJson(2)], offset: 2 });
      json(res, 500, { error: { code: 'internal', message: 'page 2 broke' } });
    });
    const names: string[] = [];
    const error = await failure(
      (async () => {
        for await (const item of client.deployments()) if (item.ok) names.push(item.value.name);
      })(),
    );
    expect(error.status).toBe(500);
    expect(names).toEqual(['d-1', 'd-2']);
    await failure(client.listAllDeployments());
    expect(seen.length).toBeGreaterThan(4);
  });

  it('stays complete against a server that returns pages shorter than the limit', async () => {
    const { client } = await misbehaving((req, res) => {
      const query = new URL(req.url ?? '', 'http://x').searchParams;
      expect(query.get('limit')).toBe('100');
      const offset = Number(query.get('offset'));
      const resources =
        offset < 7 ? [deploymentJson(offset), deploymentJson(offset + 1)].slice(0, offset === 6 ? 1 : 2) : [];
      json(res, 200, { resources, offset: offset + resources.length });
    });
    const listing = await client.listAllDeployments({ remote_reconciled: true });
    expect(listing.items.map((d) => d.name)).toEqual(['d-0', 'd-1', 'd-2', 'd-3', 'd-4', 'd-5', 'd-6']);
  });

  it('throws when the server does not advance its offset', async () => {
    const { client } = await misbehaving((_req, res) =>
      json(res, 200, { resources: [deploymentJson(1)], offset: 0 }),
    );
    expect((await failure(client.listAllDeployments())).code).toBe('INVALID_RESPONSE');
  });

  it('sends filters and the API key', async () => {
    const { client, seen } = await misbehaving((_req, res) => json(res, 200, { resources: [], offset: 0 }));
    await client.listAllDeployments({ remote_reconciled: true, deployment_ids: ['a', 'b'], status: 'READY' });
    const url = new URL(seen[0]?.url ?? '', 'http://x');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      remote_reconciled: 'true',
      deployment_ids: 'a,b',
      status: 'READY',
      limit: '100',
      offset: '0',
    });
    expect(seen[0]?.apiKey).toBe(API_KEY);
  });
});

describe('the API key never leaks', () => {
  it('appears in no error, cause chain or log line', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger('trace', sink);
    const failures: unknown[] = [];
    for (const behaviour of [
      (_req: IncomingMessage, res: ServerResponse) =>
        json(res, 503, { error: { code: 'x', message: 'later' } }),
      (req: IncomingMessage) => req.socket.destroy(),
      (_req: IncomingMessage, res: ServerResponse) => res.writeHead(200).end('not json'),
      (_req: IncomingMessage, res: ServerResponse) =>
        json(res, 401, { error: { code: 'unauthorized', message: 'bad key' } }),
    ]) {
      const { client } = await misbehaving(behaviour, {
        logger,
        retry: { retries: 1, minDelayMs: 1, maxDelayMs: 5, maxElapsedMs: 1_000 },
      });
      failures.push(await client.getListener(listenerJson.id).catch((e: unknown) => e));
      await client.close();
      server?.closeAllConnections();
      server?.close();
    }
    const serialise = (error: unknown): string => {
      const parts: string[] = [];
      for (let e = error; e instanceof Error; e = e.cause)
        parts.push(e.message, String(e.stack), JSON.stringify(e), JSON.stringify({ ...e }));
      return parts.join('\n');
    };
    expect(failures).toHaveLength(4);
    for (const error of failures) {
      expect(error).toBeInstanceOf(ControlPlaneError);
      expect(serialise(error)).not.toContain(API_KEY);
    }
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('')).not.toContain(API_KEY);
    // And the logger redacts an API key that someone passes it by mistake.
    logger.info({ apiKey: API_KEY, config: { apiKey: API_KEY } }, 'configuration');
    expect(lines.join('')).not.toContain(API_KEY);
  });
});
