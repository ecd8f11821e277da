// A loopback TCP proxy for tests that need a real connection to break: cut it, freeze it, or
// refuse new ones, between a client and a real API server (TLS passes through untouched).
import { connect, createServer, type Server, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export class TcpProxy {
  readonly #server: Server;
  readonly #pairs = new Set<[Socket, Socket]>();
  #refusing = false;
  #port = 0;

  private constructor(targetHost: string, targetPort: number) {
    this.#server = createServer((client) => {
      if (this.#refusing) {
        client.destroy();
        return;
      }
      const upstream = connect(targetPort, targetHost);
      const pair: [Socket, Socket] = [client, upstream];
      this.#pairs.add(pair);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.#pairs.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await new Promise<void>((resolve, reject) => {
      proxy.#server.once('error', reject);
      proxy.#server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = proxy.#server.address();
    proxy.#port = typeof address === 'object' && address !== null ? address.port : 0;
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  get connections(): number {
    return this.#pairs.size;
  }

  /** Destroys every open connection, as a network failure would. */
  cutAll(): void {
    for (const [client, upstream] of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
  }

  /** Stops forwarding on every open connection without closing it: a silently dead link. */
  freezeAll(): void {
    for (const [client, upstream] of this.#pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** While on, new connections are closed at once (and open ones are cut). */
  refuse(on: boolean): void {
    this.#refusing = on;
    if (on) this.cutAll();
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** The cluster of a kubeconfig file, reached through a proxy started for it (same host name, for TLS). */
export async function proxiedKubeConfig(
  kubeconfigPath: string,
): Promise<{ config: KubeConfig; proxy: TcpProxy }> {
  const original = new KubeConfig();
  original.loadFromFile(kubeconfigPath);
  const cluster = original.getCurrentCluster();
  if (cluster === null) throw new Error(`${kubeconfigPath} has no current cluster`);
  const server = new URL(cluster.server);
  const proxy = await TcpProxy.start(server.hostname.replace(/^\[|\]$/g, ''), Number(server.port || 443));
  server.port = String(proxy.port);
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: original
      .getClusters()
      .map((each) =>
        each.name === cluster.name ? { ...each, server: server.toString().replace(/\/$/, '') } : each,
      ),
    users: original.getUsers(),
    contexts: original.getContexts(),
    currentContext: original.getCurrentContext(),
  });
  return { config, proxy };
}
