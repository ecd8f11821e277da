// kubectl: the agent's objects, in namespaces of their own, applied by one
// `kubectl apply --server-side` per namespace, one after another, as an operator would.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { BenchCluster } from './cluster.ts';
import { type Fleet, NAMESPACES, renderFleet } from './fleet.ts';
import { log, seconds } from './log.ts';

const execFileAsync = promisify(execFile);

export const kubectlNamespaceOf = (namespace: string) => `kubectl-${namespace}`;

/** kubectl's time to apply every object (the sum of its runs), in ms. */
export async function runKubectl(
  { workDir, kubectl, cluster }: BenchCluster,
  fleet: Fleet,
  phaseTimeoutMs: number,
): Promise<number> {
  const kubectlObjects = renderFleet(fleet.seeded, fleet.listener, kubectlNamespaceOf, fleet.renderConfig);
  let kubectlMs = 0;
  for (const namespace of NAMESPACES.map(kubectlNamespaceOf)) {
    const file = join(workDir, `${namespace}.json`);
    const items = kubectlObjects.filter((o) => o.metadata.namespace === namespace);
    await writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    const before = performance.now();
    await execFileAsync(
      kubectl,
      ['--kubeconfig', cluster.kubeconfigPath, 'apply', '--server-side', '--force-conflicts', '-f', file],
      { maxBuffer: 64 * 2 ** 20, timeout: phaseTimeoutMs },
    ).catch((error: { stderr?: string }) => {
      throw new Error(`kubectl apply in ${namespace} failed: ${(error.stderr ?? '').slice(0, 2_000)}`);
    });
    kubectlMs += performance.now() - before;
  }
  log(`kubectl: ${kubectlObjects.length} objects in ${seconds(kubectlMs)} s`);
  return kubectlMs;
}
