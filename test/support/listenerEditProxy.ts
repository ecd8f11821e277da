// A proxy in front of the real emulator through which a test plays an operator at a chosen moment
// of the agent's own requests: once the emulator has answered one of them and before the agent
// has the answer. The emulator stays the control plane; only the timing is the test's.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ListenerEditProxy {
  readonly url: string;
  /** Every request forwarded or refused, in order, as `METHOD /path` (no query). */
  readonly requests: string[];
  /**
   * Run after the emulator answered `request` (its n-th time, from 1) and before the agent gets
   * the answer: what it does happens between that request and the agent's next one.
   */
  afterAnswer: ((request: string, nth: number) => Promise<void>) | undefined;
  /** Answered 503 without reaching the emulator when this says so. */
  refuse: ((request: string, nth: number) => boolean) | undefined;
  close(): Promise<void>;
}

export async function startListenerEditProxy(upstream: string): Promise<ListenerEditProxy> {
  const target = new URL(upstream);
  const requests: string[] = [];
  // Assigned once listening, before any request can arrive.
  let proxy: ListenerEditProxy | undefined;
  const server: Server = createServer((req, res) => {
    const seen: string = `${req.method ?? 'GET'} ${new URL(req.url ?? '/', upstream).pathname}`;
    requests.push(seen);
    const nth = requests.filter((r) => r === seen).length;
    if (proxy?.refuse?.(seen, nth)) {
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end('{"error":{"code":"unavailable","message":"refused by the test"}}');
      return;
    }
    const forward = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          void (async () => {
            try {
              await proxy?.afterAnswer?.(seen, nth);
            } catch (error) {
              // The test's own step failed: the agent gets an answer it cannot mistake.
              res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
              return;
            }
            const headers = { ...answer.headers };
            delete headers['transfer-encoding'];
            headers['content-length'] = String(body.length);
            res.writeHead(answer.statusCode ?? 502, headers).end(body);
          })();
        });
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  proxy = {
    url: `http://127.0.0.1:${port}`,
    requests,
    afterAnswer: undefined,
    refuse: undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
