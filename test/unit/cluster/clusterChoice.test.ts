// The integration suite's choice of cluster: every branch of the pure choice, the Docker probe
// against a real socket, and no module of testcontainers loaded where no engine answers.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseCluster, type DockerProbe, dockerEndpoints, type Env } from '../../cluster/clusterChoice.ts';
import { probeDocker } from '../../cluster/provider.ts';

const run = promisify(execFile);
const answered: DockerProbe = {
  answered: true,
  endpoint: 'unix:///var/run/docker.sock',
  k3sImage: 'rancher/k3s:v1.34.4-k3s1',
  k3sImagePresent: true,
};
const silent: DockerProbe = { answered: false, why: 'DOCKER_HOST is not set and no Docker socket exists' };

describe('chooseCluster', () => {
  it.each<[string, Env, DockerProbe, string, string]>([
    [
      'an explicit kubeconfig wins over Docker',
      { K8S_LISTENER_TEST_KUBECONFIG: '/k/config', KUBECONFIG: '/other' },
      answered,
      'existing',
      'cluster: the existing cluster in /k/config (K8S_LISTENER_TEST_KUBECONFIG is set)',
    ],
    [
      'KUBECONFIG only when asked for',
      { K8S_LISTENER_USE_KUBECONFIG: '1', KUBECONFIG: '/home/me/.kube/config' },
      silent,
      'existing',
      'cluster: the existing cluster in /home/me/.kube/config (K8S_LISTENER_USE_KUBECONFIG=1 and KUBECONFIG)',
    ],
    [
      'KUBECONFIG alone is not used',
      { KUBECONFIG: '/home/me/.kube/config' },
      silent,
      'local',
      'cluster: the local control plane built by the project (no Docker engine: DOCKER_HOST is not set and no Docker socket exists)',
    ],
    [
      'Docker answers',
      {},
      answered,
      'k3s',
      'cluster: k3s in a container through testcontainers (a Docker engine answered at unix:///var/run/docker.sock)',
    ],
    [
      'Docker answers without the k3s image (it could not be pulled)',
      { DOCKER_HOST: 'unix:///tmp/podman.sock' },
      { ...answered, endpoint: 'unix:///tmp/podman.sock', k3sImagePresent: false },
      'local',
      'cluster: the local control plane built by the project (a Docker engine answered at unix:///tmp/podman.sock, but the image rancher/k3s:v1.34.4-k3s1 is not in its local store)',
    ],
    [
      'Docker answers but is switched off',
      { K8S_LISTENER_NO_DOCKER: '1' },
      answered,
      'local',
      'cluster: the local control plane built by the project (K8S_LISTENER_NO_DOCKER=1)',
    ],
    [
      'Docker does not answer',
      { DOCKER_HOST: 'tcp://10.0.0.1:2375' },
      { answered: false, why: 'tcp://10.0.0.1:2375 did not answer /_ping (connect ECONNREFUSED)' },
      'local',
      'cluster: the local control plane built by the project (no Docker engine: tcp://10.0.0.1:2375 did not answer /_ping (connect ECONNREFUSED))',
    ],
  ])('%s', (_name, env, docker, kind, reason) => {
    const choice = chooseCluster(env, docker);
    expect(choice.kind).toBe(kind);
    expect(choice.reason).toBe(reason);
    expect(choice.reason).not.toContain('\n');
  });
});

describe('dockerEndpoints', () => {
  it('uses DOCKER_HOST alone when set, else the usual sockets', () => {
    expect(dockerEndpoints({ DOCKER_HOST: 'unix:///tmp/d.sock' }, '/home/me', 1000)).toEqual([
      { kind: 'unix', socketPath: '/tmp/d.sock', uri: 'unix:///tmp/d.sock' },
    ]);
    expect(dockerEndpoints({ DOCKER_HOST: 'tcp://docker:2376' }, '/home/me', 1000)).toEqual([
      { kind: 'tcp', host: 'docker', port: 2376, uri: 'tcp://docker:2376' },
    ]);
    expect(dockerEndpoints({ DOCKER_HOST: 'ssh://me@host' }, '/home/me', 1000)).toBe(
      'DOCKER_HOST=ssh://me@host is neither unix:// nor tcp://host:port',
    );
    const sockets = dockerEndpoints({ XDG_RUNTIME_DIR: '/run/user/1000' }, '/home/me', 1000);
    expect(Array.isArray(sockets) && sockets.map((e) => e.uri)).toEqual([
      'unix:///var/run/docker.sock',
      'unix:///run/user/1000/docker.sock',
      'unix:///home/me/.docker/run/docker.sock',
      'unix:///home/me/.docker/desktop/docker.sock',
    ]);
  });
});

describe('probeDocker', () => {
  let dir: string;
  let server: Server;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'k8s-listener-docker-probe-'));
    // Only the probe's requests are answered here, as an engine does: /_ping, and the inspection
    // of one image held locally (any other is not there).
    server = createServer((request, response) => {
      const known = request.url === '/_ping' || request.url === '/images/held/k3s:1/json';
      response.writeHead(known ? 200 : 404).end('OK');
    });
    await new Promise<void>((resolve) => server.listen(join(dir, 'docker.sock'), resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('finds an engine on a socket that answers, and says why when none does', async () => {
    const socket = join(dir, 'docker.sock');
    expect(
      await probeDocker({ DOCKER_HOST: `unix://${socket}`, K8S_LISTENER_K3S_IMAGE: 'held/k3s:1' }),
    ).toEqual({
      answered: true,
      endpoint: `unix://${socket}`,
      k3sImage: 'held/k3s:1',
      k3sImagePresent: true,
    });
    expect(await probeDocker({ DOCKER_HOST: `unix://${socket}` })).toEqual({
      answered: true,
      endpoint: `unix://${socket}`,
      k3sImage: 'rancher/k3s:v1.34.4-k3s1',
      k3sImagePresent: false,
    });
    expect(await probeDocker({ DOCKER_HOST: `unix://${socket}`, K8S_LISTENER_NO_DOCKER: '1' })).toEqual({
      answered: false,
      why: 'K8S_LISTENER_NO_DOCKER=1',
    });
    const missing = await probeDocker({ DOCKER_HOST: `unix://${join(dir, 'absent.sock')}` });
    expect(missing).toEqual({
      answered: false,
      why: `DOCKER_HOST=unix://${join(dir, 'absent.sock')} names no socket`,
    });
    expect(await probeDocker({ DOCKER_HOST: 'tcp://127.0.0.1:1' })).toEqual({
      answered: false,
      why: 'tcp://127.0.0.1:1 did not answer /_ping (connect ECONNREFUSED 127.0.0.1:1)',
    });
  });

  it('loads no module of testcontainers when no engine answers', async () => {
    const provider = new URL('../../cluster/provider.ts', import.meta.url).href;
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); loaded.push(r.url); return r; } });
      const { probeDocker } = await import(${JSON.stringify(provider)});
      const { chooseCluster } = await import(${JSON.stringify(new URL('../../cluster/clusterChoice.ts', import.meta.url).href)});
      const env = { DOCKER_HOST: 'unix:///nonexistent/docker.sock' };
      const choice = chooseCluster(env, await probeDocker(env));
      console.log(JSON.stringify({ kind: choice.kind, count: loaded.length, docker: loaded.filter((u) => /testcontainers|dockerode|docker-modem/.test(u)) }));
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
    const result = JSON.parse(stdout) as { kind: string; count: number; docker: string[] };
    expect(result.kind).toBe('local');
    // The hook saw the provider's own imports, so an import of testcontainers would have shown.
    expect(result.count).toBeGreaterThan(3);
    expect(result.docker).toEqual([]);
  });
});
