// The floor: the agent's objects, in namespaces of their own, applied by a bare loop of
// server-side applies at the agent's concurrency on one keep-alive pool: what no client can beat.
import pino from 'pino';
import { KubeClient } from '../../src/kube/kubeClient.ts';
import type { KubeObject } from '../../src/render/index.ts';
import type { BenchCluster } from './cluster.ts';
import { type Fleet, renderFleet } from './fleet.ts';
import { log, seconds } from './log.ts';

export const floorNamespaceOf = (namespace: string) => `floor-${namespace}`;

/** Applies every object with `workers` parallel loops over one client (one keep-alive pool). */
async function applyAll(kube: KubeClient, objects: readonly KubeObject[], workers: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < objects.length) {
        const object = objects[next++];
        if (object) await kube.apply(object, { force: true });
      }
    }),
  );
  return performance.now() - started;
}

/** The floor's time to apply every object, in ms. */
export async function runFloor(
  { cluster }: BenchCluster,
  fleet: Fleet,
  concurrency: number,
): Promise<number> {
  const floorKube = await KubeClient.fromKubeconfig(cluster.kubeconfigPath, {
    logger: pino({ level: 'silent' }),
  });
  const floorObjects = renderFleet(fleet.seeded, fleet.listener, floorNamespaceOf, fleet.renderConfig);
  const floorMs = await applyAll(floorKube, floorObjects, concurrency);
  await floorKube.close();
  log(`floor: ${floorObjects.length} objects in ${seconds(floorMs)} s`);
  return floorMs;
}
