// The container engine of the image tests: buildah and podman from Debian's packages, with the
// project's own store and engine configuration (test/image/containers.sh writes both into the
// cache), and podman's Docker-compatible API on a socket of the test's own, for testcontainers.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually, GiveUp } from './eventually.ts';

const run = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;
const TOOLS = ['buildah', 'podman', 'runc', 'mmdebstrap'] as const;

/** The tools the image tests need that this machine lacks (`.ci/run` installs them). */
export function missingContainerTools(env: NodeJS.ProcessEnv = process.env): string[] {
  const path = (env.PATH ?? '').split(':');
  return TOOLS.filter((tool) => !path.some((dir) => existsSync(join(dir, tool))));
}

/** The environment that points podman and buildah at the project's store (see containers.sh). */
export function containerEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const containers = join(env.K8S_LISTENER_CACHE ?? join(homedir(), '.cache', 'k8s-listener'), 'containers');
  return {
    ...env,
    CONTAINERS_STORAGE_CONF: join(containers, 'storage.conf'),
    CONTAINERS_CONF: join(containers, 'containers.conf'),
  };
}

/**
 * Builds the repository's Dockerfile by `command` (docs/image.md's, which runs
 * test/image/build.sh); returns the tag (its last line) and what it reported (size, layers).
 */
export async function buildImage(command: string): Promise<{ tag: string; report: string }> {
  const { stdout, stderr } = await run('bash', ['-c', command], {
    cwd: ROOT,
    env: containerEnv(),
    maxBuffer: 64 * 1024 * 1024,
  });
  return { tag: stdout.trim().split('\n').at(-1) ?? '', report: stderr };
}

/** `podman <args>` with the project's store. */
export async function podman(...args: string[]): Promise<string> {
  const { stdout } = await run('podman', args, { env: containerEnv(), maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

function ping(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', timeout: 1_000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}

export interface PodmanService {
  /** For DOCKER_HOST: `unix://…`. */
  readonly dockerHost: string;
  stop(): Promise<void>;
}

/** `podman system service` on `socketPath` until stopped: a Docker-compatible API of our own. */
export async function startPodmanService(socketPath: string): Promise<PodmanService> {
  const child: ChildProcess = spawn('podman', ['system', 'service', '--time=0', `unix://${socketPath}`], {
    env: containerEnv(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  try {
    await eventually(
      `podman system service on ${socketPath}`,
      async () => {
        if (child.exitCode !== null) throw new GiveUp('podman system service exited');
        return (await ping(socketPath)) || undefined;
      },
      30_000,
      200,
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`podman system service did not answer on ${socketPath}: ${stderr.trim()}`, {
      cause: error,
    });
  }
  return {
    dockerHost: `unix://${socketPath}`,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
