// A run's world: a fresh local cluster with room for every copy's pods, the emulator as the control
// plane, a client of each, and a working directory for configuration, logs and profiles.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { type RunningEmulator, startEmulator } from '../../src/emulator/server.ts';
import { KubeClient } from '../../src/kube/kubeClient.ts';
import type { KubeObject } from '../../src/render/index.ts';
import {
  ensureClusterBinaries,
  type LocalCluster,
  startLocalCluster,
} from '../../test/cluster/localCluster.ts';
import { ControlPlaneTestClient } from '../../test/support/controlPlaneTestClient.ts';
import { NAMESPACES } from './fleet.ts';
import { log } from './log.ts';

const execFileAsync = promisify(execFile);

export interface BenchCluster {
  readonly workDir: string;
  readonly cluster: LocalCluster;
  /** The kubectl binary of the cluster's version. */
  readonly kubectl: string;
  readonly emulator: RunningEmulator;
  readonly client: ControlPlaneTestClient;
  readonly admin: KubeClient;
}

/** Starts the cluster and the emulator for `deployments` deployments; `keepCluster` keeps its data in workDir. */
export async function startBenchCluster(options: {
  readonly deployments: number;
  readonly controllerQps: number | undefined;
  readonly keepCluster: boolean;
}): Promise<BenchCluster> {
  const binDir = await ensureClusterBinaries();
  const workDir = await mkdtemp(join(tmpdir(), 'k8s-listener-bench-'));
  // Room for every pod: the agent's, the floor's, kubectl's and Flux's copies (about 2.2 pods a
  // deployment each).
  const cluster = await startLocalCluster({
    binDir,
    ...(options.keepCluster ? { runDir: join(workDir, 'cluster') } : {}),
    podsPerNode: Math.max(250, Math.ceil((options.deployments * 4 * 2.5) / 3)),
    controllerManagerQps: options.controllerQps,
  });
  const emulator = await startEmulator({});
  const client = new ControlPlaneTestClient({ baseUrl: emulator.url, logger: pino({ level: 'silent' }) });
  const admin = await KubeClient.fromKubeconfig(cluster.kubeconfigPath, {
    logger: pino({ level: 'silent' }),
  });
  if (options.keepCluster) log(`cluster directory (kept): ${join(workDir, 'cluster')}`);
  return { workDir, cluster, kubectl: join(binDir, 'kubectl'), emulator, client, admin };
}

export async function stopBenchCluster({ client, admin, emulator, cluster }: BenchCluster): Promise<void> {
  await client.close();
  await admin.close();
  await emulator.close();
  await cluster.stop();
}

export async function createNamespaces(admin: KubeClient, names: readonly string[]): Promise<void> {
  for (const name of names)
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as KubeObject, {
      force: true,
    });
}

/** The pods of the agent's namespaces, counted a page at a time. */
export async function countPods(admin: KubeClient): Promise<number> {
  let count = 0;
  for (const namespace of NAMESPACES)
    await admin.listPages('Pod', { namespace }, (items) => {
      count += items.length;
    });
  return count;
}

/** The API server's and kubectl's versions, as kubectl reports them. */
export async function clusterVersions({ kubectl, cluster }: BenchCluster) {
  return JSON.parse(
    (await execFileAsync(kubectl, ['--kubeconfig', cluster.kubeconfigPath, 'version', '-o', 'json'])).stdout,
  ) as { serverVersion?: { gitVersion?: string }; clientVersion?: { gitVersion?: string } };
}
