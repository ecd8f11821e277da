// Between two clients' phases, the cluster as quiet as the first client found it. A phase's
// workloads bring their pods up after its applies end, at the controller manager's own rate (some
// 5 pods a second at its default qps: minutes for N = 1,000); a client started meanwhile shares
// the API server with that work, and the order of the phases, not the clients, decides the ratio.
import type { KubeClient } from '../../src/kube/kubeClient.ts';
import { fieldAt } from '../../src/objects/fields.ts';
import { log, seconds } from './log.ts';
import { until } from './until.ts';

/** Whether a workload is ready: its latest spec observed, and every replica it asks for ready. */
function isReady(workload: unknown): boolean {
  const generation = Number(fieldAt(workload, 'metadata', 'generation') ?? 0);
  const observed = Number(fieldAt(workload, 'status', 'observedGeneration') ?? 0);
  const replicas = Number(fieldAt(workload, 'spec', 'replicas') ?? 1);
  const ready = Number(fieldAt(workload, 'status', 'readyReplicas') ?? 0);
  return observed >= generation && ready >= replicas;
}

/** How many Deployments and StatefulSets of `namespaces` are not yet ready, and of how many. */
async function unready(admin: KubeClient, namespaces: readonly string[]): Promise<[number, number]> {
  let waiting = 0;
  let all = 0;
  for (const namespace of namespaces)
    for (const kind of ['Deployment', 'StatefulSet'] as const) {
      let listed: [number, number] = [0, 0];
      await admin.listPages(kind, { namespace }, (items, restarted) => {
        if (restarted) listed = [0, 0];
        listed = [listed[0] + items.filter((item) => !isReady(item)).length, listed[1] + items.length];
      });
      waiting += listed[0];
      all += listed[1];
    }
  return [waiting, all];
}

/** Waits until every workload of `namespaces` is ready; says how long that took. */
export async function settle(
  admin: KubeClient,
  namespaces: readonly string[],
  timeoutMs: number,
): Promise<void> {
  const started = performance.now();
  const all = await until(
    'every workload ready before the next phase',
    async () => {
      const [waiting, count] = await unready(admin, namespaces);
      return waiting === 0 ? count : undefined;
    },
    timeoutMs,
    5_000,
  );
  log(`settled: ${all} workloads ready after ${seconds(performance.now() - started)} s`);
}
