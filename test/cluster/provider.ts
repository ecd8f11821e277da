// Provides the cluster the integration suite runs against: an existing one named by the
// environment, else k3s in a container (testcontainers) where a Docker engine answers, else the
// local control plane this project builds. It says in one line which one and why.
import { existsSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { homedir, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import {
  type ClusterChoice,
  chooseCluster,
  type DockerEndpoint,
  type DockerProbe,
  dockerDisabled,
  dockerEndpoints,
  type Env,
  k3sImageOf,
} from './clusterChoice.ts';
import { ensureCrdFiles, installCrds } from './crds.ts';
import { ensureClusterBinaries, ensureNodeBinaries, startLocalCluster } from './localCluster.ts';
import { type NodeImages, realNodeMissing } from './realNodeLauncher.ts';

export interface ProvidedCluster {
  readonly kind: ClusterChoice['kind'];
  readonly kubeconfigPath: string;
  /** Directory with kubectl and helm (built by build.sh) when available. */
  readonly binDir: string | undefined;
  /** The real node's registry and images, when one runs; else why not, in one line. */
  readonly realNode:
    | { readonly registry: string; readonly images: NodeImages }
    | { readonly missing: string };
  stop(): Promise<void>;
}

/** Whether the local cluster gets a real node: undefined when it does, else why not. */
async function realNodeRefusal(env: Env): Promise<string | undefined> {
  if (env.K8S_LISTENER_REAL_NODE === '0') return 'K8S_LISTENER_REAL_NODE=0';
  return realNodeMissing();
}

const PING_TIMEOUT_MS = 2_000;

/** GET a path of the engine's API: its status code, or why there was none. */
function engineGet(endpoint: DockerEndpoint, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const target =
      endpoint.kind === 'unix'
        ? { socketPath: endpoint.socketPath }
        : { host: endpoint.host, port: endpoint.port };
    const req = request({ ...target, path, timeout: PING_TIMEOUT_MS }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on('error', (error) => resolve(`${endpoint.uri} did not answer ${path} (${error.message})`));
    req.on('timeout', () => {
      req.destroy();
      resolve(`${endpoint.uri} did not answer ${path} within ${PING_TIMEOUT_MS} ms`);
    });
    req.end();
  });
}

/** Cheap: a socket that does not exist costs a stat; nothing of testcontainers is loaded here. */
export async function probeDocker(env: Env): Promise<DockerProbe> {
  if (dockerDisabled(env)) return { answered: false, why: 'K8S_LISTENER_NO_DOCKER=1' };
  const endpoints = dockerEndpoints(env, homedir(), userInfo().uid);
  if (typeof endpoints === 'string') return { answered: false, why: endpoints };
  const failures: string[] = [];
  for (const endpoint of endpoints) {
    if (endpoint.kind === 'unix' && !existsSync(endpoint.socketPath)) {
      // The usual sockets are only guesses; a DOCKER_HOST that names none is worth saying.
      if (env.DOCKER_HOST) failures.push(`DOCKER_HOST=${endpoint.uri} names no socket`);
      continue;
    }
    // Any HTTP answer to /_ping means an engine listens (a TLS-only engine answers 400).
    const ping = await engineGet(endpoint, '/_ping');
    if (typeof ping === 'string') {
      failures.push(ping);
      continue;
    }
    const k3sImage = k3sImageOf(env);
    const inspect = await engineGet(endpoint, `/images/${k3sImage}/json`);
    return { answered: true, endpoint: endpoint.uri, k3sImage, k3sImagePresent: inspect === 200 };
  }
  if (failures.length > 0) return { answered: false, why: failures.join('; ') };
  return { answered: false, why: 'DOCKER_HOST is not set and no Docker socket exists' };
}

async function startK3s(binDir: string | undefined, env: Env): Promise<ProvidedCluster> {
  // Imported only here, after an engine answered: testcontainers needs one as soon as it is used.
  const { K3sContainer } = await import('@testcontainers/k3s');
  const container = await new K3sContainer(k3sImageOf(env)).start();
  const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-k3s-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  await writeFile(kubeconfigPath, container.getKubeConfig(), { mode: 0o600 });
  return {
    kind: 'k3s',
    kubeconfigPath,
    binDir,
    realNode: { missing: 'the cluster is k3s: the real node belongs to the local cluster' },
    stop: async () => void (await container.stop()),
  };
}

export async function provideCluster(
  log: (line: string) => void,
  env: Env = process.env,
): Promise<ProvidedCluster> {
  const choice = chooseCluster(env, await probeDocker(env));
  log(choice.reason);
  const binDir = await ensureClusterBinaries().catch((error: unknown) => {
    // An existing cluster or k3s does not need our binaries (only helm and kubectl tests do).
    if (choice.kind !== 'local') return undefined;
    throw error;
  });
  switch (choice.kind) {
    case 'existing':
      return {
        kind: 'existing',
        kubeconfigPath: choice.kubeconfigPath,
        binDir,
        realNode: { missing: 'the cluster is an existing one: the real node belongs to the local cluster' },
        stop: async () => {},
      };
    case 'k3s': {
      const crds = await ensureCrdFiles();
      if (!binDir) throw new Error('no kubectl to install the CRDs with: test/cluster/build.sh failed');
      const cluster = await startK3s(binDir, env);
      await installCrds(join(binDir, 'kubectl'), cluster.kubeconfigPath, crds, log).catch(
        async (error: unknown) => {
          await cluster.stop();
          throw error;
        },
      );
      return cluster;
    }
    case 'local': {
      if (!binDir) throw new Error('no cluster binaries');
      const refusal = await realNodeRefusal(env);
      // A machine that can run the node builds it; a failed build is a failure, not a skip.
      const realNodeBinDir = refusal ? undefined : await ensureNodeBinaries();
      const crds = await ensureCrdFiles();
      const cluster = await startLocalCluster({ binDir, realNodeBinDir, log });
      // The Gateway API's and KEDA's kinds, served as a cluster with them installed serves them.
      await installCrds(join(binDir, 'kubectl'), cluster.kubeconfigPath, crds, log).catch(
        async (error: unknown) => {
          await cluster.stop();
          throw error;
        },
      );
      const realNode = cluster.realNode
        ? { registry: cluster.realNode.registry, images: cluster.realNode.images }
        : { missing: refusal ?? cluster.realNodeMissing ?? 'no real node was started' };
      if ('missing' in realNode)
        log(`real node: none (${realNode.missing}); the suites that need running pods skip`);
      return { kind: 'local', kubeconfigPath: cluster.kubeconfigPath, binDir, realNode, stop: cluster.stop };
    }
  }
}
