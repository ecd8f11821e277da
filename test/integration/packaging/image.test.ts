// The container image, built from the repository's Dockerfile (test/image/build.sh, buildah) and
// run as the chart's pod runs it, through testcontainers over podman's Docker-compatible API:
// the chart's user, read-only root filesystem, dropped capabilities, no privilege escalation and
// memory limit; the chart's rendered config.yaml and API-key Secret mounted where the chart mounts
// them; in-cluster credentials exactly as the kubelet provides them (a TokenRequest token of the
// chart's ServiceAccount, the cluster CA and namespace under
// /var/run/secrets/kubernetes.io/serviceaccount, KUBERNETES_SERVICE_HOST/PORT). It becomes ready,
// rolls a deployment out to DEPLOYED, and on SIGTERM exits 0 within the chart's grace period,
// releasing its Lease. Its size and layers are the figures docs/image.md and the README state.
import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import type { StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { app, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import {
  buildImage,
  missingContainerTools,
  type PodmanService,
  podman,
  startPodmanService,
} from '../../support/containerEngine.ts';
import { docBlock, shellCommands } from '../../support/docBlocks.ts';
import { eventually } from '../../support/eventually.ts';

const run = promisify(execFile);
const ROOT = new URL('../../..', import.meta.url).pathname;
const CHART = new URL('../../../charts/k8s-listener', import.meta.url).pathname;
const TAG = 'k8s-listener:dev';
const RELEASE = 'agent';
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

const missing = missingContainerTools();
const skipReason =
  missing.length > 0
    ? `${missing.join(', ')} not installed (as root: apt-get install buildah podman runc mmdebstrap; .ci/run does)`
    : process.getuid?.() !== 0
      ? 'not root (the base is made by mmdebstrap --mode=root, and Secret files are chowned to uid 0 as the kubelet owns them)'
      : undefined;
if (skipReason !== undefined) console.log(`image test skipped: ${skipReason}`);

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: { template: { spec: PodSpec } };
}
interface PodSpec {
  serviceAccountName: string;
  terminationGracePeriodSeconds: number;
  securityContext: { runAsUser: number; runAsGroup: number; fsGroup: number };
  containers: {
    args: string[];
    resources: { limits?: { memory?: string; cpu?: string } };
    securityContext: {
      allowPrivilegeEscalation: boolean;
      readOnlyRootFilesystem: boolean;
      capabilities: { drop: string[] };
    };
    volumeMounts: { name: string; mountPath: string }[];
  }[];
  volumes: {
    name: string;
    configMap?: { name: string; items?: KeyToPath[] };
    secret?: { secretName: string; defaultMode: number; items?: KeyToPath[] };
  }[];
}
interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

/** A free port on 127.0.0.1: the container shares the host's network, so its probes take one. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Kubernetes quantities of the chart's limits: Mi and Gi, as values.yaml writes them. */
function bytesOf(quantity: string): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!match) throw new Error(`unexpected memory quantity ${quantity}`);
  return Number(match[1]) * 1024 ** (match[2] === 'Gi' ? 3 : 2);
}

/**
 * The files of a ConfigMap or Secret volume, as the kubelet projects them: every key under its own
 * name, or, when the volume lists `items`, only those keys, each at its `path` (and `mode`).
 */
function projectedFiles(
  volume: string,
  data: Record<string, string>,
  items: readonly KeyToPath[] | undefined,
): { path: string; value: string; mode?: number }[] {
  if (items === undefined) return Object.entries(data).map(([path, value]) => ({ path, value }));
  return items.map(({ key, path, mode }) => {
    const value = data[key];
    // The kubelet refuses to start a pod whose volume names a key its source lacks.
    if (value === undefined) throw new Error(`volume ${volume}: no key ${key} in its source`);
    return mode === undefined ? { path, value } : { path, value, mode };
  });
}

/** What docs/image.md and the README say of the image, read from them so a stale figure fails. */
async function documentedImage(): Promise<{
  totalMB: number;
  totalMiB: number;
  baseMB: number;
  agentLayerMB: number;
  layers: number;
  readme: { totalMB: number; agentLayerMB: number };
}> {
  const page = await readFile(join(ROOT, 'docs/image.md'), 'utf8');
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const size =
    /^\| Size \| (\d+) MB \((\d+) MiB\) uncompressed.*? base (\d+) MB.*?the agent's layer (\d+) MB/m.exec(
      page,
    );
  const layers = /^\| Layers \| (\d+): /m.exec(page);
  const brief = /The image is (\d+) MB\s+uncompressed \([^)]*the agent's layer (\d+) MB\)/.exec(readme);
  if (!size || !layers || !brief)
    throw new Error(
      'docs/image.md (Size, Layers) or README.md no longer states the image as this test reads it',
    );
  return {
    totalMB: Number(size[1]),
    totalMiB: Number(size[2]),
    baseMB: Number(size[3]),
    agentLayerMB: Number(size[4]),
    layers: Number(layers[1]),
    readme: { totalMB: Number(brief[1]), agentLayerMB: Number(brief[2]) },
  };
}

/** Within 5 % of the figure stated: a rebuild moves the size a little, a stale figure more. */
function near(measured: number, stated: number): boolean {
  return Math.abs(measured - stated) <= 0.05 * stated;
}

describe.skipIf(skipReason !== undefined)('the image, run as the chart’s pod runs it', () => {
  let world: World;
  let service: PodmanService;
  let work: string;
  let releaseNs: string;
  let probePort: number;
  let manifests: Manifest[];
  let buildReport = '';

  beforeAll(async () => {
    const kubeconfigPath = inject('kubeconfigPath');
    const binDir = inject('clusterBinDir');
    // The command of docs/image.md, as a reader runs it.
    const command = await docBlock('docs/image.md', 'Build it without Docker');
    expect(shellCommands(command)).toEqual(['npm run image']);
    const built = await buildImage(command);
    expect(built.tag).toBe(TAG);
    buildReport = built.report;
    work = await mkdtemp(join(tmpdir(), 'k8s-listener-image-'));
    service = await startPodmanService(join(work, 'podman.sock'));
    // testcontainers reads these when first used: podman's socket, and no Ryuk (its image
    // cannot be pulled here; the test stops its container itself).
    process.env.DOCKER_HOST = service.dockerHost;
    process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';

    world = await startWorld(kubeconfigPath, { namespaces: 1, apiKey: 'image-test-api-key' });
    releaseNs = uniqueNamespace('image');
    await createNamespace(world.kube, releaseNs);
    probePort = await freePort();
    const valuesPath = join(work, 'values.yaml');
    await writeFile(
      valuesPath,
      stringify({
        listenerId: world.listenerId,
        // A Secret key named unlike the file the agent reads: the volume's items map one to the other.
        controlPlane: {
          url: world.emulator.url,
          apiKey: world.apiKey,
          existingSecret: { key: 'control-plane-token' },
        },
        namespaces: [...world.namespaces],
        // The chart's pod is scheduled on a simulated node, where nothing runs: the container is it.
        replicaCount: 1,
        metrics: { port: probePort },
        // The container shares the host's network: its probes listen on loopback only.
        config: { probes: { host: '127.0.0.1' } },
      }),
    );
    const helmEnv = {
      ...process.env,
      HELM_CACHE_HOME: join(work, 'helm-cache'),
      HELM_CONFIG_HOME: join(work, 'helm-config'),
      HELM_DATA_HOME: join(work, 'helm-data'),
    };
    await run(
      join(binDir, 'helm'),
      ['install', RELEASE, CHART, '-n', releaseNs, '-f', valuesPath, '--kubeconfig', kubeconfigPath],
      { env: helmEnv },
    );
    const { stdout } = await run(
      join(binDir, 'helm'),
      ['get', 'manifest', RELEASE, '-n', releaseNs, '--kubeconfig', kubeconfigPath],
      { env: helmEnv, maxBuffer: 16 * 1024 * 1024 },
    );
    manifests = parseAllDocuments(stdout)
      .map((doc) => doc.toJSON() as Manifest | null)
      .filter((m): m is Manifest => m !== null);
  }, 1_200_000);

  afterAll(async () => {
    await service?.stop();
    await world?.close();
    if (releaseNs) await world?.kube.core.deleteNamespace({ name: releaseNs }).catch(() => undefined);
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('has the size and layers docs/image.md and the README state', async () => {
    expect(buildReport).toMatch(/size: \d+ MiB/);
    const [image] = JSON.parse(await podman('image', 'inspect', TAG)) as {
      Size: number;
      RootFS: { Layers: string[] };
    }[];
    // Each step, newest first: steps that change only the configuration add no bytes.
    const steps = JSON.parse(await podman('history', '--format', 'json', TAG)) as { size: number }[];
    const layers = steps.map((step) => step.size).filter((bytes) => bytes > 0);
    const measured = {
      totalMB: (image?.Size ?? 0) / 1e6,
      totalMiB: (image?.Size ?? 0) / 1024 ** 2,
      baseMB: (layers.at(-1) ?? 0) / 1e6,
      agentLayerMB: (layers[0] ?? 0) / 1e6,
      layers: image?.RootFS.Layers.length ?? 0,
    };
    console.log(`image ${TAG}: ${JSON.stringify(measured)}`);
    const stated = await documentedImage();
    // The runtime stage adds one layer of files to the base, not a build tree.
    expect(measured.layers).toBe(stated.layers);
    expect(layers).toHaveLength(stated.layers);
    const off = (['totalMB', 'totalMiB', 'baseMB', 'agentLayerMB'] as const)
      .filter((figure) => !near(measured[figure], stated[figure]))
      .map((figure) => `${figure}: measured ${measured[figure].toFixed(1)}, stated ${stated[figure]}`);
    expect(off, 'update docs/image.md and the README').toEqual([]);
    expect(stated.readme).toEqual({ totalMB: stated.totalMB, agentLayerMB: stated.agentLayerMB });
  });

  // One container, started as the kubelet would start the chart's pod; each `it` below checks one
  // thing of it, in order (the last stops it).
  describe('started as the kubelet starts the chart’s pod', () => {
    let pod: PodSpec;
    let container: PodSpec['containers'][number];
    let started: StartedTestContainer | undefined;
    let id = '';
    // The agent logs to stdout; the engine keeps it (podman's k8s-file driver).
    const logs = () => podman('logs', id);
    const holder = async () =>
      (
        await world.kube.config
          .makeApiClient(k8s.CoordinationV1Api)
          .readNamespacedLease({ name: 'k8s-listener', namespace: releaseNs })
      ).spec?.holderIdentity ?? '';

    beforeAll(async () => {
      const deployment = manifests.find((m) => m.kind === 'Deployment');
      const spec = deployment?.spec?.template.spec;
      const first = spec?.containers[0];
      if (!spec || !first) throw new Error('the chart renders no Deployment');
      pod = spec;
      container = first;
      const { fsGroup } = pod.securityContext;

      // The kubelet's view of the pod's volumes, as files on the host bind-mounted read-only.
      const mounts: { source: string; target: string; mode: 'ro' }[] = [];
      const token = await world.kube.core.createNamespacedServiceAccountToken({
        name: pod.serviceAccountName,
        namespace: releaseNs,
        body: { spec: { expirationSeconds: 3600, audiences: [] } },
      });
      const saDir = join(work, 'serviceaccount');
      await mkdir(saDir);
      const ca = Buffer.from(world.kube.config.getCurrentCluster()?.caData ?? '', 'base64').toString();
      expect(ca).toContain('BEGIN CERTIFICATE');
      await writeFile(join(saDir, 'ca.crt'), ca, { mode: 0o644 });
      await writeFile(join(saDir, 'namespace'), releaseNs, { mode: 0o644 });
      await writeFile(join(saDir, 'token'), token.status?.token ?? '');
      // Projected and Secret volumes: root-owned, group fsGroup, as the kubelet sets them.
      await chown(join(saDir, 'token'), 0, fsGroup);
      await chmod(join(saDir, 'token'), 0o440);
      mounts.push({ source: saDir, target: SERVICE_ACCOUNT_DIR, mode: 'ro' });
      for (const mount of container.volumeMounts) {
        const volume = pod.volumes.find((v) => v.name === mount.name);
        const dir = join(work, `volume-${mount.name}`);
        await mkdir(dir);
        if (volume?.configMap) {
          const configMap = manifests.find(
            (m) => m.kind === 'ConfigMap' && m.metadata.name === volume.configMap?.name,
          );
          for (const file of projectedFiles(mount.name, configMap?.data ?? {}, volume.configMap.items)) {
            await mkdir(dirname(join(dir, file.path)), { recursive: true });
            await writeFile(join(dir, file.path), file.value, { mode: file.mode ?? 0o644 });
          }
        } else if (volume?.secret) {
          const secret = manifests.find(
            (m) => m.kind === 'Secret' && m.metadata.name === volume.secret?.secretName,
          );
          for (const file of projectedFiles(mount.name, secret?.data ?? {}, volume.secret.items)) {
            const path = join(dir, file.path);
            await mkdir(dirname(path), { recursive: true });
            await writeFile(path, Buffer.from(file.value, 'base64'));
            await chown(path, 0, fsGroup);
            await chmod(path, file.mode ?? volume.secret.defaultMode);
          }
        } else {
          throw new Error(`volume ${mount.name}: neither a ConfigMap nor a Secret`);
        }
        mounts.push({ source: dir, target: mount.mountPath, mode: 'ro' });
      }

      const server = new URL(world.kube.config.getCurrentCluster()?.server ?? '');
      const { GenericContainer } = await import('testcontainers');
      // testcontainers has no setter for a read-only root filesystem; its host config has the field.
      class PodContainer extends GenericContainer {
        withReadOnlyRootFilesystem(): this {
          this.hostConfig.ReadonlyRootfs = true;
          return this;
        }
      }
      const image = new PodContainer(TAG)
        .withNetworkMode('host')
        .withUser(`${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`)
        .withCommand(container.args)
        .withEnvironment({
          KUBERNETES_SERVICE_HOST: server.hostname,
          KUBERNETES_SERVICE_PORT: server.port,
          POD_NAME: 'agent-image-0',
          POD_NAMESPACE: releaseNs,
        })
        .withBindMounts(mounts)
        .withStartupTimeout(60_000);
      if (container.securityContext.readOnlyRootFilesystem) image.withReadOnlyRootFilesystem();
      if (container.securityContext.capabilities.drop.includes('ALL')) image.withDroppedCapabilities('ALL');
      if (!container.securityContext.allowPrivilegeEscalation) image.withSecurityOpt('no-new-privileges');
      const memory = container.resources.limits?.memory;
      if (memory) image.withResourcesQuota({ memory: bytesOf(memory) / 1024 ** 3 });
      started = await image.start();
      id = started.getId();
    });

    afterAll(async () => {
      if (id) await podman('rm', '--force', id).catch(() => undefined);
    });

    it('reads the configuration the chart renders: probes on its metrics port, the API key from its Secret', () => {
      const config = parse(manifests.find((m) => m.kind === 'ConfigMap')?.data?.['config.yaml'] ?? '') as {
        controlPlane: { apiKeyFile: string };
        probes: { port: number };
      };
      expect(config.probes.port).toBe(probePort);
      expect(config.controlPlane.apiKeyFile).toBe('/var/run/secrets/k8s-listener/api-key');
    });

    it('runs as the pod spec says: its user, a read-only root filesystem, its memory limit', async () => {
      // What the engine was asked for is what the chart's pod spec says.
      const inspect = JSON.parse(await podman('inspect', id)) as {
        HostConfig: { ReadonlyRootfs: boolean; Memory: number; CapDrop: string[] };
        Config: { User: string };
      }[];
      expect(inspect[0]?.HostConfig.ReadonlyRootfs).toBe(true);
      expect(inspect[0]?.Config.User).toBe('1000:1000');
      const memory = container.resources.limits?.memory;
      if (memory) expect(inspect[0]?.HostConfig.Memory).toBe(bytesOf(memory));
      const id0 = (await started?.exec(['id', '-u']))?.output.trim();
      expect(id0).toBe(String(pod.securityContext.runAsUser));
      const write = await started?.exec(['sh', '-c', 'touch /app/x 2>&1; echo $?']);
      expect(write?.output).toMatch(/Read-only file system/);
    });

    it('becomes ready with in-cluster credentials, found by the agent itself', async () => {
      await eventually(
        '/readyz 200',
        async () => {
          const response = await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => undefined);
          return response?.status === 200 ? true : undefined;
        },
        60_000,
        250,
      ).catch(async (error: unknown) => {
        throw new Error(`${String(error)}\n--- container log ---\n${await logs()}`);
      });
      // The in-cluster path, picked by the agent itself (no kubeconfig anywhere in the container).
      expect(await logs()).toMatch(/"source":"in-cluster"[^\n]*"kubernetes API server"/);
    });

    it('leads and rolls a deployment out to DEPLOYED', async () => {
      const created = await world.client.createDeployment(
        app(world, 'from-image', world.namespaces[0] ?? ''),
      );
      await waitForRevision(world, created, 'DEPLOYED', 90_000).catch(async (error: unknown) => {
        throw new Error(`${String(error)}\n--- container log ---\n${await logs()}`);
      });
      expect(await holder()).toBe('agent-image-0');
    });

    it('exits 0 on SIGTERM within the grace period, releasing its Lease', async () => {
      // SIGTERM, as the kubelet sends it; SIGKILL only after the grace period.
      const grace = pod.terminationGracePeriodSeconds;
      const stopping = Date.now();
      await started?.stop({ timeout: grace * 1000, remove: false });
      const elapsed = Date.now() - stopping;
      const state = JSON.parse(await podman('inspect', '--format', '{{json .State}}', id)) as {
        ExitCode: number;
      };
      const output = await logs();
      expect(state.ExitCode, output).toBe(0);
      expect(elapsed).toBeLessThan(grace * 1000);
      expect(output).toMatch(/"signal":"SIGTERM"[^\n]*"signal received"/);
      expect(await holder()).toBe('');
    });
  });
});
