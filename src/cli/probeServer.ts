// The agent's own HTTP endpoints: liveness, readiness and Prometheus metrics.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

export interface ProbeServerOptions {
  readonly host: string;
  readonly port: number;
  readonly registry: Registry;
  /** Live: the process's loops are turning. A false answer makes the kubelet restart the pod. */
  readonly isLive: () => boolean;
  /** Ready: registered with the control plane and able to reach the API server. */
  readonly isReady: () => boolean;
  readonly logger: Logger;
}

export interface RunningProbeServer {
  readonly url: string;
  close(): Promise<void>;
}

// node:http as its CommonJS module: an ES import of it reads every export, and its lazy
// WebSocket/MessageEvent exports load Node's own copy of undici (0.8 MB of source held for nothing).
const { createServer } = process.getBuiltinModule('node:http');

export async function startProbeServer(options: ProbeServerOptions): Promise<RunningProbeServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET') {
      response.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const ok = path === '/healthz' ? options.isLive() : options.isReady();
      response.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'not ready\n');
      return;
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        (body) => response.writeHead(200, { 'content-type': options.registry.contentType }).end(body),
        (error: unknown) => {
          options.logger.error({ err: error }, 'metrics collection failed');
          response.writeHead(500).end();
        },
      );
      return;
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${address.address}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
