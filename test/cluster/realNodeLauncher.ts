// A real node beside the local control plane: containerd with runc and a CNI bridge, a kubelet and
// kube-proxy of the same Kubernetes build, CoreDNS as the cluster's DNS, and a local OCI registry
// the node pulls from — so that what the agent renders actually runs. Its bridge, iptables chains,
// nftables table and kubelet port are the machine's, so one real node runs on a machine at a time
// (a lock), and test/cluster/node/host.sh takes away everything it added, also after a run that was
// killed.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { access, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { RenderConfigInput } from '../../src/render/index.ts';

const execFileAsync = promisify(execFile);

export const REAL_NODE_NAME = 'real-node';
/** Label and NoSchedule taint of the real node: only pods that ask for it run there. */
export const REAL_NODE_LABEL = 'k8s-listener.test/real-node';
export const NODE_GATEWAY = '10.244.0.1';
const POD_CIDR = '10.244.0.0/24';
const DNS_SERVICE_IP = '10.0.0.10';
/** Held while a real node runs: one per machine. */
export const REAL_NODE_LOCK_DIR = '/run/k8s-listener-real-node';

/** Namespace annotations (PodNodeSelector, PodTolerationRestriction) that put its pods on the real node. */
export const REAL_NODE_NAMESPACE_ANNOTATIONS: Readonly<Record<string, string>> = {
  'scheduler.alpha.kubernetes.io/node-selector': `${REAL_NODE_LABEL}=true`,
  'scheduler.alpha.kubernetes.io/defaultTolerations': JSON.stringify([
    { key: REAL_NODE_LABEL, operator: 'Exists', effect: 'NoSchedule' },
  ]),
};

/** The images pushed to the node's registry, each named by digest. */
export type NodeImages = Readonly<Record<string, string>>;

/** An image of the node's registry by name (postgres, redis, probe-app, crash-app, …): its reference by digest. */
export function image(node: { readonly images: NodeImages }, name: string): string {
  const reference = node.images[name];
  if (!reference) throw new Error(`the real node's registry has no image ${name}`);
  return reference;
}

/** Render settings that run the agent's data stores from the node's images, as their own uids. */
export function realNodeRender(node: { readonly images: NodeImages }): RenderConfigInput {
  return {
    database: { image: image(node, 'postgres'), runAsUser: 999 },
    kvstore: { image: image(node, 'redis'), runAsUser: 998 },
  };
}

export interface RealNode {
  readonly registry: string;
  readonly images: NodeImages;
  stop(): Promise<void>;
}

/** What the API server the node joins offers it (a subset of the local cluster's admin client). */
export interface NodeApi {
  request(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }>;
  ensure(path: string, body: unknown): Promise<void>;
}

export interface RealNodeContext {
  readonly nodeBinDir: string;
  readonly runDir: string;
  readonly pkiDir: string;
  readonly kubeconfigPath: string;
  readonly apiserverPort: number;
  readonly api: NodeApi;
  /** Starts a long-running component, logged and stopped with the cluster's others. */
  readonly launch: (name: string, command: string, args: readonly string[]) => Promise<void>;
  readonly freePort: () => Promise<number>;
  readonly waitFor: (what: string, check: () => Promise<boolean>) => Promise<void>;
  readonly log: (line: string) => void;
}

export class RealNodeUnavailable extends Error {
  override readonly name = 'RealNodeUnavailable';
  readonly code = 'REAL_NODE_UNAVAILABLE';
}

const nodeDir = new URL('./node/', import.meta.url).pathname;

/** Why this machine cannot run a real node, or undefined when it can. One line, naming what is missing. */
export async function realNodeMissing(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `a real node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'a real node needs root (containerd, the kubelet and iptables)';
  const filesystems = await readFile('/proc/filesystems', 'utf8').catch(() => '');
  if (!/\boverlay\b/.test(filesystems)) return 'the kernel has no overlay filesystem (containerd snapshots)';
  const tools = [
    'iptables',
    'iptables-save',
    'nft',
    'ipset',
    'unshare',
    'nsenter',
    'ip',
    'buildah',
    'mmdebstrap',
  ];
  for (const tool of tools) {
    const found = await execFileAsync('sh', ['-c', `command -v ${tool}`]).then(
      () => true,
      () => false,
    );
    if (!found)
      return `${tool} is missing (.ci/run installs it: apt-get install iptables nftables ipset buildah mmdebstrap)`;
  }
  // pgvector for the node's PostgreSQL image is built against it (test/cluster/node/images.sh).
  if (!existsSync('/usr/lib/postgresql/15/bin/pg_config'))
    return 'PostgreSQL 15 server headers are missing (.ci/run installs them: apt-get install postgresql-server-dev-15)';
  if (!existsSync('/proc/sys/net/bridge')) {
    await execFileAsync('modprobe', ['br_netfilter']).catch(() => undefined);
    if (!existsSync('/proc/sys/net/bridge'))
      return 'bridge netfilter is missing (modprobe br_netfilter failed): Services cannot reach pods on a bridge';
  }
  return undefined;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function hostScript(action: 'up' | 'down', runDir: string): Promise<string> {
  const { stdout } = await execFileAsync('bash', [join(nodeDir, 'host.sh'), action, runDir]);
  return stdout.trim();
}

/** Takes the machine's one real node, cleaning up after a holder that died without doing so. */
async function acquireLock(runDir: string): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await mkdir(REAL_NODE_LOCK_DIR);
      await writeFile(join(REAL_NODE_LOCK_DIR, 'owner'), `${process.pid} ${runDir}\n`);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = await readFile(join(REAL_NODE_LOCK_DIR, 'owner'), 'utf8').catch(() => '');
    const [pid, staleRun] = owner.trim().split(' ');
    if (pid && pidAlive(Number(pid)))
      throw new RealNodeUnavailable(
        `the machine's real node is in use by process ${pid} (${REAL_NODE_LOCK_DIR})`,
      );
    if (staleRun) await hostScript('down', staleRun).catch(() => undefined);
    await rm(REAL_NODE_LOCK_DIR, { recursive: true, force: true });
  }
  throw new RealNodeUnavailable(`could not take ${REAL_NODE_LOCK_DIR}`);
}

async function releaseLock(): Promise<void> {
  const owner = await readFile(join(REAL_NODE_LOCK_DIR, 'owner'), 'utf8').catch(() => '');
  if (owner.startsWith(`${process.pid} `)) await rm(REAL_NODE_LOCK_DIR, { recursive: true, force: true });
}

export interface PodRelay {
  /** `host:port` on the node's bridge, where the pods reach the server. */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * Makes a server of this machine that listens on 127.0.0.1:`port` reachable from the real node's
 * pods: a relay on the bridge's address (the server itself stays on loopback). Any process of the
 * machine may open one while the node runs (a test, for its emulator).
 */
export async function exposeToPods(port: number): Promise<PodRelay> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, NODE_GATEWAY, () => resolve());
  });
  return {
    address: `${NODE_GATEWAY}:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function containerdConfig(run: string, nodeBin: string, pause: string): string {
  return `version = 3
root = "${run}/containerd/root"
state = "${run}/containerd/state"
# Each of these would take a path of the machine's own (/opt/containerd, /var/run/nri) or is unused.
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.nri.v1.nri",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.snapshotter.v1.zfs",
]
[grpc]
  address = "${run}/containerd/containerd.sock"
[ttrpc]
  address = "${run}/containerd/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "${pause}"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "${run}/containerd/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  # Root here lacks CAP_SYS_RESOURCE: lowering an OOM score adjustment fails every sandbox.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["${nodeBin}"]
    conf_dir = "${run}/cni/net.d"
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "${nodeBin}/runc"
        SystemdCgroup = false
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

function cniConfig(run: string): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'k8s-listener',
      plugins: [
        {
          type: 'bridge',
          bridge: 'k8sl0',
          isGateway: true,
          // No masquerade: pod traffic has nowhere to go but this machine (host.sh's guard).
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: `${run}/cni/ipam`,
            ranges: [[{ subnet: POD_CIDR, gateway: NODE_GATEWAY }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

function kubeletConfig(run: string, pki: string, healthzPort: number, runtime: string): string {
  return JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: NODE_GATEWAY,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: join(pki, 'ca.crt') },
      },
      authorization: { mode: 'Webhook' },
      containerRuntimeEndpoint: `unix://${runtime}`,
      cgroupDriver: 'cgroupfs',
      failSwapOn: false,
      clusterDNS: [DNS_SERVICE_IP],
      clusterDomain: 'cluster.local',
      resolvConf: '',
      makeIPTablesUtilChains: false,
      serializeImagePulls: false,
      maxPods: 40,
      podLogsDir: join(run, 'kubelet', 'pod-logs'),
      volumePluginDir: join(run, 'kubelet', 'volume-plugins'),
      // The machine's disk is shared with everything else: evict and collect images only when it is all but full.
      evictionHard: {
        'memory.available': '100Mi',
        'nodefs.available': '1%',
        'imagefs.available': '1%',
        'nodefs.inodesFree': '1%',
      },
      imageGCHighThresholdPercent: 99,
      imageGCLowThresholdPercent: 98,
      registerWithTaints: [{ key: REAL_NODE_LABEL, value: 'true', effect: 'NoSchedule' }],
    },
    null,
    2,
  );
}

function kubeProxyConfig(kubeconfig: string, healthzPort: number, metricsPort: number): string {
  return JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig },
      hostnameOverride: REAL_NODE_NAME,
      // nftables, in a table of its own: kube-router writes iptables' whole filter table back from
      // a copy it read before its sync, which brought back a Service's "no endpoints" REJECT that
      // kube-proxy had just removed (or dropped one it had just added), and kube-proxy, which
      // rewrites its rules only on a change or hourly, left it so: a Service whose pods were Ready
      // could refuse connections for the rest of a suite (test/integration/node/service-proxy).
      mode: 'nftables',
      clusterCIDR: '10.244.0.0/16',
      healthzBindAddress: `127.0.0.1:${healthzPort}`,
      metricsBindAddress: `127.0.0.1:${metricsPort}`,
      // NodePorts only on the bridge's address, never on the machine's own interfaces.
      nodePortAddresses: [`${NODE_GATEWAY}/32`],
      // Leave the conntrack table's limits of the machine as they are.
      conntrack: {
        maxPerCore: 0,
        min: 0,
        tcpEstablishedTimeout: '0s',
        tcpCloseWaitTimeout: '0s',
      },
    },
    null,
    2,
  );
}

async function pushImages(nodeBin: string, registry: string): Promise<NodeImages> {
  const child = spawn('bash', [join(nodeDir, 'images.sh'), nodeBin, registry], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`test/cluster/node/images.sh failed with exit code ${code}`);
  const images: Record<string, string> = {};
  for (const line of stdout.trim().split('\n')) {
    const [name, reference] = line.split(' ');
    if (name && reference) images[name] = reference;
  }
  return images;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nodeReady(node: unknown): boolean {
  const conditions = isRecord(node) && isRecord(node.status) ? node.status.conditions : undefined;
  return (
    Array.isArray(conditions) &&
    conditions.some((c) => isRecord(c) && c.type === 'Ready' && c.status === 'True')
  );
}

/** CoreDNS as the cluster's DNS: a pod on the real node serving cluster.local, with nothing upstream. */
async function startCoreDns(api: NodeApi, image: string): Promise<void> {
  const ns = 'kube-system';
  const labels = { 'k8s-app': 'kube-dns' };
  await api.ensure(`/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'coredns', namespace: ns },
  });
  await api.ensure('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'system:coredns' },
    rules: [
      { apiGroups: [''], resources: ['services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
    ],
  });
  await api.ensure('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'system:coredns' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
    subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: ns }],
  });
  await api.ensure(`/api/v1/namespaces/${ns}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'coredns', namespace: ns },
    data: {
      // No forward plugin: there is no resolver beyond the cluster to ask.
      Corefile: `.:1053 {
    errors
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
}
`,
    },
  });
  await api.ensure(`/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'coredns', namespace: ns, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: 'coredns',
          dnsPolicy: 'Default',
          nodeSelector: { [REAL_NODE_LABEL]: 'true' },
          tolerations: [{ key: REAL_NODE_LABEL, operator: 'Exists', effect: 'NoSchedule' }],
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65534,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'coredns',
              // The image's entrypoint reads /etc/coredns/Corefile.
              image,
              ports: [
                { name: 'dns', containerPort: 1053, protocol: 'UDP' },
                { name: 'dns-tcp', containerPort: 1053, protocol: 'TCP' },
              ],
              readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
              resources: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
            },
          ],
          volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
        },
      },
    },
  });
  await api.ensure(`/api/v1/namespaces/${ns}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'kube-dns', namespace: ns, labels },
    spec: {
      clusterIP: DNS_SERVICE_IP,
      selector: labels,
      ports: [
        { name: 'dns', port: 53, targetPort: 1053, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, targetPort: 1053, protocol: 'TCP' },
      ],
    },
  });
}

export async function startRealNode(context: RealNodeContext): Promise<RealNode> {
  const { runDir: run, nodeBinDir: nodeBin, api, log } = context;
  await acquireLock(run);
  let apiRelay: PodRelay | undefined;
  // If the runner is killed outright, nothing of the node may stay on the machine; the reaper
  // acts only while the lock is still this runner's, never on a later run's node.
  const owner = `${process.pid} `;
  const reaper = spawn(
    'sh',
    [
      '-c',
      `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; grep -q '^${owner}' '${REAL_NODE_LOCK_DIR}/owner' 2>/dev/null && { bash '${join(nodeDir, 'host.sh')}' down '${run}'; rm -rf '${REAL_NODE_LOCK_DIR}'; }`,
    ],
    { stdio: 'ignore', detached: true },
  );
  reaper.unref();
  const stop = async () => {
    reaper.kill('SIGKILL');
    await apiRelay?.close();
    await hostScript('down', run).catch((error: unknown) => log(`real node cleanup: ${String(error)}`));
    await releaseLock();
  };
  try {
    const registryPort = await context.freePort();
    const registry = `127.0.0.1:${registryPort}`;
    const cache =
      process.env.K8S_LISTENER_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'k8s-listener');
    await mkdir(join(run, 'registry'), { recursive: true });
    await writeFile(
      join(run, 'registry', 'config.yml'),
      JSON.stringify({
        version: 0.1,
        log: { level: 'warn', accesslog: { disabled: true } },
        // Kept in the cache: an image pushed once is there for every later run.
        storage: { filesystem: { rootdirectory: join(cache, 'node-registry') }, delete: { enabled: true } },
        http: { addr: registry },
      }),
    );
    await context.launch('registry', join(nodeBin, 'registry'), [
      'serve',
      join(run, 'registry', 'config.yml'),
    ]);
    await context.waitFor('the node registry', async () => (await fetch(`http://${registry}/v2/`)).ok);
    const images = await pushImages(nodeBin, registry);
    const pause = images.pause;
    const coredns = images.coredns;
    if (!pause || !coredns) throw new Error('images.sh pushed no pause or coredns image');
    log(`node registry at ${registry} with ${Object.keys(images).join(', ')}`);

    const holder = Number(await hostScript('up', run));
    const inNode = (binary: string, args: readonly string[]) =>
      ['--target', String(holder), '--mount', '--', join(nodeBin, binary), ...args] as const;

    await mkdir(join(run, 'cni', 'net.d'), { recursive: true });
    await writeFile(join(run, 'cni', 'net.d', '10-k8s-listener.conflist'), cniConfig(run));
    const hosts = join(run, 'containerd', 'certs.d', registry);
    await mkdir(hosts, { recursive: true });
    await writeFile(
      join(hosts, 'hosts.toml'),
      `server = "http://${registry}"\n[host."http://${registry}"]\n  capabilities = ["pull", "resolve"]\n`,
    );
    await writeFile(join(run, 'containerd', 'config.toml'), containerdConfig(run, nodeBin, pause));
    const socket = join(run, 'containerd', 'containerd.sock');
    await context.launch(
      'containerd',
      'nsenter',
      inNode('containerd', ['--config', join(run, 'containerd', 'config.toml')]),
    );
    await context.waitFor('containerd', async () => {
      await access(socket);
      return true;
    });

    await mkdir(join(run, 'kubelet'), { recursive: true });
    await writeFile(
      join(run, 'kubelet', 'config.json'),
      kubeletConfig(run, context.pkiDir, await context.freePort(), socket),
    );
    await context.launch(
      'kubelet',
      'nsenter',
      inNode('kubelet', [
        `--config=${join(run, 'kubelet', 'config.json')}`,
        `--kubeconfig=${context.kubeconfigPath}`,
        `--root-dir=${join(run, 'kubelet', 'root')}`,
        `--cert-dir=${join(run, 'kubelet', 'pki')}`,
        `--hostname-override=${REAL_NODE_NAME}`,
        `--node-ip=${NODE_GATEWAY}`,
        `--node-labels=${REAL_NODE_LABEL}=true`,
      ]),
    );
    await writeFile(
      join(run, 'kube-proxy.json'),
      kubeProxyConfig(context.kubeconfigPath, await context.freePort(), await context.freePort()),
    );
    await context.launch('kube-proxy', join(nodeBin, 'kube-proxy'), [
      `--config=${join(run, 'kube-proxy.json')}`,
    ]);

    // Pods reach the API server as in-cluster clients do, through the `kubernetes` Service, whose
    // endpoint is the relay to the loopback-only API server.
    apiRelay = await exposeToPods(context.apiserverPort);
    await api.ensure('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kubernetes',
        namespace: 'default',
        labels: {
          'kubernetes.io/service-name': 'kubernetes',
          'endpointslice.kubernetes.io/managed-by': 'k8s-listener.test',
        },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [NODE_GATEWAY], conditions: { ready: true } }],
      ports: [{ name: 'https', port: context.apiserverPort, protocol: 'TCP' }],
    });

    await context.waitFor('the real node Ready', async () => {
      const { json } = await api.request('GET', `/api/v1/nodes/${REAL_NODE_NAME}`);
      return nodeReady(json);
    });
    // NetworkPolicies enforced on the node (it needs the Node object the kubelet registers): kube-router's firewall alone (iptables and ipsets;
    // the nftables queue kube-network-policies needs is missing on these machines). v2.1.0 has
    // reported security flaws; it runs only here, in a cluster that listens on loopback.
    await context.launch('kube-router', join(nodeBin, 'kube-router'), [
      `--kubeconfig=${context.kubeconfigPath}`,
      `--hostname-override=${REAL_NODE_NAME}`,
      '--run-firewall=true',
      '--run-router=false',
      '--run-service-proxy=false',
      '--metrics-port=0',
      `--health-port=${await context.freePort()}`,
    ]);

    await startCoreDns(api, coredns);
    await context.waitFor('CoreDNS ready', async () => {
      const { json } = await api.request('GET', '/apis/apps/v1/namespaces/kube-system/deployments/coredns');
      const status = isRecord(json) && isRecord(json.status) ? json.status : {};
      return status.readyReplicas === 1;
    });
    log(`real node ${REAL_NODE_NAME} Ready (pods ${POD_CIDR}, DNS ${DNS_SERVICE_IP})`);
    return { registry, images, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
