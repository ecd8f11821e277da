// Test-side access to the cluster: the official client for setup and assertions, and kubectl.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';

const execFileAsync = promisify(execFile);

export interface AdminKube {
  readonly config: k8s.KubeConfig;
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  readonly objects: k8s.KubernetesObjectApi;
}

export function adminKube(kubeconfigPath: string): AdminKube {
  const config = new k8s.KubeConfig();
  config.loadFromFile(kubeconfigPath);
  return {
    config,
    core: config.makeApiClient(k8s.CoreV1Api),
    apps: config.makeApiClient(k8s.AppsV1Api),
    objects: k8s.KubernetesObjectApi.makeApiClient(config),
  };
}

/** A namespace name unique to one test, so tests never see each other's objects. */
export function uniqueNamespace(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export async function createNamespace(
  kube: AdminKube,
  name: string,
  annotations?: Readonly<Record<string, string>>,
): Promise<void> {
  await kube.core.createNamespace({ body: { metadata: { name, ...(annotations ? { annotations } : {}) } } });
}

export async function kubectl(
  binDir: string,
  kubeconfigPath: string,
  args: readonly string[],
): Promise<string> {
  const { stdout } = await execFileAsync(join(binDir, 'kubectl'), ['--kubeconfig', kubeconfigPath, ...args], {
    maxBuffer: 32 * 1024 * 1024,
  });
  return stdout;
}

/** Runs kubectl with `input` on stdin; resolves with its output, rejects with its stderr. */
export function kubectlWithInput(
  binDir: string,
  kubeconfigPath: string,
  args: readonly string[],
  input: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      join(binDir, 'kubectl'),
      ['--kubeconfig', kubeconfigPath, ...args],
      { maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`kubectl ${args.join(' ')} failed: ${stderr}`, { cause: error }));
        else resolve(stdout);
      },
    );
    child.stdin?.end(input);
  });
}
