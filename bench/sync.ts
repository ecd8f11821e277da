// Sync benchmark: the real agent process applying N deployments to a fresh local cluster, against
// the floor (a bare loop of server-side applies at the agent's concurrency on one keep-alive pool)
// and against `kubectl apply --server-side` per namespace; then a steady state, change → applied
// latency, request counts and memory. The targets (bench/README.md, "Targets") are printed with pass/fail;
// --strict exits 1 when one is missed.
// Run: npm run bench:sync -- --deployments 100 [--order agent,floor,kubectl | --runs 3 | --agent-only] [--until-applied] [--restart] [--keep-cluster] [--phase-timeout-min 180] [--concurrency 4] [--poll-interval-ms 2000] [--strict] [--cpu-prof] [--heap-snapshot]
//   [--from-source] [--memory-limit-mib 384] [--agent-node-options=...] [--agent-env=...] [--controller-qps 100]
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import pino from 'pino';
import type { Deployment, DeploymentCreate, Listener, Revision } from '../src/controlplane/schemas/index.ts';
import { startEmulator } from '../src/emulator/server.ts';
import { KubeClient } from '../src/kube/kubeClient.ts';
import { ANNOTATION_CREATE_ONLY } from '../src/objects/ownership.ts';
import { type KubeObject, RenderConfig, renderDeployment } from '../src/render/index.ts';
import { sleep } from '../src/sleep.ts';
import { AGENT_VERSION } from '../src/version.ts';
import { ensureClusterBinaries, startLocalCluster } from '../test/cluster/localCluster.ts';
import { ControlPlaneTestClient } from '../test/support/controlPlaneTestClient.ts';
import { IMAGE_ENV } from '../test/support/imageRuntime.ts';
import { loadAverage, machine, writeRecord } from './record.ts';

const execFileAsync = promisify(execFile);
const SOURCE_MAIN = new URL('../src/cli/main.ts', import.meta.url).pathname;
const BUILT_MAIN = new URL('../dist/cli/main.js', import.meta.url).pathname;
const ROOT = new URL('..', import.meta.url).pathname;

const { values: flags } = parseArgs({
  options: {
    deployments: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '4' },
    'poll-interval-ms': { type: 'string', default: '2000' },
    patches: { type: 'string', default: '50' },
    'log-level': { type: 'string', default: 'info' },
    'cpu-prof': { type: 'boolean', default: false },
    // A heap snapshot of the agent once every figure is taken (it stops the agent's event loop and
    // raises its RSS, so it is taken after the memory reading).
    'heap-snapshot': { type: 'boolean', default: false },
    strict: { type: 'boolean', default: false },
    note: { type: 'string', default: '' },
    // Node flags for the agent process only, e.g. '--max-old-space-size=128' (space-separated).
    'agent-node-options': { type: 'string', default: '' },
    // Environment for the agent process only, over the image's, e.g. 'MALLOC_ARENA_MAX=1' (space-separated).
    'agent-env': { type: 'string', default: '' },
    // As the image runs it: the compiled JavaScript (built first), not the TypeScript sources.
    'from-source': { type: 'boolean', default: false },
    // The chart's default memory limit: the agent runs in a memory cgroup of this size where one
    // can be made (cgroup v1 here), so that Node sizes its heap as in the pod. 0: no cgroup.
    'memory-limit-mib': { type: 'string', default: '384' },
    // The local cluster's controller manager request rate (burst twice that); unset, its own
    // default (qps 20, burst 30) brings up some 5 pods a second: at N = 3,000 most of an hour
    // before every revision is DEPLOYED.
    'controller-qps': { type: 'string' },
    // The order of the three clients, each on the same cluster after the ones before it (the
    // first meets a cold API server, the later ones the pods of the earlier ones).
    order: { type: 'string', default: 'agent,floor,kubectl' },
    // The agent alone: no floor or kubectl copies (no ratios), as for N = 10,000.
    'agent-only': { type: 'boolean', default: false },
    // Stop the agent's phase once every object is applied and the rollouts have had a few minutes
    // (no DEPLOYED wait, steady state or changes): at N = 10,000 the two-core cluster brings the
    // pods up over hours, while the agent's memory is what the run is for.
    'until-applied': { type: 'boolean', default: false },
    // Day two: after the agent's phase, a new agent process on the same cluster (an upgrade, a
    // failover), timed until it has looked at every deployment; its peak RSS and writes.
    restart: { type: 'boolean', default: false },
    // The local cluster's directory (etcd data, each component's log) kept in the run's directory,
    // so that a long run that fails can be read from the API server's and etcd's side too.
    'keep-cluster': { type: 'boolean', default: false },
    // This many runs, each a fresh cluster, the order rotated so that each client goes first once
    // in every three; prints the medians (bench/syncRuns.ts).
    runs: { type: 'string', default: '1' },
    // Set by --runs on each of its runs: the series they belong to (its start), for the medians.
    series: { type: 'string' },
    // Every wait's bound, in minutes (default N × 0.6 s, at least 2 minutes): a long N = 10,000
    // cold sync on a slow evening may need more.
    'phase-timeout-min': { type: 'string' },
  },
});
const N = Number(flags.deployments);
const MEMORY_LIMIT_MIB = Number(flags['memory-limit-mib']);
const MAIN = flags['from-source'] ? SOURCE_MAIN : BUILT_MAIN;
const CONCURRENCY = Number(flags.concurrency);
const POLL_MS = Number(flags['poll-interval-ms']);
const PATCHES = Number(flags.patches);
const CONTROLLER_QPS = flags['controller-qps'] === undefined ? undefined : Number(flags['controller-qps']);
if (![N, CONCURRENCY, POLL_MS, PATCHES, CONTROLLER_QPS ?? 1].every((n) => Number.isInteger(n) && n > 0)) {
  console.error(
    '--deployments, --concurrency, --poll-interval-ms, --patches and --controller-qps take positive whole numbers',
  );
  process.exit(2);
}
const PHASES = ['agent', 'floor', 'kubectl'] as const;
type Phase = (typeof PHASES)[number];
const ORDER: readonly Phase[] = flags['agent-only']
  ? ['agent']
  : (flags.order ?? '').split(',').filter((p): p is Phase => (PHASES as readonly string[]).includes(p));
if (ORDER.length !== new Set(ORDER).size || (!flags['agent-only'] && ORDER.length !== PHASES.length)) {
  console.error('--order takes agent, floor and kubectl, each once, comma-separated');
  process.exit(2);
}
const RUNS = Number(flags.runs);
if (RUNS > 1) {
  const { runRotated } = await import('./syncRuns.ts');
  process.exit(await runRotated(RUNS, process.argv.slice(2)));
}
// Every wait is bounded: a stuck phase fails the run instead of hanging it.
const PHASE_TIMEOUT_MS =
  flags['phase-timeout-min'] === undefined
    ? Math.max(120_000, N * 600)
    : Number(flags['phase-timeout-min']) * 60_000;
if (!(PHASE_TIMEOUT_MS > 0)) {
  console.error('--phase-timeout-min takes a positive number');
  process.exit(2);
}
/** With --until-applied: how long the rollouts run on after the last apply before the reading (3 min at N = 10,000). */
const SETTLE_AFTER_APPLIED_MS = Math.min(180_000, Math.max(10_000, N * 18));
const NAMESPACES = ['bench-a', 'bench-b', 'bench-c', 'bench-d'];
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete']);
const log = (line: string) => console.error(`[bench:sync ${new Date().toISOString().slice(11, 19)}] ${line}`);
const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 250) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** The benchmark's fleet: most with main + queue + secrets, a fifth with a database and a key-value store, some with sidecars and volumes. */
function fleetDeployment(i: number, listenerId: string): DeploymentCreate {
  const withQueue = i % 10 < 8;
  const withData = i % 5 === 0;
  const withSidecar = i % 7 === 3;
  return {
    name: `bench-${i}`,
    source: 'external_container',
    source_config: {
      listener_id: listenerId,
      listener_config: { k8s_namespace: NAMESPACES[i % NAMESPACES.length] },
      deployment_type: 'dev',
      resource_spec: {
        min_scale: 1,
        max_scale: i % 3 === 0 ? 3 : 1,
        cpu: 0.1,
        memory_mb: 128,
        ...(withQueue ? { queue_min_scale: 1, queue_max_scale: 1, queue_cpu: 0.1, queue_memory_mb: 64 } : {}),
        ...(withData ? { db_cpu: 0.1, db_memory_mb: 256, db_storage_gi: 1, kvstore_memory_mb: 64 } : {}),
        ...(withSidecar
          ? {
              volumes: [{ name: 'cache', emptyDir: { sizeLimit: '256Mi' } }],
              volume_mounts: [{ name: 'cache', mountPath: '/var/cache/app' }],
              sidecars: [
                {
                  name: 'log-shipper',
                  image: 'busybox:1.36',
                  args: ['tail', '-F', '/var/cache/app/app.log'],
                  resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '32Mi' } },
                  volumeMounts: [{ name: 'cache', mountPath: '/var/cache/app', readOnly: true }],
                },
              ],
            }
          : {}),
      },
    },
    source_revision_config: { image_uri: `registry.example.test/bench/app:1.0.${i}` },
    secrets: [
      { name: 'API_TOKEN', value: `bench-secret-${i}` },
      { name: 'WEBHOOK_KEY', value: `bench-webhook-${i}` },
    ],
  };
}

/** Prometheus text → samples (name, labels, value); enough for the agent's own exposition. */
interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1] ?? ''] = pair[2] ?? '';
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) });
  }
  return samples;
}
const total = (samples: Sample[], name: string, keep: (l: Record<string, string>) => boolean = () => true) =>
  samples.filter((s) => s.name === name && keep(s.labels)).reduce((sum, s) => sum + s.value, 0);
const byVerb = (samples: Sample[]) => {
  const verbs: Record<string, number> = {};
  for (const s of samples)
    if (s.name === 'k8s_listener_kube_requests_total')
      verbs[s.labels.verb ?? '?'] = (verbs[s.labels.verb ?? '?'] ?? 0) + s.value;
  return verbs;
};
const byKindAndVerb = (samples: Sample[]) => {
  const counts: Record<string, number> = {};
  for (const s of samples)
    if (s.name === 'k8s_listener_kube_requests_total' && s.value > 0) {
      const key = `${s.labels.kind ?? '?'} ${s.labels.verb ?? '?'}`;
      counts[key] = (counts[key] ?? 0) + s.value;
    }
  return counts;
};
const writesExceptLease = (samples: Sample[]) =>
  total(
    samples,
    'k8s_listener_kube_requests_total',
    (l) => WRITE_VERBS.has(l.verb ?? '') && l.kind !== 'Lease',
  );
const controlPlaneRequests = (samples: Sample[]) =>
  total(samples, 'k8s_listener_control_plane_requests_total');
const polls = (samples: Sample[]) => total(samples, 'k8s_listener_polls_total');

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** The pods of the agent's namespaces, counted a page at a time. */
async function countPods(): Promise<number> {
  let count = 0;
  for (const namespace of NAMESPACES)
    await admin.listPages('Pod', { namespace }, (items) => {
      count += items.length;
    });
  return count;
}

/** Applies every object with `workers` parallel loops over one client (one keep-alive pool). */
async function applyAll(kube: KubeClient, objects: readonly KubeObject[], workers: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < objects.length) {
        const object = objects[next++];
        if (object) await kube.apply(object, { force: true });
      }
    }),
  );
  return performance.now() - started;
}

/** The rendered objects of the fleet, moved to other namespaces (the floor's and kubectl's). */
function renderFleet(
  fleet: readonly { deployment: Deployment; revision: Revision | undefined }[],
  listener: Listener,
  namespaceOf: (original: string) => string,
  config: RenderConfig,
): KubeObject[] {
  const objects: KubeObject[] = [];
  const moved = {
    ...listener,
    compute_config: { ...listener.compute_config, k8s_namespaces: NAMESPACES.map(namespaceOf) },
  };
  for (const { deployment, revision } of fleet) {
    const copy = structuredClone(deployment);
    const original = copy.source_config.listener_config?.k8s_namespace ?? '';
    copy.source_config.listener_config = { k8s_namespace: namespaceOf(original) };
    const result = renderDeployment(
      { deployment: copy, revision, listener: moved, allowedNamespaces: undefined },
      config,
    );
    if (!result.ok) throw result.error;
    objects.push(...result.value.objects);
  }
  return objects;
}

interface AgentProcess {
  readonly child: ChildProcess;
  /** Everything the agent logged (a long run that fails is explained here). */
  readonly logPath: string;
  readonly metricsUrl: Promise<string>;
  readonly exited: Promise<number | null>;
}

function startAgentProcess(
  configPath: string,
  profileDir: string | undefined,
  snapshotDir: string | undefined,
  logPath: string,
): AgentProcess {
  const nodeFlags = [
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    ...(snapshotDir ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`] : []),
    ...(flags['agent-node-options'] ?? '').split(' ').filter(Boolean),
  ];
  const command = [process.execPath, ...nodeFlags, MAIN, 'run', '--config', configPath];
  // The image's environment (Dockerfile ENV; a unit test keeps the two the same) and the pod's.
  const env = {
    ...process.env,
    ...IMAGE_ENV,
    POD_NAME: 'bench-agent',
    POD_NAMESPACE: 'default',
    ...Object.fromEntries(
      (flags['agent-env'] ?? '')
        .split(' ')
        .filter(Boolean)
        .map((pair) => {
          const equals = pair.indexOf('=');
          return [pair.slice(0, equals), pair.slice(equals + 1)];
        }),
    ),
  };
  // In the cgroup: the shell moves itself there, then becomes the agent (same pid).
  const child = memoryCgroup
    ? spawn('sh', ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', memoryCgroup, ...command], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(command[0] as string, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logFile = createWriteStream(logPath);
  child.stdout?.on('data', (chunk: Buffer) => logFile.write(chunk));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    logFile.write(chunk);
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // 'close', not 'exit': the pipes may still hold the last lines when the process exits.
  child.once('close', () => logFile.end());
  const metricsUrl = new Promise<string>((resolve, reject) => {
    let pending = '';
    const onData = (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const match = /"probes":"(http:\/\/[^"]+)"/.exec(line);
        if (match) {
          resolve(`${match[1]}/metrics`);
          // The rest of the log is not needed; reading it keeps the pipe from filling.
          child.stdout?.off('data', onData);
          child.stdout?.resume();
        }
      }
    };
    child.stdout?.on('data', onData);
    void exited.then((code) => reject(new Error(`agent exited (${code}) before it started: ${stderr}`)));
  });
  return { child, logPath, metricsUrl, exited };
}

/**
 * The agent's metrics text. A failed read is tried again once a second later (an N = 10,000 run
 * ended on one ECONNRESET after 111 minutes); an agent that is gone fails the run with its exit
 * and where its log is.
 */
async function scrapeText(url: string, agent: AgentProcess | undefined): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await (await fetch(url)).text();
    } catch (error) {
      const child = agent?.child;
      if (child && (child.exitCode !== null || child.signalCode !== null))
        throw new Error(
          `the agent exited (code ${child.exitCode}, signal ${child.signalCode}); its log: ${agent?.logPath}`,
        );
      if (attempt >= 3)
        throw new Error(`reading ${url} failed ${attempt} times; the agent's log: ${agent?.logPath}`, {
          cause: error,
        });
      log(`reading the agent's metrics failed (${String(error)}); trying again`);
      await sleep(1_000);
    }
  }
}

/** Signals the agent to write a heap snapshot and waits until the file is complete (its size settles). */
async function takeHeapSnapshot(child: ChildProcess, dir: string): Promise<void> {
  child.kill('SIGUSR2');
  let lastSize = -1;
  await until(
    'the heap snapshot',
    async () => {
      const file = (await readdir(dir)).find((name) => name.endsWith('.heapsnapshot'));
      if (file === undefined) return undefined;
      const { size } = await stat(join(dir, file));
      const settled = size > 0 && size === lastSize;
      lastSize = size;
      return settled ? true : undefined;
    },
    120_000,
    1_000,
  );
  log(`heap snapshot written to ${dir}`);
}

/** A cgroup v1 memory controller limited to `mib`, or undefined (with the reason logged) when none can be made. */
async function makeMemoryCgroup(mib: number): Promise<string | undefined> {
  if (mib <= 0) return undefined;
  const dir = `/sys/fs/cgroup/memory/k8s-listener-bench-${process.pid}`;
  try {
    await mkdir(dir);
    await writeFile(join(dir, 'memory.limit_in_bytes'), String(mib * 2 ** 20));
    return dir;
  } catch (error) {
    log(`no memory cgroup (${(error as Error).message}): the agent runs without the pod's memory limit`);
    return undefined;
  }
}

async function stopAgent(agent: AgentProcess): Promise<void> {
  agent.child.kill('SIGTERM');
  const stopped = await Promise.race([agent.exited.then(() => true), sleep(30_000).then(() => false)]);
  if (!stopped) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
}

async function procStatus(
  pid: number,
): Promise<{ rssMiB: number; hwmMiB: number; rssFileMiB: number } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
    // RssFile: the binary's and libraries' pages; a memory limit reached evicts these first.
    return { rssMiB: kib('VmRSS') / 1024, hwmMiB: kib('VmHWM') / 1024, rssFileMiB: kib('RssFile') / 1024 };
  } catch {
    return undefined;
  }
}

/**
 * A process's counters from /proc/PID/stat: user + system CPU seconds (Linux clock ticks of
 * 1/100 s), and page faults that read from disk (majflt: a process at its memory limit re-reads
 * its own evicted code pages and stalls, without being killed).
 */
async function procStat(pid: number): Promise<{ cpuS: number; majorFaults: number } | undefined> {
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
    // After the command: state is field 3, majflt 12, utime 14 and stime 15 (1-based, as proc(5) counts).
    return { cpuS: (Number(fields[11]) + Number(fields[12])) / 100, majorFaults: Number(fields[9]) };
  } catch {
    return undefined;
  }
}

async function cpuSeconds(pid: number): Promise<number | undefined> {
  return (await procStat(pid))?.cpuS;
}

/** How often the memory cgroup's limit was hit so far (cgroup v1 memory.failcnt). */
async function limitHits(cgroup: string | undefined): Promise<number | undefined> {
  if (!cgroup) return undefined;
  return Number(await readFile(join(cgroup, 'memory.failcnt'), 'utf8').catch(() => Number.NaN));
}

// --- The run ---------------------------------------------------------------------------------
const runStarted = new Date();
const loadAtStart = loadAverage();
log(
  `N=${N}, concurrency ${CONCURRENCY}, poll interval ${POLL_MS} ms; load average ${loadAtStart
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
if (!flags['from-source']) {
  await execFileAsync('npm', ['run', '--silent', 'build'], { cwd: ROOT });
  log('built dist/ (the agent runs as the image runs it)');
}
const memoryCgroup = await makeMemoryCgroup(MEMORY_LIMIT_MIB);
if (memoryCgroup) log(`agent in a memory cgroup of ${MEMORY_LIMIT_MIB} MiB (the chart's limit)`);
const binDir = await ensureClusterBinaries();
const kubectl = join(binDir, 'kubectl');
// Room for every pod: the agent's, the floor's and kubectl's copies (about 2.2 pods a deployment each).
const workDir = await mkdtemp(join(tmpdir(), 'k8s-listener-bench-'));
const cluster = await startLocalCluster({
  binDir,
  ...(flags['keep-cluster'] ? { runDir: join(workDir, 'cluster') } : {}),
  podsPerNode: Math.max(250, Math.ceil((N * 3 * 2.5) / 3)),
  controllerManagerQps: CONTROLLER_QPS,
});
const emulator = await startEmulator({});
const client = new ControlPlaneTestClient({ baseUrl: emulator.url, logger: pino({ level: 'silent' }) });
const admin = await KubeClient.fromKubeconfig(cluster.kubeconfigPath, { logger: pino({ level: 'silent' }) });
if (flags['keep-cluster']) log(`cluster directory (kept): ${join(workDir, 'cluster')}`);
let agent: AgentProcess | undefined;
try {
  const floorNamespaces = NAMESPACES.map((n) => `floor-${n}`);
  const kubectlNamespaces = NAMESPACES.map((n) => `kubectl-${n}`);
  for (const name of [...NAMESPACES, ...floorNamespaces, ...kubectlNamespaces])
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as KubeObject, {
      force: true,
    });

  const listener = await client.createListener({
    compute_type: 'k8s',
    compute_id: 'bench',
    compute_config: { k8s_namespaces: NAMESPACES },
  });
  for (let i = 0; i < N; i++) await client.createDeployment(fleetDeployment(i, listener.id));
  const seeded = emulator
    .state()
    .deployments.map((d) => ({ deployment: d.deployment, revision: d.revisions.at(-1) }));
  const renderConfig = RenderConfig.parse({});
  const agentObjects = renderFleet(seeded, listener, (n) => n, renderConfig);
  const expectedApplies = agentObjects.filter(
    (o) => o.metadata.annotations?.[ANNOTATION_CREATE_ONLY] !== 'true',
  ).length;
  log(`seeded ${N} deployments: ${agentObjects.length} objects (${expectedApplies} by apply)`);

  const profileDir = flags['cpu-prof'] ? join(workDir, 'cpu-prof') : undefined;
  const snapshotDir = flags['heap-snapshot'] ? join(workDir, 'heap-snapshot') : undefined;

  // The agent, as operators run it: a process with a configuration file.
  const runAgent = async () => {
    const configPath = join(workDir, 'config.yaml');
    await writeFile(
      configPath,
      JSON.stringify({
        listenerId: listener.id,
        controlPlane: { baseUrl: emulator.url },
        kubeconfig: cluster.kubeconfigPath,
        agentNamespace: 'default',
        namespaces: NAMESPACES,
        probes: { host: '127.0.0.1', port: 0 },
        log: { level: flags['log-level'], format: 'json' },
        reconcile: { pollIntervalMs: POLL_MS, concurrency: CONCURRENCY },
      }),
    );
    if (snapshotDir) await mkdir(snapshotDir, { recursive: true });
    const started = performance.now();
    agent = startAgentProcess(configPath, profileDir, snapshotDir, join(workDir, 'agent.log'));
    const pid = agent.child.pid ?? 0;
    const metricsUrl = await agent.metricsUrl;
    // The process before any deployment: what the peak grows from.
    const atStart = await procStatus(pid);
    let peakHeapMiB = 0;
    let appliedSoFar = 0;
    // The longest event-loop stall (prom-client resets its delay monitor at each read, so each
    // scrape gives the worst since the one before): a leader stalled past its renew deadline
    // gives up its lease and exits.
    let longestStallS = 0;
    let minuteStallS = 0;
    let majorGcS = 0;
    const scrape = async (): Promise<Sample[]> => {
      const samples = parseMetrics(await scrapeText(metricsUrl, agent));
      peakHeapMiB = Math.max(
        peakHeapMiB,
        total(samples, 'k8s_listener_nodejs_heap_size_used_bytes') / 2 ** 20,
      );
      const stallS = total(samples, 'k8s_listener_nodejs_eventloop_lag_max_seconds');
      longestStallS = Math.max(longestStallS, stallS);
      minuteStallS = Math.max(minuteStallS, stallS);
      majorGcS = total(samples, 'k8s_listener_nodejs_gc_duration_seconds_sum', (l) => l.kind === 'major');
      appliedSoFar = total(samples, 'k8s_listener_objects_applied_total');
      return samples;
    };

    const deployedCount = () =>
      emulator.state().deployments.filter((d) => d.revisions.at(-1)?.status === 'DEPLOYED').length;
    // The last reading (metrics, then memory, then the heap snapshot, which raises RSS), and the stop.
    const readAndStop = async () => {
      const final = await scrape();
      const memory = await procStatus(pid);
      if (snapshotDir && agent) await takeHeapSnapshot(agent.child, snapshotDir);
      if (agent) await stopAgent(agent);
      agent = undefined;
      return { final, memory };
    };
    // A long cold sync says how far it is each minute (and, if the agent is killed, how far it got).
    const progress = setInterval(() => {
      void Promise.all([procStatus(pid), procStat(pid), limitHits(memoryCgroup)]).then(
        ([status, stat, hits]) => {
          log(
            `progress: ${Math.round(seconds(performance.now() - started))} s, ${appliedSoFar} of ${expectedApplies} objects applied, ${deployedCount()} of ${N} DEPLOYED; agent CPU ${stat?.cpuS} s; RSS ${status?.rssMiB.toFixed(0)} MiB (peak ${status?.hwmMiB.toFixed(0)}, files ${status?.rssFileMiB.toFixed(0)}), heap used peak ${peakHeapMiB.toFixed(0)} MiB; longest event-loop stall ${minuteStallS.toFixed(1)} s this minute (${longestStallS.toFixed(1)} s in all), major GC ${majorGcS.toFixed(0)} s; major page faults ${stat?.majorFaults}, memory limit hit ${hits ?? '-'} times; load ${loadAverage()[0]?.toFixed(1)}`,
          );
          minuteStallS = 0;
        },
      );
    }, 60_000);
    progress.unref();
    // Cold sync: every object applied (the agent's apply counter), then every revision DEPLOYED.
    await until(
      'every object applied',
      async () =>
        total(await scrape(), 'k8s_listener_objects_applied_total') >= expectedApplies ? true : undefined,
      PHASE_TIMEOUT_MS,
      500,
    );
    const appliedMs = performance.now() - started;
    const appliedCpuS = await cpuSeconds(pid);
    const appliedReconciles = total(await scrape(), 'controller_runtime_reconcile_total');
    log(
      `every object applied after ${seconds(appliedMs)} s (agent CPU ${appliedCpuS} s, ${appliedReconciles} reconciles)`,
    );
    if (flags['until-applied']) {
      // The rollouts go on (pods, status, reports) for a while; then the reading, without waiting
      // for every revision DEPLOYED.
      await sleep(SETTLE_AFTER_APPLIED_MS);
      clearInterval(progress);
      const podsAtReading = await countPods();
      log(
        `${deployedCount()} of ${N} DEPLOYED and ${podsAtReading} pods ${seconds(SETTLE_AFTER_APPLIED_MS)} s after the last apply`,
      );
      const { final, memory } = await readAndStop();
      return {
        appliedMs,
        appliedCpuS,
        appliedReconciles,
        deployedMs: undefined,
        deployedAtEnd: deployedCount(),
        podsAtReading,
        afterCold: final,
        live: undefined,
        steady: undefined,
        latency: undefined,
        final,
        memory,
        atStart,
        peakHeapMiB,
        longestStallS,
        majorGcS,
      };
    }
    // After the floor or kubectl, the controllers bring up their copies' pods before the agent's.
    await until(
      'every revision DEPLOYED',
      async () => (deployedCount() === N ? true : undefined),
      PHASE_TIMEOUT_MS * (ORDER.indexOf('agent') + 1),
      500,
    );
    const deployedMs = performance.now() - started;
    clearInterval(progress);
    const afterCold = await scrape();
    log(`every revision DEPLOYED after ${seconds(deployedMs)} s`);
    const live = (await admin.list('Deployment', { namespace: NAMESPACES[0] })).length;

    // Steady state: nothing changes for 5 poll cycles (after one cycle to let the last reports settle).
    const waitPolls = async (count: number, from: Sample[]) =>
      until(
        `${count} poll cycles`,
        async () => {
          const now = await scrape();
          return polls(now) - polls(from) >= count ? now : undefined;
        },
        (count + 2) * POLL_MS * 2 + 30_000,
        200,
      );
    const settled = await waitPolls(2, afterCold);
    const steadyEnd = await waitPolls(5, settled);
    const steadyCycles = polls(steadyEnd) - polls(settled);
    const steady = {
      cycles: steadyCycles,
      writesExceptLease: writesExceptLease(steadyEnd) - writesExceptLease(settled),
      leaseWrites:
        total(
          steadyEnd,
          'k8s_listener_kube_requests_total',
          (l) => l.kind === 'Lease' && WRITE_VERBS.has(l.verb ?? ''),
        ) -
        total(
          settled,
          'k8s_listener_kube_requests_total',
          (l) => l.kind === 'Lease' && WRITE_VERBS.has(l.verb ?? ''),
        ),
      controlPlanePerCycle: (controlPlaneRequests(steadyEnd) - controlPlaneRequests(settled)) / steadyCycles,
    };
    log(`steady state: ${JSON.stringify(steady)}`);

    // Change → applied: a new image on a deployment, until the Deployment object carries it.
    const latencies: number[] = [];
    const watchAbort = new AbortController();
    const waiting = new Map<string, { image: string; since: number; done: () => void }>();
    const watches = NAMESPACES.map(async (namespace) => {
      const list = await admin.listWithVersion('Deployment', { namespace });
      try {
        for await (const event of admin.watch('Deployment', {
          namespace,
          resourceVersion: list.resourceVersion,
          signal: watchAbort.signal,
        })) {
          const key = `${namespace}/${event.object.metadata.name}`;
          const wanted = waiting.get(key);
          const spec = event.object.spec as
            | { template?: { spec?: { containers?: { image?: string }[] } } }
            | undefined;
          if (wanted && spec?.template?.spec?.containers?.some((c) => c.image === wanted.image)) {
            latencies.push(performance.now() - wanted.since);
            waiting.delete(key);
            wanted.done();
          }
        }
      } catch (error) {
        if (!watchAbort.signal.aborted) throw error;
      }
    });
    await sleep(500);
    const patchesStarted = performance.now();
    const pending: Promise<void>[] = [];
    for (let p = 0; p < PATCHES; p++) {
      const target = seeded[(p * 7) % seeded.length];
      if (!target) break;
      const namespace = target.deployment.source_config.listener_config?.k8s_namespace ?? '';
      const rendered = renderFleet([target], listener, (n) => n, renderConfig);
      const main = rendered.find(
        (o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'main',
      );
      if (!main) throw new Error(`no main Deployment rendered for ${target.deployment.name}`);
      const image = `registry.example.test/bench/app:2.${p}.0`;
      const done = new Promise<void>((resolve) =>
        waiting.set(`${namespace}/${main.metadata.name}`, { image, since: performance.now(), done: resolve }),
      );
      await client.patchDeployment(target.deployment.id, { source_revision_config: { image_uri: image } });
      pending.push(done);
      // Spread over a few poll intervals, as edits arrive in life, not all in one poll.
      await sleep((POLL_MS * 3) / PATCHES);
    }
    await Promise.race([
      Promise.all(pending),
      sleep(PHASE_TIMEOUT_MS).then(() => {
        throw new Error(`change → applied: ${waiting.size} of ${PATCHES} changes not applied in time`);
      }),
    ]);
    watchAbort.abort();
    await Promise.allSettled(watches);
    latencies.sort((a, b) => a - b);
    const latency = {
      patches: latencies.length,
      p50Ms: Math.round(quantile(latencies, 0.5)),
      p99Ms: Math.round(quantile(latencies, 0.99)),
      maxMs: Math.round(latencies.at(-1) ?? Number.NaN),
      spanS: seconds(performance.now() - patchesStarted),
    };
    log(`change → applied: ${JSON.stringify(latency)}`);
    const { final, memory } = await readAndStop();
    return {
      appliedMs,
      appliedCpuS,
      appliedReconciles,
      deployedMs,
      deployedAtEnd: N,
      podsAtReading: undefined,
      afterCold,
      live,
      steady,
      latency,
      final,
      memory,
      atStart,
      peakHeapMiB,
      longestStallS,
      majorGcS,
    };
  };

  // Day two: a new agent process over everything the first one made. Caught up once it has
  // reconciled every deployment and then a poll cycle has passed; what it wrote meanwhile (a
  // restart should write next to nothing) and its peak RSS, which holds its first listings.
  const runRestart = async () => {
    const configPath = join(workDir, 'config.yaml');
    const started = performance.now();
    const second = startAgentProcess(configPath, undefined, undefined, join(workDir, 'agent-restarted.log'));
    agent = second;
    const pid = second.child.pid ?? 0;
    const metricsUrl = await second.metricsUrl;
    const atStart = await procStatus(pid);
    const read = async () => parseMetrics(await scrapeText(metricsUrl, second));
    const caughtUp = await until(
      'the restarted agent has looked at every deployment',
      async () => {
        const now = await read();
        return total(now, 'controller_runtime_reconcile_total') >= N ? now : undefined;
      },
      PHASE_TIMEOUT_MS,
      1_000,
    );
    const caughtUpMs = performance.now() - started;
    const settled = await until(
      'a poll cycle after catching up',
      async () => {
        const now = await read();
        return polls(now) > polls(caughtUp) ? now : undefined;
      },
      POLL_MS * 10 + 30_000,
      500,
    );
    const memory = await procStatus(pid);
    const cpuS = await cpuSeconds(pid);
    await stopAgent(second);
    agent = undefined;
    const restarted = {
      caughtUpS: seconds(caughtUpMs),
      cpuS,
      writesExceptLease: writesExceptLease(settled),
      peakRssMiB: Number((memory?.hwmMiB ?? Number.NaN).toFixed(1)),
      rssAtStartMiB: Number((atStart?.rssMiB ?? Number.NaN).toFixed(1)),
    };
    log(`restart: ${JSON.stringify(restarted)}`);
    return restarted;
  };

  // The floor: the same objects, a bare loop of server-side applies at the agent's concurrency.
  const runFloor = async () => {
    const floorKube = await KubeClient.fromKubeconfig(cluster.kubeconfigPath, {
      logger: pino({ level: 'silent' }),
    });
    const floorObjects = renderFleet(seeded, listener, (n) => `floor-${n}`, renderConfig);
    const floorMs = await applyAll(floorKube, floorObjects, CONCURRENCY);
    await floorKube.close();
    log(`floor: ${floorObjects.length} objects in ${seconds(floorMs)} s`);
    return floorMs;
  };

  // kubectl: the same objects, one `kubectl apply --server-side` per namespace, one after another.
  const runKubectl = async () => {
    const kubectlObjects = renderFleet(seeded, listener, (n) => `kubectl-${n}`, renderConfig);
    let kubectlMs = 0;
    for (const namespace of kubectlNamespaces) {
      const file = join(workDir, `${namespace}.json`);
      const items = kubectlObjects.filter((o) => o.metadata.namespace === namespace);
      await writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
      const before = performance.now();
      await execFileAsync(
        kubectl,
        ['--kubeconfig', cluster.kubeconfigPath, 'apply', '--server-side', '--force-conflicts', '-f', file],
        { maxBuffer: 64 * 2 ** 20, timeout: PHASE_TIMEOUT_MS },
      ).catch((error: { stderr?: string }) => {
        throw new Error(`kubectl apply in ${namespace} failed: ${(error.stderr ?? '').slice(0, 2_000)}`);
      });
      kubectlMs += performance.now() - before;
    }
    log(`kubectl: ${kubectlObjects.length} objects in ${seconds(kubectlMs)} s`);
    return kubectlMs;
  };

  let agentRun: Awaited<ReturnType<typeof runAgent>> | undefined;
  let floorMs: number | undefined;
  let kubectlMs: number | undefined;
  for (const phase of ORDER) {
    log(`${phase} (order ${ORDER.join(', ')})`);
    if (phase === 'agent') agentRun = await runAgent();
    else if (phase === 'floor') floorMs = await runFloor();
    else kubectlMs = await runKubectl();
  }
  if (!agentRun) throw new Error('the agent did not run');
  const restart = flags.restart ? await runRestart() : undefined;
  const {
    appliedMs,
    appliedCpuS,
    appliedReconciles,
    deployedMs,
    deployedAtEnd,
    podsAtReading,
    afterCold,
    live,
    steady,
    latency,
    final,
    memory,
    atStart,
    peakHeapMiB,
    longestStallS,
    majorGcS,
  } = agentRun;
  const growthKiB = (((memory?.hwmMiB ?? Number.NaN) - (atStart?.rssMiB ?? Number.NaN)) * 1024) / N;
  const ratio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : Number((a / b).toFixed(2));

  const version = JSON.parse(
    (await execFileAsync(kubectl, ['--kubeconfig', cluster.kubeconfigPath, 'version', '-o', 'json'])).stdout,
  ) as { serverVersion?: { gitVersion?: string }; clientVersion?: { gitVersion?: string } };
  const verbs = byVerb(afterCold);
  const result = {
    startedAt: runStarted.toISOString(),
    deployments: N,
    objects: agentObjects.length,
    concurrency: CONCURRENCY,
    pollIntervalMs: POLL_MS,
    clusterControllerManagerQps: CONTROLLER_QPS,
    note: flags.note || undefined,
    series: flags.series,
    agent: {
      ran: flags['from-source']
        ? 'src/cli/main.ts (TypeScript, type stripping)'
        : 'dist/cli/main.js (bundled)',
      memoryCgroupMiB: memoryCgroup ? MEMORY_LIMIT_MIB : undefined,
      nodeOptions: flags['agent-node-options'] || undefined,
      env: flags['agent-env'] || undefined,
    },
    machine: machine(loadAtStart),
    versions: {
      agent: AGENT_VERSION,
      node: process.version,
      kubeApiserver: version.serverVersion?.gitVersion,
      kubectl: version.clientVersion?.gitVersion,
    },
    coldSync: {
      appliedS: seconds(appliedMs),
      agentCpuAtAppliedS: appliedCpuS,
      reconcilesAtApplied: appliedReconciles,
      reconcilesAtDeployed: total(afterCold, 'controller_runtime_reconcile_total'),
      deployedS: deployedMs === undefined ? null : seconds(deployedMs),
      // With --until-applied: how many were DEPLOYED when the reading was taken.
      deployedAtEnd,
      // With --until-applied: the pods of the agent's namespaces at the reading (the cache holds
      // a summary of each).
      podsAtReading,
      liveDeploymentsInFirstNamespace: live,
    },
    order: ORDER,
    floorS: floorMs === undefined ? null : seconds(floorMs),
    kubectlS: kubectlMs === undefined ? null : seconds(kubectlMs),
    ratios: {
      agentOverFloor: ratio(appliedMs, floorMs),
      kubectlOverAgent: ratio(kubectlMs, appliedMs),
    },
    coldRequestsPerDeployment: Object.fromEntries(
      Object.entries(verbs).map(([verb, count]) => [verb, Number((count / N).toFixed(2))]),
    ),
    coldRequestsByKindAndVerb: byKindAndVerb(afterCold),
    coldControlPlanePerCycle: Number(
      (controlPlaneRequests(afterCold) / Math.max(1, polls(afterCold))).toFixed(1),
    ),
    coldPollCycles: polls(afterCold),
    untilApplied: flags['until-applied'] || undefined,
    steady: steady && { ...steady, controlPlanePerCycle: Number(steady.controlPlanePerCycle.toFixed(1)) },
    changeToApplied: latency,
    restart,
    memory: {
      peakRssMiB: Number((memory?.hwmMiB ?? Number.NaN).toFixed(1)),
      rssAtStartMiB: Number((atStart?.rssMiB ?? Number.NaN).toFixed(1)),
      peakGrowthKiBPerDeployment: Number(growthKiB.toFixed(1)),
      rssAtEndMiB: Number((memory?.rssMiB ?? Number.NaN).toFixed(1)),
      peakHeapUsedMiB: Number(peakHeapMiB.toFixed(1)),
    },
    // Until the reading: the longest event-loop stall and the time spent in major GCs.
    longestEventLoopStallS: Number(longestStallS.toFixed(2)),
    majorGcS: Number(majorGcS.toFixed(1)),
    totalRequests: byVerb(final),
    cpuProfileDir: profileDir,
  };

  // The targets for one run (its ratios are judged as the median of three runs in rotated order).
  const requestsPerDeployment = Object.values(result.coldRequestsPerDeployment).reduce(
    (sum, n) => sum + n,
    0,
  );
  const targets = [
    ...(flags['agent-only']
      ? []
      : [
          {
            target: 'cold sync to applied ≤ 1.5 × floor (judged as the median of --runs 3)',
            pass: (result.ratios.agentOverFloor ?? Number.POSITIVE_INFINITY) <= 1.5,
          },
          {
            target: 'kubectl ≥ 1.5 × slower than the agent (judged as the median of --runs 3)',
            pass: (result.ratios.kubectlOverAgent ?? 0) >= 1.5,
          },
        ]),
    { target: 'API requests per deployment in the cold sync ≤ 9', pass: requestsPerDeployment <= 9 },
    {
      target: 'agent CPU in the cold sync ≤ 10 ms per deployment',
      pass: (appliedCpuS ?? Number.POSITIVE_INFINITY) * 1000 <= 10 * N,
    },
    ...(steady && latency
      ? [
          { target: '0 writes in steady state (Lease aside)', pass: steady.writesExceptLease === 0 },
          {
            target: `change → applied p99 ≤ poll interval + 1 s (${POLL_MS + 1000} ms)`,
            pass: latency.p99Ms <= POLL_MS + 1000,
          },
        ]
      : []),
    { target: 'peak RSS growth ≤ 25 KiB per deployment', pass: growthKiB <= 25 },
    {
      target: "peak RSS within the chart's 384 MiB",
      pass: (memory?.hwmMiB ?? Number.POSITIVE_INFINITY) <= 384,
    },
  ];
  const path = await writeRecord(runStarted, String(N), { ...result, targets });

  const rows: [string, string][] = [
    ['deployments / objects', `${N} / ${agentObjects.length}`],
    ['concurrency, poll interval', `${CONCURRENCY}, ${POLL_MS} ms`],
    [
      'cold sync: every object applied',
      `${result.coldSync.appliedS} s (agent CPU ${result.coldSync.agentCpuAtAppliedS} s, ${appliedReconciles} reconciles)`,
    ],
    [
      'cold sync: every revision DEPLOYED',
      result.coldSync.deployedS === null
        ? `not waited for (${deployedAtEnd} of ${N} DEPLOYED and ${podsAtReading} pods at the reading)`
        : `${result.coldSync.deployedS} s (${result.coldSync.reconcilesAtDeployed} reconciles)`,
    ],
    ['order', ORDER.join(', ')],
    ['floor (bare SSA loop)', `${result.floorS ?? '–'} s`],
    ['kubectl apply --server-side (per namespace)', `${result.kubectlS ?? '–'} s`],
    ['agent / floor', `${result.ratios.agentOverFloor ?? '–'}`],
    ['kubectl / agent', `${result.ratios.kubectlOverAgent ?? '–'}`],
    [
      'agent CPU per deployment (cold, to applied)',
      `${(((appliedCpuS ?? Number.NaN) * 1000) / N).toFixed(1)} ms`,
    ],
    [
      'API requests per deployment (cold)',
      Object.entries(result.coldRequestsPerDeployment)
        .map(([v, c]) => `${v} ${c}`)
        .join(', '),
    ],
    ['control-plane requests per poll (cold)', `${result.coldControlPlanePerCycle}`],
    [
      'steady (5 polls): writes, Lease aside',
      steady ? `${steady.writesExceptLease} (Lease writes ${steady.leaseWrites})` : '–',
    ],
    ['steady: control-plane requests per poll', `${result.steady?.controlPlanePerCycle ?? '–'}`],
    [
      'change → applied p50 / p99',
      latency ? `${latency.p50Ms} / ${latency.p99Ms} ms (${latency.patches} changes)` : '–',
    ],
    ['peak RSS / peak heap used', `${result.memory.peakRssMiB} / ${result.memory.peakHeapUsedMiB} MiB`],
    [
      'peak RSS growth',
      `${result.memory.peakGrowthKiBPerDeployment} KiB per deployment (from ${result.memory.rssAtStartMiB} MiB at start)`,
    ],
    [
      'restart: caught up (CPU), writes, peak RSS',
      restart
        ? `${restart.caughtUpS} s (${restart.cpuS} s), ${restart.writesExceptLease}, ${restart.peakRssMiB} MiB (from ${restart.rssAtStartMiB})`
        : '–',
    ],
    [
      'machine',
      `${result.machine.cores} cores, ${result.machine.memoryGiB} GiB, load ${loadAtStart.join(' ')} → ${result.machine.loadAverageAtEnd.join(' ')}`,
    ],
    [
      'versions',
      `agent ${AGENT_VERSION}, node ${process.version}, kube-apiserver ${result.versions.kubeApiserver}`,
    ],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n'));
  console.log(`\nTargets (stated at N = 1,000${N === 1000 ? '' : `; this run is N = ${N}`}):`);
  for (const { target, pass } of targets) console.log(`  ${pass ? 'PASS' : 'FAIL'}  ${target}`);
  console.log(`\nResults: ${path}${profileDir ? `\nCPU profile: ${profileDir}` : ''}`);
  if (snapshotDir) console.log(`Heap snapshot: ${snapshotDir}`);
  if (flags.strict && targets.some((t) => !t.pass)) process.exitCode = 1;
} finally {
  if (agent) await stopAgent(agent);
  if (memoryCgroup) await rmdir(memoryCgroup).catch(() => undefined);
  await client.close();
  await admin.close();
  await emulator.close();
  await cluster.stop();
}
// A handle still open after the teardown (one kept a run of a --runs series alive, idle, after
// its record was written and the cluster stopped) must not hold up the series that waits for it.
process.exit(process.exitCode ?? 0);
