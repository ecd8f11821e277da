// A scripted stand-in for the API server's ConfigMap endpoints over loopback HTTP, for failures a
// real server will not produce on demand (expired continue tokens, 410 during a watch, silence).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

export interface FakeObject {
  name: string;
  uid: string;
  resourceVersion: string;
  data?: Record<string, string>;
}

/** How the next request of a kind is answered; unscripted requests behave normally. */
export type Script =
  | { readonly pass: true }
  | { readonly status: number; readonly reason: string; readonly message?: string }
  | { readonly hang: true }
  | { readonly watchError: number; readonly reason: string }
  | { readonly silentWatch: true };

export class FakeApiServer {
  readonly #server: Server;
  readonly objects = new Map<string, FakeObject>();
  readonly requests: { method: string; path: string; query: URLSearchParams; at: number }[] = [];
  readonly listScripts: Script[] = [];
  readonly watchScripts: Script[] = [];
  /** For any other path (single objects, other kinds). */
  readonly otherScripts: Script[] = [];
  readonly #watches = new Set<ServerResponse>();
  #resourceVersion = 100;
  #port = 0;

  private constructor() {
    this.#server = createServer((request, response) => this.#handle(request, response));
  }

  static async start(): Promise<FakeApiServer> {
    const fake = new FakeApiServer();
    await new Promise<void>((resolve) => fake.#server.listen(0, '127.0.0.1', () => resolve()));
    const address = fake.#server.address();
    fake.#port = typeof address === 'object' && address !== null ? address.port : 0;
    return fake;
  }

  kubeConfig(): KubeConfig {
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'fake', server: `http://127.0.0.1:${this.#port}`, skipTLSVerify: true }],
      users: [{ name: 'tester', token: 'test-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'tester' }],
      currentContext: 'fake',
    });
    return config;
  }

  get openWatches(): number {
    return this.#watches.size;
  }

  /** Creates or changes an object and tells open watches. */
  put(name: string, data: Record<string, string> = {}): FakeObject {
    const existing = this.objects.get(name);
    const object: FakeObject = {
      name,
      uid: existing?.uid ?? `uid-${name}-${this.#resourceVersion}`,
      resourceVersion: String(++this.#resourceVersion),
      data,
    };
    this.objects.set(name, object);
    this.#broadcast(existing === undefined ? 'ADDED' : 'MODIFIED', object);
    return object;
  }

  remove(name: string): void {
    const existing = this.objects.get(name);
    if (existing === undefined) return;
    this.objects.delete(name);
    this.#broadcast('DELETED', { ...existing, resourceVersion: String(++this.#resourceVersion) });
  }

  /** Changes the world without telling open watches (as if the events were missed). */
  putQuietly(name: string, data: Record<string, string> = {}): void {
    const existing = this.objects.get(name);
    this.objects.set(name, {
      name,
      uid: existing?.uid ?? `uid-${name}-${this.#resourceVersion}`,
      resourceVersion: String(++this.#resourceVersion),
      data,
    });
  }

  removeQuietly(name: string): void {
    this.objects.delete(name);
    this.#resourceVersion++;
  }

  /** Sends a bookmark (only a resourceVersion) to open watches. */
  bookmark(): string {
    const resourceVersion = String(++this.#resourceVersion);
    const line = `${JSON.stringify({ type: 'BOOKMARK', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { resourceVersion } } })}\n`;
    for (const response of this.#watches) response.write(line);
    return resourceVersion;
  }

  /** Ends every open watch stream gracefully, as the server does when timeoutSeconds pass. */
  endWatches(): void {
    for (const response of this.#watches) response.end();
    this.#watches.clear();
  }

  /** Ends every open watch stream abruptly. */
  cutWatches(): void {
    for (const response of this.#watches) response.socket?.destroy();
    this.#watches.clear();
  }

  async close(): Promise<void> {
    this.cutWatches();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://fake');
    this.requests.push({
      method: request.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      at: Date.now(),
    });
    if (request.headers.authorization !== 'Bearer test-token') {
      this.#status(response, 401, 'Unauthorized');
      return;
    }
    const collection = /^\/api\/v1\/namespaces\/[^/]+\/configmaps$/.test(url.pathname);
    const watching = collection && url.searchParams.get('watch') === 'true';
    const queue = !collection ? this.otherScripts : watching ? this.watchScripts : this.listScripts;
    const script = queue.shift();
    if (script !== undefined && 'hang' in script) return; // never answers
    if (script !== undefined && 'status' in script) {
      this.#status(response, script.status, script.reason, script.message);
    } else if (!collection) {
      this.#status(response, 404, 'NotFound');
    } else if (watching) {
      this.#watch(response, script);
    } else {
      this.#list(url.searchParams, response);
    }
  }

  #list(query: URLSearchParams, response: ServerResponse): void {
    const all = [...this.objects.values()].sort((a, b) => a.name.localeCompare(b.name));
    const limit = Number(query.get('limit') ?? all.length) || all.length;
    const start = Number(query.get('continue') ?? 0);
    const page = all.slice(start, start + limit);
    const next = start + limit < all.length ? String(start + limit) : undefined;
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        kind: 'ConfigMapList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(this.#resourceVersion), ...(next ? { continue: next } : {}) },
        items: page.map((object) => this.#wire(object)),
      }),
    );
  }

  #watch(response: ServerResponse, script: Script | undefined): void {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.flushHeaders();
    if (script !== undefined && 'watchError' in script) {
      const status = { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: script.watchError };
      response.end(`${JSON.stringify({ type: 'ERROR', object: { ...status, reason: script.reason } })}\n`);
      return;
    }
    if (script !== undefined && 'silentWatch' in script) {
      // Open, but nothing will ever be written to it.
      response.on('close', () => {});
      return;
    }
    this.#watches.add(response);
    response.on('close', () => this.#watches.delete(response));
  }

  #broadcast(type: string, object: FakeObject): void {
    const line = `${JSON.stringify({ type, object: { apiVersion: 'v1', kind: 'ConfigMap', ...this.#wire(object) } })}\n`;
    for (const response of this.#watches) response.write(line);
  }

  #wire(object: FakeObject) {
    return {
      metadata: {
        name: object.name,
        namespace: 'fake',
        uid: object.uid,
        resourceVersion: object.resourceVersion,
        labels: { owner: 'test' },
      },
      data: object.data ?? {},
    };
  }

  #status(response: ServerResponse, code: number, reason: string, message?: string): void {
    response.writeHead(code, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        ...(reason === '' ? {} : { reason }),
        code,
        message: message ?? `fake ${reason}`,
      }),
    );
  }
}
