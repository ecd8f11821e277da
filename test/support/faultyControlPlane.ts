// A proxy in front of the emulator that misbehaves on demand, for the safety tests.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault = 'none' | 'empty-list' | 'errors' | 'fail-page-2';

export interface FaultyControlPlane {
  readonly url: string;
  fault: Fault;
  /** Deployment ids left out of every listing (as if deleted without AWAITING_DELETE). */
  readonly hidden: Set<string>;
  /** Requests seen, as `METHOD /path` without the query. */
  readonly requests: string[];
  close(): Promise<void>;
}

export async function startFaultyControlPlane(upstream: string): Promise<FaultyControlPlane> {
  const target = new URL(upstream);
  const state: { fault: Fault } = { fault: 'none' };
  const hidden = new Set<string>();
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', upstream);
    requests.push(`${req.method} ${url.pathname}`);
    const isListing = req.method === 'GET' && url.pathname === '/v2/deployments';
    if (state.fault === 'errors') {
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end('{"error":{"code":"unavailable","message":"down"}}');
      return;
    }
    if (isListing && state.fault === 'empty-list') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"resources":[],"offset":0}');
      return;
    }
    if (isListing && state.fault === 'fail-page-2' && Number(url.searchParams.get('offset') ?? 0) > 0) {
      res
        .writeHead(500, { 'content-type': 'application/json' })
        .end('{"error":{"code":"internal","message":"page 2"}}');
      return;
    }
    const forward = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (upstreamResponse) => {
        if (!isListing || hidden.size === 0 || upstreamResponse.statusCode !== 200) {
          res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
          upstreamResponse.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        upstreamResponse.on('data', (chunk: Buffer) => chunks.push(chunk));
        upstreamResponse.on('end', () => {
          const page = JSON.parse(Buffer.concat(chunks).toString()) as {
            resources: { id: string }[];
            offset: number;
          };
          page.resources = page.resources.filter((d) => !hidden.has(d.id));
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(page));
        });
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get fault() {
      return state.fault;
    },
    set fault(value: Fault) {
      state.fault = value;
    },
    hidden,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
