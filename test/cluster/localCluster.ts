// Starts a real, local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) with kwok-managed fake Nodes and a tiny volume provisioner, all on 127.0.0.1;
// optionally a real node (realNodeLauncher.ts) where pods run.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, open, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Agent, fetch } from 'undici';
import { eventually, GiveUp } from '../support/eventually.ts';
import { type RealNode, RealNodeUnavailable, startRealNode } from './realNodeLauncher.ts';

const execFileAsync = promisify(execFile);

export const STORAGE_CLASS = 'standard';
const PROVISIONER = 'k8s-listener.test/hostpath';
const FAKE_NODE_COUNT = 3;

export interface LocalClusterOptions {
  /** Directory holding the binaries built by test/cluster/build.sh. */
  readonly binDir: string;
  /** Where the run's certificates, data and logs go; a fresh temp dir by default. */
  readonly runDir?: string;
  readonly log?: (line: string) => void;
  readonly startTimeoutMs?: number;
  /**
   * Pods each fake Node takes (cpu and memory grow with it). Default 250; the sync benchmark's
   * thousands of deployments need more, or their pods stay Pending and no rollout completes.
   */
  readonly podsPerNode?: number;
  /**
   * The controller manager's request rate to the API server (its `--kube-api-qps`; burst twice
   * that). Default: the component's own, 20 — at which it brings up some 5 pods a second, so the
   * sync benchmark at N = 3,000 raises it.
   */
  readonly controllerManagerQps?: number | undefined;
  /** Also start a real node (test/cluster/realNodeLauncher.ts) from the binaries of build-node.sh in this directory. */
  readonly realNodeBinDir?: string | undefined;
}

export interface LocalCluster {
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly runDir: string;
  /** etcd's client URL (plain HTTP on loopback), for tests that act on etcd itself (compaction). */
  readonly etcdUrl: string;
  /** Stops kube-apiserver alone (etcd and the other components keep running), for fault tests. */
  stopApiServer(): Promise<void>;
  /** Starts it again with the same flags and port; resolves once it is ready. */
  startApiServer(): Promise<void>;
  /** The real node, when one was asked for and could be had. */
  readonly realNode: RealNode | undefined;
  /** Why a real node asked for could not be had (another run holds the machine's one). */
  readonly realNodeMissing: string | undefined;
  stop(): Promise<void>;
}

interface Component {
  readonly name: string;
  readonly process: ChildProcess;
  readonly logPath: string;
}

export class ClusterStartError extends Error {
  override readonly name = 'ClusterStartError';
  readonly code = 'CLUSTER_START';
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function openssl(args: readonly string[], cwd: string): Promise<void> {
  await execFileAsync('openssl', args, { cwd });
}

/** A CA, the apiserver's serving certificate, an admin client certificate and SA signing keys. */
async function writeCertificates(dir: string): Promise<void> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(
    [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '3650',
      '-subj',
      '/CN=k8s-listener-test-ca',
    ],
    dir,
  );
  const sign = async (name: string, subject: string, extensions: string) => {
    await openssl(['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
    await writeFile(join(dir, `${name}.ext`), extensions);
    await openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        `${name}.crt`,
        '-days',
        '365',
        '-extfile',
        `${name}.ext`,
      ],
      dir,
    );
  };
  await sign(
    'apiserver',
    '/CN=kube-apiserver',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1\nextendedKeyUsage=serverAuth\n',
  );
  await sign('admin', '/O=system:masters/CN=kubernetes-admin', 'extendedKeyUsage=clientAuth\n');
  await openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  await openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
}

async function writeKubeconfig(pkiDir: string, outDir: string, server: string): Promise<string> {
  const b64 = async (file: string) => (await readFile(join(pkiDir, file))).toString('base64');
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server, 'certificate-authority-data': await b64('ca.crt') } }],
    users: [
      {
        name: 'admin',
        user: {
          'client-certificate-data': await b64('admin.crt'),
          'client-key-data': await b64('admin.key'),
        },
      },
    ],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'admin' } }],
    'current-context': 'local',
  };
  const path = join(outDir, 'kubeconfig');
  // JSON is valid YAML, and kubectl and client libraries read it as such.
  await writeFile(path, JSON.stringify(kubeconfig, null, 2), { mode: 0o600 });
  return path;
}

/** Minimal typed access to the API server with the admin certificate, for start-up and the provisioner. */
class AdminApi {
  readonly server: string;
  readonly #agent: Agent;

  constructor(server: string, ca: string, cert: string, key: string) {
    this.server = server;
    this.#agent = new Agent({ connect: { ca, cert, key }, connections: 4 });
  }

  async request(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const response = await fetch(`${this.server}${path}`, {
      method,
      dispatcher: this.#agent,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // /readyz answers plain text.
    }
    return { status: response.status, json };
  }

  async ensure(path: string, body: unknown): Promise<void> {
    const { status, json } = await this.request('POST', path, body);
    if (status >= 300 && status !== 409)
      throw new ClusterStartError(`POST ${path}: ${status} ${JSON.stringify(json)}`);
  }

  /** Each line of a streamed response (a watch), until it ends or `signal` aborts. */
  async *lines(path: string, signal: AbortSignal): AsyncGenerator<string> {
    const response = await fetch(`${this.server}${path}`, { dispatcher: this.#agent, signal });
    if (response.status !== 200 || !response.body) {
      await response.body?.cancel();
      throw new ClusterStartError(`GET ${path}: ${response.status}`);
    }
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body) {
      buffered += decoder.decode(chunk, { stream: true });
      let end = buffered.indexOf('\n');
      while (end >= 0) {
        yield buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        end = buffered.indexOf('\n');
      }
    }
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function field(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) current = isRecord(current) ? current[key] : undefined;
  return current;
}

/** Polls `check` until it holds (a check that throws is not up yet); a component gone ends it at once. */
async function waitFor(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  exitedComponent?: () => string | undefined,
): Promise<void> {
  try {
    await eventually(
      what,
      async () => {
        const exited = exitedComponent?.();
        if (exited !== undefined) throw new GiveUp(exited);
        return (await check()) || undefined;
      },
      timeoutMs,
    );
  } catch (error) {
    throw new ClusterStartError(error instanceof Error ? error.message : String(error), { cause: error });
  }
}

function fakeNode(name: string, podsPerNode: number): unknown {
  // The default node is a fixed size that tests rely on (a pod asking more cpu than 64 never
  // schedules); a larger one has room for the largest default pod on every slot (500m, 1Gi).
  const large = podsPerNode > 250;
  const resources = {
    cpu: large ? String(podsPerNode) : '64',
    memory: large ? `${podsPerNode * 2}Gi` : '256Gi',
    // Every rendered container asks for ephemeral storage: a node without it schedules nothing.
    'ephemeral-storage': large ? `${podsPerNode * 4}Gi` : '1Ti',
    pods: String(podsPerNode),
  };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        type: 'kwok',
        'topology.kubernetes.io/zone': `zone-${name.at(-1)}`,
      },
    },
    status: {
      allocatable: resources,
      capacity: resources,
      nodeInfo: { kubeletVersion: 'fake', operatingSystem: 'linux', architecture: 'amd64' },
    },
  };
}

/**
 * Gives each Pending claim of the default class a hostPath PersistentVolume pre-bound to it, so
 * StatefulSets with volume claim templates become ready; the PV binder in kube-controller-manager
 * completes the binding. A list, then a watch from it, as a real provisioner: a list of every
 * claim twice a second had been a growing share of the API server's time at N = 10,000 (2,000
 * claims, 284 ms a list).
 */
async function provisionClaims(api: AdminApi, volumeDir: string, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const { status, json } = await api.request('GET', '/api/v1/persistentvolumeclaims');
      const items = field(json, 'items');
      const resourceVersion = field(json, 'metadata', 'resourceVersion');
      if (status !== 200 || !Array.isArray(items) || typeof resourceVersion !== 'string')
        throw new ClusterStartError(`listing claims: ${status}`);
      for (const claim of items) await provisionClaim(api, volumeDir, claim);
      const watch = `/api/v1/persistentvolumeclaims?watch=1&timeoutSeconds=300&resourceVersion=${resourceVersion}`;
      for await (const line of api.lines(watch, signal)) {
        const event: unknown = JSON.parse(line);
        if (field(event, 'type') === 'ERROR') break; // expired: list again
        await provisionClaim(api, volumeDir, field(event, 'object'));
      }
    } catch {
      // The API server is starting or stopping: list again shortly.
    }
    await new Promise((resolve) => setTimeout(resolve, 500).unref());
  }
}

async function provisionClaim(api: AdminApi, volumeDir: string, claim: unknown): Promise<void> {
  if (field(claim, 'status', 'phase') !== 'Pending' || field(claim, 'spec', 'volumeName')) return;
  if ((field(claim, 'spec', 'storageClassName') ?? STORAGE_CLASS) !== STORAGE_CLASS) return;
  const uid = String(field(claim, 'metadata', 'uid'));
  const namespace = String(field(claim, 'metadata', 'namespace'));
  const name = String(field(claim, 'metadata', 'name'));
  const size = field(claim, 'spec', 'resources', 'requests', 'storage') ?? '1Gi';
  // A real node mounts it into a container that runs as its image's own non-root uid (a real
  // provisioner's volume would be given the pod's fsGroup; a hostPath directory is not).
  const path = join(volumeDir, uid);
  await mkdir(path, { recursive: true });
  await chmod(path, 0o777);
  await api.ensure('/api/v1/persistentvolumes', {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `pv-${uid}`, annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER } },
    spec: {
      capacity: { storage: size },
      accessModes: field(claim, 'spec', 'accessModes') ?? ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: STORAGE_CLASS,
      hostPath: { path, type: 'DirectoryOrCreate' },
      claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace, name, uid },
    },
  });
}

export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const log = options.log ?? (() => {});
  const timeoutMs = options.startTimeoutMs ?? 120_000;
  const runDir = options.runDir ?? (await mkdtemp(join(tmpdir(), 'k8s-listener-cluster-')));
  const pki = join(runDir, 'pki');
  await mkdir(pki, { recursive: true });
  await mkdir(join(runDir, 'logs'), { recursive: true });
  const components: Component[] = [];
  const reapers: ChildProcess[] = [];
  const provisioner = new AbortController();
  let api: AdminApi | undefined;
  let realNode: RealNode | undefined;
  let realNodeMissing: string | undefined;
  let stopped = false;

  const killAll = (signal: NodeJS.Signals) => {
    for (const component of components) {
      const pid = component.process.pid;
      if (pid !== undefined && component.process.exitCode === null) {
        try {
          process.kill(-pid, signal);
        } catch {
          // Already gone.
        }
      }
    }
  };
  // A crash or Ctrl-C of the test runner must not leave etcd or the apiserver behind.
  const onExit = () => {
    killAll('SIGKILL');
    if (!options.runDir) rmSync(runDir, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    onExit();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const reaper of reapers) reaper.kill('SIGKILL');
    provisioner.abort();
    await api?.close();
    // Stop in reverse order of dependency: clients of the apiserver first, etcd last.
    for (const component of [...components].reverse()) {
      const pid = component.process.pid;
      // One ended by a signal has no exit code, and its 'exit' has been emitted: not waited for.
      const gone = component.process.exitCode !== null || component.process.signalCode !== null;
      if (pid === undefined || gone) continue;
      const exited = new Promise<void>((resolve) => component.process.once('exit', () => resolve()));
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        continue;
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Exited meanwhile.
        }
      }, 5_000);
      await exited;
      clearTimeout(timer);
    }
    // Its daemons are stopped: what they left (pods, chains, the bridge) goes now.
    await realNode?.stop();
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (!options.runDir) rmSync(runDir, { recursive: true, force: true });
  };

  const launch = async (name: string, args: readonly string[], command = join(options.binDir, name)) => {
    const logPath = join(runDir, 'logs', `${name}.log`);
    const logFile = await open(logPath, 'a');
    // Own process group, so that stop() reaches any children it forks.
    const child = spawn(command, args, {
      stdio: ['ignore', logFile.fd, logFile.fd],
      detached: true,
    });
    child.once('exit', () => void logFile.close().catch(() => {}));
    components.push({ name, process: child, logPath });
    // Exit handlers cannot run when the runner is killed outright: a reaper outlives it and takes
    // the component's process group down once the runner is gone.
    const cleanup = options.runDir ? '' : `; rm -rf '${runDir}'`;
    const reaper = spawn(
      'sh',
      [
        '-c',
        `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -s KILL -- -${child.pid} 2>/dev/null${cleanup}`,
      ],
      {
        stdio: 'ignore',
        detached: true,
      },
    );
    reaper.unref();
    reapers.push(reaper);
    log(`started ${name} (pid ${child.pid})`);
  };
  const exitedComponent = (): string | undefined => {
    const exited = components.find((component) => component.process.exitCode !== null);
    return exited && `${exited.name} exited with code ${exited.process.exitCode}`;
  };

  try {
    await writeCertificates(pki);
    const [etcdClient, etcdPeer, apiserverPort] = [await freePort(), await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    await launch('etcd', [
      '--name=local',
      `--data-dir=${join(runDir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=local=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
      '--quota-backend-bytes=4294967296',
    ]);
    await waitFor('etcd', timeoutMs, async () => (await fetch(`${etcdUrl}/health`)).ok, exitedComponent);

    const server = `https://127.0.0.1:${apiserverPort}`;
    const apiserverArgs = [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiserverPort}`,
      `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
      `--client-ca-file=${join(pki, 'ca.crt')}`,
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      '--authorization-mode=RBAC',
      // Namespaces annotated for it put their pods on the real node (and its taint's toleration).
      '--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction',
      // What it presents to a kubelet (logs, exec) when a real node runs.
      `--kubelet-client-certificate=${join(pki, 'admin.crt')}`,
      `--kubelet-client-key=${join(pki, 'admin.key')}`,
      // The node's name resolves nowhere: reach its kubelet by its address.
      '--kubelet-preferred-address-types=InternalIP',
      // Room for the Services of bench/sync.ts (three copies of a fleet of up to 3,000 deployments).
      '--service-cluster-ip-range=10.0.0.0/16',
      // The master Endpoints may not hold a loopback address; nothing in-cluster dials it here.
      '--endpoint-reconciler-type=none',
      '--enable-priority-and-fairness=false',
      '--profiling=false',
      '--audit-log-maxage=0',
    ];
    await launch('kube-apiserver', apiserverArgs);
    const [ca, cert, key] = await Promise.all(
      ['ca.crt', 'admin.crt', 'admin.key'].map((f) => readFile(join(pki, f), 'utf8')),
    );
    api = new AdminApi(server, ca as string, cert as string, key as string);
    const admin = api;
    await waitFor(
      'kube-apiserver /readyz',
      timeoutMs,
      async () => (await admin.request('GET', '/readyz')).status === 200,
      exitedComponent,
    );
    const kubeconfigPath = await writeKubeconfig(pki, runDir, server);

    // Both talk to the apiserver as admin and serve their own port on loopback only.
    const componentFlags = async () => [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${await freePort()}`,
      '--leader-elect=false',
    ];
    await launch('kube-controller-manager', [
      ...(await componentFlags()),
      // No HPA controller: without a metrics server it can only fail each HPA's every sync, with a
      // warning Event each time (at N = 10,000, 3,333 HPAs: a growing share of the API server).
      '--controllers=*,-cloud-node-lifecycle-controller,-service-lb-controller,-node-route-controller,-node-ipam-controller,-horizontal-pod-autoscaler-controller',
      `--service-account-private-key-file=${join(pki, 'sa.key')}`,
      `--root-ca-file=${join(pki, 'ca.crt')}`,
      '--use-service-account-credentials=false',
      '--concurrent-deployment-syncs=10',
      '--concurrent-statefulset-syncs=10',
      '--concurrent-gc-syncs=20',
      ...(options.controllerManagerQps === undefined
        ? []
        : [
            `--kube-api-qps=${options.controllerManagerQps}`,
            `--kube-api-burst=${options.controllerManagerQps * 2}`,
          ]),
    ]);
    await launch('kube-scheduler', await componentFlags());
    await launch('kwok', [
      `--kubeconfig=${kubeconfigPath}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--node-lease-duration-seconds=40',
      `--server-address=127.0.0.1:${await freePort()}`,
    ]);

    await admin.ensure('/apis/storage.k8s.io/v1/storageclasses', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: {
        name: STORAGE_CLASS,
        annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
      },
      provisioner: PROVISIONER,
      volumeBindingMode: 'Immediate',
      reclaimPolicy: 'Delete',
    });
    for (let i = 0; i < FAKE_NODE_COUNT; i++)
      await admin.ensure('/api/v1/nodes', fakeNode(`kwok-node-${i}`, options.podsPerNode ?? 250));
    const volumeDir = join(runDir, 'volumes');
    void provisionClaims(admin, volumeDir, provisioner.signal);

    await waitFor(
      'fake nodes Ready',
      timeoutMs,
      async () => {
        const { json } = await admin.request('GET', '/api/v1/nodes');
        const items = field(json, 'items');
        if (!Array.isArray(items) || items.length < FAKE_NODE_COUNT) return false;
        return items.every((node) => {
          const conditions = field(node, 'status', 'conditions');
          return (
            Array.isArray(conditions) &&
            conditions.some((c) => field(c, 'type') === 'Ready' && field(c, 'status') === 'True')
          );
        });
      },
      exitedComponent,
    );
    await waitFor(
      'default ServiceAccount',
      timeoutMs,
      async () => {
        return (
          (await admin.request('GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200
        );
      },
      exitedComponent,
    );
    if (options.realNodeBinDir) {
      try {
        realNode = await startRealNode({
          nodeBinDir: options.realNodeBinDir,
          runDir: join(runDir, 'node'),
          pkiDir: pki,
          kubeconfigPath,
          apiserverPort,
          api: admin,
          launch: (name, command, args) => launch(name, args, command),
          freePort,
          waitFor: (what, check) => waitFor(what, timeoutMs, check, exitedComponent),
          log,
        });
      } catch (error) {
        // Another run holds the machine's one real node: this cluster goes on without one.
        if (!(error instanceof RealNodeUnavailable)) throw error;
        realNodeMissing = error.message;
        log(`real node: none (${error.message})`);
      }
    }
    log(`cluster ready at ${server}; kubeconfig ${kubeconfigPath}`);
    const stopApiServer = async () => {
      for (const component of components) {
        const pid = component.process.pid;
        const gone = component.process.exitCode !== null || component.process.signalCode !== null;
        if (component.name !== 'kube-apiserver' || pid === undefined || gone) continue;
        const exited = new Promise<void>((resolve) => component.process.once('exit', () => resolve()));
        process.kill(-pid, 'SIGKILL');
        await exited;
      }
    };
    const startApiServer = async () => {
      await launch('kube-apiserver', apiserverArgs);
      await waitFor('kube-apiserver /readyz', timeoutMs, async () => {
        return (await admin.request('GET', '/readyz')).status === 200;
      });
    };
    return {
      kubeconfigPath,
      server,
      runDir,
      etcdUrl,
      stopApiServer,
      startApiServer,
      realNode,
      realNodeMissing,
      stop,
    };
  } catch (error) {
    const tails = await Promise.all(
      components.map(async (c) => {
        const text = existsSync(c.logPath) ? await readFile(c.logPath, 'utf8') : '';
        return `--- ${c.name} (last lines of ${c.logPath})\n${text.split('\n').slice(-15).join('\n')}`;
      }),
    );
    const detail = error instanceof Error ? error.message : String(error);
    await stop();
    throw new ClusterStartError(`local cluster failed to start: ${detail}\n${tails.join('\n')}`, {
      cause: error,
    });
  }
}

/**
 * Runs a build script of this folder (a no-op when its binaries are cached) and returns the bin
 * directory it prints last. Its progress goes to this process's stderr: a first build takes
 * minutes and should say what it is doing.
 */
async function runBuildScript(name: string): Promise<string> {
  const script = new URL(`./${name}`, import.meta.url).pathname;
  const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new ClusterStartError(`test/cluster/${name} failed with exit code ${code}`);
  const binDir = stdout.trim().split('\n').at(-1);
  if (!binDir) throw new ClusterStartError(`${name} printed no bin directory`);
  return binDir;
}

/** The control plane's binaries (build.sh). */
export function ensureClusterBinaries(): Promise<string> {
  return runBuildScript('build.sh');
}

/** The real node's binaries (build-node.sh). */
export function ensureNodeBinaries(): Promise<string> {
  return runBuildScript('build-node.sh');
}

// `node test/cluster/localCluster.ts` starts a cluster and keeps it up until Ctrl-C.
// `--real-node` adds a real node (root only).
if (import.meta.url === `file://${process.argv[1]}`) {
  const binDir = await ensureClusterBinaries();
  const realNodeBinDir = process.argv.includes('--real-node') ? await ensureNodeBinaries() : undefined;
  const cluster = await startLocalCluster({ binDir, realNodeBinDir, log: (line) => console.error(line) });
  console.log(`export KUBECONFIG=${cluster.kubeconfigPath}`);
  console.error('cluster running; Ctrl-C to stop');
  await new Promise(() => {});
}
