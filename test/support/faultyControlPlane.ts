// A proxy in front of the emulator that misbehaves on demand, for the safety tests, and that can
// play a control plane newer than the agent: items rewritten in flight with values it does not know.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * `huge-body`: the listing answers a 300 MiB body; `endless-pages`: the listing never ends (each
 * page one more item of another listener, and an offset that keeps moving); `heavy-pages`: it
 * never ends either, each page as many valid deployments of another listener as the limit asks
 * for, some 15 MiB in all (under the 16 MiB body cap); `overfull-page`: its first page holds one
 * item more than the limit asks for.
 */
export type Fault =
  | 'none'
  | 'empty-list'
  | 'errors'
  | 'fail-page-2'
  | 'huge-body'
  | 'endless-pages'
  | 'heavy-pages'
  | 'overfull-page';

const HUGE_BODY_BYTES = 300 * 2 ** 20;
/** A heavy page's items' padding: 100 items of it are 15 MiB. */
const HEAVY_ITEM_PAD = 'x'.repeat((15 * 2 ** 20) / 100);

/** A valid deployment of a listener that is not the agent's, its one secret `pad`. */
function othersDeployment(n: number, pad: string): Record<string, unknown> {
  return {
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    tenant_id: '00000000-0000-4000-8000-000000000001',
    name: `other-${n}`,
    source: 'external_container',
    source_config: {
      listener_id: '00000000-0000-4000-8000-0000000000ff',
      listener_config: { k8s_namespace: 'elsewhere' },
    },
    source_revision_config: { image_uri: 'nginx:1.27' },
    secrets: pad === '' ? [] : [{ name: 'PAD', value: pad }],
    status: 'READY',
    created_at: '2026-11-01T09:04:00Z',
    updated_at: '2026-11-01T09:04:00Z',
    latest_revision_id: null,
    active_revision_id: null,
  };
}

export interface FaultyControlPlane {
  readonly url: string;
  fault: Fault;
  /** Deployment ids left out of every listing (as if deleted without AWAITING_DELETE). */
  readonly hidden: Set<string>;
  /** Deployment id → an edit of that deployment as listed or read (e.g. a source it does not know). */
  readonly rewrite: Map<string, (deployment: Record<string, unknown>) => void>;
  /** Deployment id → an edit of each of its revisions as listed. */
  readonly rewriteRevisions: Map<string, (revision: Record<string, unknown>) => void>;
  /**
   * Raw JSON texts added to the first page of every deployments listing, as written: items no
   * emulator would store or could serialise (nested thousands deep, for one).
   */
  readonly injected: string[];
  /** Requests seen, as `METHOD /path` without the query. */
  readonly requests: string[];
  close(): Promise<void>;
}

export async function startFaultyControlPlane(upstream: string): Promise<FaultyControlPlane> {
  const target = new URL(upstream);
  const state: { fault: Fault } = { fault: 'none' };
  const hidden = new Set<string>();
  const rewrite = new Map<string, (deployment: Record<string, unknown>) => void>();
  const rewriteRevisions = new Map<string, (revision: Record<string, unknown>) => void>();
  const injected: string[] = [];
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', upstream);
    requests.push(`${req.method} ${url.pathname}`);
    const isListing = req.method === 'GET' && url.pathname === '/v2/deployments';
    const revisionsOf =
      req.method === 'GET' ? /^\/v2\/deployments\/([^/]+)\/revisions$/.exec(url.pathname)?.[1] : undefined;
    const deploymentRead =
      req.method === 'GET' ? /^\/v2\/deployments\/([^/]+)$/.exec(url.pathname)?.[1] : undefined;
    const edits = isListing || revisionsOf !== undefined || deploymentRead !== undefined;
    if (state.fault === 'errors') {
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end('{"error":{"code":"unavailable","message":"down"}}');
      return;
    }
    if (isListing && state.fault === 'huge-body') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(2 ** 20, ' ');
      let sent = 0;
      const pump = () => {
        while (sent < HUGE_BODY_BYTES) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end('{"resources":[],"offset":0}');
      };
      res.on('close', () => {
        sent = HUGE_BODY_BYTES;
      });
      pump();
      return;
    }
    if (isListing && state.fault === 'endless-pages') {
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const item = {
        id: `00000000-0000-4000-8000-${String(offset).padStart(12, '0')}`,
        name: `other-${offset}`,
      };
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ resources: [item], offset: offset + 1 }));
      return;
    }
    if (isListing && (state.fault === 'heavy-pages' || state.fault === 'overfull-page')) {
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const limit = Number(url.searchParams.get('limit') ?? 100);
      const heavy = state.fault === 'heavy-pages';
      const count = heavy ? limit : limit + 1;
      const resources = Array.from({ length: count }, (_, i) =>
        othersDeployment(offset + i, heavy ? HEAVY_ITEM_PAD : ''),
      );
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ resources, offset: offset + count }));
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
        const injecting =
          isListing && injected.length > 0 && Number(url.searchParams.get('offset') ?? 0) === 0;
        const idle = hidden.size === 0 && rewrite.size === 0 && rewriteRevisions.size === 0 && !injecting;
        if (!edits || idle || upstreamResponse.statusCode !== 200) {
          res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
          upstreamResponse.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        upstreamResponse.on('data', (chunk: Buffer) => chunks.push(chunk));
        upstreamResponse.on('end', () => {
          const body = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown> & {
            resources?: (Record<string, unknown> & { id: string })[];
          };
          if (deploymentRead !== undefined) rewrite.get(deploymentRead)?.(body);
          else if (revisionsOf !== undefined) {
            for (const revision of body.resources ?? []) rewriteRevisions.get(revisionsOf)?.(revision);
          } else {
            body.resources = (body.resources ?? []).filter((d) => !hidden.has(d.id));
            for (const deployment of body.resources) rewrite.get(deployment.id)?.(deployment);
          }
          let text = JSON.stringify(body);
          if (injecting) {
            // Spliced in as text: the items may be past what JSON.stringify can write.
            const items = body.resources?.map((item) => JSON.stringify(item)) ?? [];
            text = `{"resources":[${[...injected, ...items].join(',')}],"offset":${JSON.stringify(body.offset)}}`;
          }
          res.writeHead(200, { 'content-type': 'application/json' }).end(text);
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
    rewrite,
    rewriteRevisions,
    injected,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
