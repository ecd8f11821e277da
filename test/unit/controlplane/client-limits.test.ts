// Issue 18, finding 6: a control plane that answers too much — a body past the cap (declared or
// not), a listing that never ends or whose pages together pass the listing cap, a page with more
// items than asked for — gets a typed error, read no further and never retried.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlPlaneClient } from '../../../src/controlplane/client.ts';
import { ControlPlaneError } from '../../../src/controlplane/errors.ts';

let server: Server | undefined;
let requests = 0;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  requests = 0;
});

async function serve(
  answer: (url: URL, res: import('node:http').ServerResponse) => void,
): Promise<ControlPlaneClient> {
  server = createServer((req, res) => {
    requests++;
    answer(new URL(req.url ?? '/', 'http://cp'), res);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return new ControlPlaneClient({
    baseUrl: `http://127.0.0.1:${port}`,
    logger: pino({ level: 'silent' }),
    maxResponseBytes: 64 * 1024,
    maxPages: 20,
    maxListingBytes: 256 * 1024,
    retry: { retries: 3, minDelayMs: 1, maxDelayMs: 2 },
  });
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as ControlPlaneError,
  );

describe('control-plane input bounds', () => {
  it('refuses a body past maxResponseBytes as it streams, once (no retry)', async () => {
    const client = await serve((_url, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`{"resources":[],"pad":"${'x'.repeat(200 * 1024)}`);
      res.end('"}');
    });
    const error = await failure(client.getListener('00000000-0000-4000-8000-000000000001'));
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect(error?.code).toBe('RESPONSE_TOO_LARGE');
    expect(error?.message).toContain('controlPlane.maxResponseBytes');
    expect(requests).toBe(1);
    await client.close();
  });

  it('refuses a declared Content-Length past the cap without reading it', async () => {
    const client = await serve((_url, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 2 ** 30) });
      res.write('{');
    });
    expect((await failure(client.getListener('00000000-0000-4000-8000-000000000001')))?.code).toBe(
      'RESPONSE_TOO_LARGE',
    );
    await client.close();
  });

  it('refuses a listing past maxPages: incomplete, so it throws rather than returning what it read', async () => {
    const client = await serve((url, res) => {
      const offset = Number(url.searchParams.get('offset') ?? 0);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resources: [{ id: `item-${offset}` }], offset: offset + 1 }));
    });
    const error = await failure(client.listAllDeployments({ remote_reconciled: true }));
    expect(error?.code).toBe('TOO_MANY_PAGES');
    expect(requests).toBe(20);
    await client.close();
  });

  it('refuses a listing whose pages together pass maxListingBytes, though each is under the body cap', async () => {
    // 48 KiB a page, under the 64 KiB body cap; the sixth passes the 256 KiB listing cap.
    const client = await serve((url, res) => {
      const offset = Number(url.searchParams.get('offset') ?? 0);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          resources: [{ id: `item-${offset}`, pad: 'x'.repeat(48 * 1024) }],
          offset: offset + 1,
        }),
      );
    });
    const error = await failure(client.listAllDeployments({ remote_reconciled: true }));
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect(error?.code).toBe('LISTING_TOO_LARGE');
    expect(error?.message).toBe(
      'GET /v2/deployments returned more than 262144 bytes in 6 pages (controlPlane.maxListingBytes)',
    );
    expect(requests).toBe(6);
    await client.close();
  });

  it('refuses a page with more items than the limit asked for, naming the listing and the page', async () => {
    const client = await serve((url, res) => {
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const limit = Number(url.searchParams.get('limit'));
      // An honest first page, then one item too many.
      const count = offset === 0 ? limit : limit + 1;
      const resources = Array.from({ length: count }, (_, i) => ({ id: `item-${offset + i}` }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resources, offset: offset + count }));
    });
    const error = await failure(client.listAllRevisions('00000000-0000-4000-8000-000000000001', {}));
    expect(error?.code).toBe('PAGE_TOO_LARGE');
    expect(error?.message).toBe(
      'GET /v2/deployments/00000000-0000-4000-8000-000000000001/revisions returned 101 items in page 2 (offset 100), more than the 100 asked for',
    );
    expect(requests).toBe(2);
    await client.close();
  });
});
