// For the suites whose pods must really run: the real node the global setup started (its registry
// and images), or the one line saying why there is none, printed once by the suite that skips.
import { request } from 'node:http';
import { inject } from 'vitest';
import { image, REAL_NODE_NAMESPACE_ANNOTATIONS, realNodeRender } from '../cluster/realNodeLauncher.ts';

export { image, REAL_NODE_NAMESPACE_ANNOTATIONS, realNodeRender };

export interface RealNodeImages {
  readonly registry: string;
  /** By name (postgres, redis, probe-app, crash-app, …): a reference by digest in the node's registry. */
  readonly images: Readonly<Record<string, string>>;
}

/** The real node, or undefined after printing why the suite `name` skips. */
export function realNodeFor(suite: string): RealNodeImages | undefined {
  const provided = JSON.parse(inject('realNode')) as RealNodeImages | { missing: string };
  if ('missing' in provided) {
    process.stderr.write(`[real node] ${suite} skips: ${provided.missing}\n`);
    return undefined;
  }
  return provided;
}

/** GET over plain HTTP from this machine (a ClusterIP through kube-proxy, or a pod IP): status and JSON body. */
export function httpGet(url: string, timeoutMs = 5_000): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { timeout: timeoutMs }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON: the text itself.
        }
        resolve({ status: response.statusCode ?? 0, body });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
