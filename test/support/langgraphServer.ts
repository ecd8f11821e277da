// A deployed LangGraph server as the real node's tests reach it: its API through its Service's
// cluster IP, as another workload would call it, and SQL in the PostgreSQL the agent made for it.
import { kubectl } from './adminKube.ts';
import type { World } from './agentHarness.ts';

export interface ServerAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** A client of the server behind Service `name` in `namespace` (JSON in, JSON out, 30 s a call). */
export function serviceClient(
  world: () => World,
  namespace: () => string,
  name: string,
): (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<ServerAnswer> {
  return async (method, path, body) => {
    const service = await world().kube.core.readNamespacedService({ name, namespace: namespace() });
    const response = await fetch(`http://${service.spec?.clusterIP}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
}

/** Runs `query` with psql in the namespace's running database pod, as its user `app`: the unaligned rows. */
export function databaseQuery(
  world: () => World,
  namespace: () => string,
  clusterBinDir: () => string,
): (query: string) => Promise<string> {
  return async (query) => {
    const pods = await world().kube.core.listNamespacedPod({
      namespace: namespace(),
      labelSelector: 'app.kubernetes.io/component=database',
    });
    const pod = pods.items.find((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
    const args = [
      'exec',
      '-n',
      namespace(),
      pod?.metadata?.name ?? '',
      '--',
      'psql',
      '-U',
      'app',
      '-d',
      'app',
    ];
    return (await kubectl(clusterBinDir(), world().kubeconfigPath, [...args, '-tAc', query])).trim();
  };
}

/** The `langgraph.json` of the real node's server image: its two graphs. */
export const NODE_LANGGRAPH_JSON = JSON.stringify({
  dependencies: ['.'],
  graphs: { counter: './counter.py:graph', long_run: './long_run.py:graph' },
});
