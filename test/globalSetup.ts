// vitest global setup of the integration project: one real cluster for the whole suite.
import type { TestProject } from 'vitest/node';
import { type ProvidedCluster, provideCluster } from './cluster/provider.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
    clusterBinDir: string;
    clusterKind: string;
    /** JSON of the real node's registry and images, or of why there is none (`{ missing }`). */
    realNode: string;
  }
}

let cluster: ProvidedCluster | undefined;

export async function setup(project: TestProject): Promise<void> {
  cluster = await provideCluster((line) => process.stderr.write(`[cluster] ${line}\n`));
  project.provide('kubeconfigPath', cluster.kubeconfigPath);
  project.provide('clusterBinDir', cluster.binDir ?? '');
  project.provide('clusterKind', cluster.kind);
  project.provide('realNode', JSON.stringify(cluster.realNode));
  // For child processes (the agent under test, kubectl, helm).
  process.env.K8S_LISTENER_KUBECONFIG = cluster.kubeconfigPath;
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
