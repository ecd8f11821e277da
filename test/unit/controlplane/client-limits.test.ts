// Bounded input: a control plane that answers too much — a body past the cap (declared or
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
  options: { maxJsonDepth?: number } = {},
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
    ...options,
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

/** `{"nest":{"nest":…"bottom"…}}`, `levels` objects deep, as text: past what JSON.stringify can write. */
const nestedText = (levels: number) => `${'{"nest":'.repeat(levels)}"bottom-marker"${'}'.repeat(levels)}`;

/** A valid deployment of another listener, as a listing holds it. */
const deploymentItem = (n: number) => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  tenant_id: '00000000-0000-4000-8000-000000000001',
  name: `other-${n}`,
  source: 'external_container',
  source_config: {
    listener_id: '00000000-0000-4000-8000-0000000000ff',
    listener_config: { k8s_namespace: 'elsewhere' },
  },
  source_revision_config: { image_uri: 'nginx:1.27' },
  secrets: [],
  status: 'READY',
  created_at: '2026-11-01T09:04:00Z',
  updated_at: '2026-11-01T09:04:00Z',
  latest_revision_id: null,
  active_revision_id: null,
});

/** A listing page of `before` and `after` around one raw item. */
const pageAround = (raw: string, before: number[], after: number[]) =>
  `{"resources":[${[
    ...before.map((n) => JSON.stringify(deploymentItem(n))),
    raw,
    ...after.map((n) => JSON.stringify(deploymentItem(n))),
  ].join(',')}],"offset":${before.length + after.length + 1}}`;

const EMPTY_PAGE = '{"resources":[],"offset":0}';

describe('control-plane nesting depth', () => {
  // JSON.parse does not recurse, but every walk after it may (a digest, a deep comparison, a
  // clone): 4,450 levels (9 KB) overflowed the stack of the poller's digest and failed the whole
  // listing, every poll. The item is refused alone; the others are listed.
  it('refuses a listed item nested past maxJsonDepth alone, naming the limit and not its content', async () => {
    const deep = deploymentItem(99);
    const raw = JSON.stringify(deep).replace('"secrets":[]', `"secrets":[],"labels":${nestedText(5_000)}`);
    const client = await serve((url, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Number(url.searchParams.get('offset') ?? 0) === 0 ? pageAround(raw, [1], [2]) : EMPTY_PAGE);
    });
    const listing = await client.listAllDeployments(
      { remote_reconciled: true },
      {
        reuse: (item) => {
          // What the poller does with each item before it parses one: a digest of its JSON.
          JSON.stringify(item);
          return undefined;
        },
      },
    );
    expect(listing.items.map((d) => d.name)).toEqual(['other-1', 'other-2']);
    expect(listing.invalid).toHaveLength(1);
    const [refused] = listing.invalid;
    expect(refused?.id).toBe(deep.id);
    expect(refused?.identity?.listenerId).toBe('00000000-0000-4000-8000-0000000000ff');
    expect(refused?.error).toMatchObject({ code: 'TOO_DEEP' });
    expect(refused?.error.message).toBe(
      `deployment ${deep.id} is invalid: labels.nest.nest.nest…: nested deeper than 64 levels, the most the agent reads`,
    );
    expect(refused?.error.message).not.toContain('bottom-marker');
    await client.close();
  });

  it('takes an item exactly at maxJsonDepth, and refuses one a level past it', async () => {
    // The item's own object is its first level, `labels` its second.
    let levels = 0;
    const client = await serve(
      (url, res) => {
        const item = JSON.stringify(deploymentItem(7)).replace(
          '"secrets":[]',
          `"secrets":[],"labels":${nestedText(levels - 1)}`,
        );
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(Number(url.searchParams.get('offset') ?? 0) === 0 ? pageAround(item, [], []) : EMPTY_PAGE);
      },
      { maxJsonDepth: 16 },
    );
    levels = 16;
    const at = await client.listAllDeployments();
    expect([at.items.length, at.invalid.length]).toEqual([1, 0]);
    levels = 17;
    const past = await client.listAllDeployments();
    expect([past.items.length, past.invalid.length]).toEqual([0, 1]);
    expect(past.invalid[0]?.error.message).toContain('nested deeper than 16 levels');
    await client.close();
  });

  it('refuses a whole response nested past maxJsonDepth with a typed error, once (no retry)', async () => {
    const client = await serve((_url, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"id":"00000000-0000-4000-8000-000000000001","compute_config":${nestedText(5_000)}}`);
    });
    const error = await failure(client.getListener('00000000-0000-4000-8000-000000000001'));
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect(error?.code).toBe('RESPONSE_TOO_DEEP');
    expect(error?.message).toBe(
      'GET /v2/listeners/00000000-0000-4000-8000-000000000001 answered JSON nested deeper than 64 levels, the most the agent reads',
    );
    expect(error?.message).not.toContain('bottom-marker');
    expect(requests).toBe(1);
    await client.close();
  });

  it('refuses alone an item whose handling throws (here the reuse check), naming only the error class', async () => {
    const client = await serve((url, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        Number(url.searchParams.get('offset') ?? 0) === 0
          ? pageAround(JSON.stringify(deploymentItem(5)), [4], [6])
          : EMPTY_PAGE,
      );
    });
    const listing = await client.listAllDeployments(
      {},
      {
        reuse: (item) => {
          if ((item as { name?: unknown }).name === 'other-5') throw new RangeError('secret-ish detail');
          return undefined;
        },
      },
    );
    expect(listing.items.map((d) => d.name)).toEqual(['other-4', 'other-6']);
    expect(listing.invalid.map((i) => [i.id, i.error.code, i.error.message])).toEqual([
      [
        deploymentItem(5).id,
        'UNREADABLE',
        `deployment ${deploymentItem(5).id} is invalid: (root): could not be read (RangeError)`,
      ],
    ]);
    await client.close();
  });
});
