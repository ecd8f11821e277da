// Chooses the cluster the integration suite runs against: an existing one named by the
// environment, else k3s in a container where a Docker engine answers, else the local control
// plane this project builds.
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { ensureClusterBinaries, startLocalCluster } from './localCluster.ts';

export interface ProvidedCluster {
  readonly kind: 'existing' | 'k3s' | 'local';
  readonly kubeconfigPath: string;
  /** Directory with kubectl and helm (built by build.sh) when available. */
  readonly binDir: string | undefined;
  stop(): Promise<void>;
}

function existingKubeconfig(): string | undefined {
  const explicit = process.env.K8S_LISTENER_TEST_KUBECONFIG;
  if (explicit) return explicit;
  if (process.env.K8S_LISTENER_USE_KUBECONFIG === '1' && process.env.KUBECONFIG)
    return process.env.KUBECONFIG;
  return undefined;
}

async function dockerAnswers(): Promise<boolean> {
  const socketPath = process.env.DOCKER_HOST?.startsWith('unix://')
    ? process.env.DOCKER_HOST.slice('unix://'.length)
    : '/var/run/docker.sock';
  if (process.env.K8S_LISTENER_NO_DOCKER === '1' || !existsSync(socketPath)) return false;
  return new Promise((resolve) => {
    const ping = request({ socketPath, path: '/_ping', timeout: 2_000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    ping.on('error', () => resolve(false));
    ping.on('timeout', () => {
      ping.destroy();
      resolve(false);
    });
    ping.end();
  });
}

async function startK3s(binDir: string | undefined): Promise<ProvidedCluster> {
  const { writeFile, mkdtemp } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  // Imported only here: the package is needed only where a Docker engine exists.
  const moduleName = '@testcontainers/k3s';
  const { K3sContainer } = (await import(moduleName)) as {
    K3sContainer: new (
      image: string,
    ) => { start(): Promise<{ getKubeConfig(): string; stop(): Promise<unknown> }> };
  };
  const container = await new K3sContainer(
    process.env.K8S_LISTENER_K3S_IMAGE ?? 'rancher/k3s:v1.34.4-k3s1',
  ).start();
  const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-k3s-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  await writeFile(kubeconfigPath, container.getKubeConfig(), { mode: 0o600 });
  return { kind: 'k3s', kubeconfigPath, binDir, stop: async () => void (await container.stop()) };
}

export async function provideCluster(log: (line: string) => void): Promise<ProvidedCluster> {
  const existing = existingKubeconfig();
  const binDir = await ensureClusterBinaries().catch((error: unknown) => {
    // An existing cluster does not need our binaries; the local one does.
    if (existing) return undefined;
    throw error;
  });
  if (existing) {
    log(`integration suite: using the existing cluster in ${existing}`);
    return { kind: 'existing', kubeconfigPath: existing, binDir, stop: async () => {} };
  }
  if (await dockerAnswers()) {
    log('integration suite: Docker engine found, starting k3s in a container');
    return startK3s(binDir);
  }
  log('integration suite: starting the local control plane');
  if (!binDir) throw new Error('no cluster binaries');
  const cluster = await startLocalCluster({ binDir, log });
  return { kind: 'local', kubeconfigPath: cluster.kubeconfigPath, binDir, stop: cluster.stop };
}
