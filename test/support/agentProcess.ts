// The agent as a real `k8s-listener run` process, and the checks that compare a whole cluster with
// what the control plane asks for: every rendered object exactly once, no orphan, inventories
// complete. Shared by the process tests and bench:sync.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StatusReport } from '../../src/controlplane/schemas/index.ts';
import type { RunningEmulator } from '../../src/emulator/server.ts';
import {
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_SPEC_HASH,
  isDatabaseCredentials,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
} from '../../src/objects/ownership.ts';
import { inventoryName } from '../../src/reconcile/steps/inventoryStore.ts';
import { RenderConfig, renderDeployment } from '../../src/render/index.ts';
import { FAST_RECONCILE, type World } from './agentHarness.ts';

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;
/** What is kept of the output when it goes to a file: enough to say why a process failed to start. */
const OUTPUT_TAIL = 4_000;

export interface AgentProcess {
  readonly identity: string;
  readonly child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far (with `logPath`, the last 4,000 characters). */
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  /** The probe server's URL, once the process has logged it. */
  readonly probesUrl: () => string | undefined;
  /** The probe server's URL once logged; rejects, with the output's tail, if the process exits first. */
  readonly started: Promise<string>;
}

export interface AgentProcessOptions {
  /** As the image runs it: the bundle and the image's environment (default: the sources, no image environment). */
  readonly image?: { readonly main: string; readonly env: Readonly<Record<string, string>> };
  /** Over every other variable (the test setup's K8S_LISTENER_KUBECONFIG would win over the file's `kubeconfig`). */
  readonly env?: Readonly<Record<string, string>>;
  /** Node's own flags, before the script (a CPU profile, a heap snapshot on a signal, heap sizes). */
  readonly nodeFlags?: readonly string[];
  /** A cgroup directory to run in: a shell moves itself there, then becomes the agent (the same pid). */
  readonly cgroup?: string;
  /** Where the output goes instead of memory: a run of hours logs more than one string holds. */
  readonly logPath?: string;
}

/** What an agent configuration file of the tests and benchmarks says; the rest is the same for all. */
export interface AgentConfigFile {
  readonly listenerId: string;
  readonly controlPlaneUrl: string;
  readonly kubeconfigPath: string;
  readonly namespaces: readonly string[];
  readonly logLevel?: string;
  readonly reconcile: Readonly<Record<string, unknown>>;
}

/** Writes an agent configuration file (JSON is YAML): probes on a free loopback port, JSON logs. */
export async function writeAgentConfigFile(path: string, config: AgentConfigFile): Promise<void> {
  await writeFile(
    path,
    JSON.stringify({
      listenerId: config.listenerId,
      controlPlane: { baseUrl: config.controlPlaneUrl },
      kubeconfig: config.kubeconfigPath,
      agentNamespace: 'default',
      namespaces: config.namespaces,
      probes: { host: '127.0.0.1', port: 0 },
      log: { level: config.logLevel ?? 'info', format: 'json' },
      reconcile: config.reconcile,
    }),
  );
}

/** Writes an agent configuration file for `world` with fast loops and a short lease; returns its path. */
export async function writeAgentConfig(
  world: World,
  options: { leaseName: string; namespaces?: readonly string[]; reconcile?: Record<string, unknown> },
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-agent-'));
  const path = join(dir, 'config.yaml');
  await writeAgentConfigFile(path, {
    listenerId: world.listenerId,
    controlPlaneUrl: world.emulator.url,
    kubeconfigPath: world.kubeconfigPath,
    namespaces: options.namespaces ?? world.namespaces,
    reconcile: {
      ...FAST_RECONCILE,
      ...options.reconcile,
      leaderElection: {
        leaseName: options.leaseName,
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 500,
      },
    },
  });
  return path;
}

/** The agent's command line: node, its own flags, then the agent as the image's entry point runs it. */
export function agentCommand(configPath: string, options: AgentProcessOptions = {}): string[] {
  return [
    process.execPath,
    ...(options.nodeFlags ?? []),
    options.image?.main ?? MAIN,
    'run',
    '--config',
    configPath,
  ];
}

/** The agent as a `run` process with `configPath`; `identity` is its pod name (and its lease holder). */
export function startAgentProcess(
  configPath: string,
  identity: string,
  options: AgentProcessOptions = {},
): AgentProcess {
  const command = agentCommand(configPath, options);
  const env = {
    ...process.env,
    ...options.image?.env,
    POD_NAME: identity,
    POD_NAMESPACE: 'default',
    ...options.env,
  };
  const child = options.cgroup
    ? spawn('sh', ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', options.cgroup, ...command], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(command[0] as string, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logFile = options.logPath === undefined ? undefined : createWriteStream(options.logPath);
  let output = '';
  const keep = (chunk: Buffer) => {
    logFile?.write(chunk);
    output += chunk.toString();
    if (logFile && output.length > 2 * OUTPUT_TAIL) output = output.slice(-OUTPUT_TAIL);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // 'close', not 'exit': the pipes may still hold the last lines when the process exits.
  child.once('close', () => logFile?.end());
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // The probes line is caught as it passes: with `logPath` it soon leaves the kept tail.
  let probes: string | undefined;
  const started = new Promise<string>((resolve, reject) => {
    let pending = '';
    const findProbes = (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const url = /"probes":"(http:\/\/[^"]+)"/.exec(line)?.[1];
        if (url === undefined) continue;
        probes = url;
        child.stdout?.off('data', findProbes);
        resolve(url);
        return;
      }
    };
    child.stdout?.on('data', findProbes);
    void exited.then((code) =>
      reject(new Error(`agent exited (${code}) before it started: ${output.slice(-OUTPUT_TAIL)}`)),
    );
  });
  // Awaited by whoever needs it; an agent that a test stops early is no unhandled rejection.
  started.catch(() => undefined);
  return { identity, child, output: () => output, exited, probesUrl: () => probes, started };
}

export const appliesBy = (agent: AgentProcess): number =>
  (agent.output().match(/"msg":"applying"/g) ?? []).length;

/** Every status report the emulator receives, in order (the emulator keeps only the statuses). */
export function recordStatusReports(emulator: RunningEmulator): StatusReport[] {
  const reports: StatusReport[] = [];
  const store = emulator.store;
  const apply = store.applyStatusReports.bind(store);
  store.applyStatusReports = (listenerId, batch) => {
    reports.push(...batch);
    return apply(listenerId, batch);
  };
  return reports;
}

/** The kinds the agent writes, as the API lists them (PVCs come from claim templates: not rendered). */
const WRITTEN_KINDS = [
  ['apps/v1', 'Deployment'],
  ['apps/v1', 'StatefulSet'],
  ['v1', 'Service'],
  ['v1', 'Secret'],
  ['v1', 'ConfigMap'],
  ['v1', 'PodTemplate'],
  ['autoscaling/v2', 'HorizontalPodAutoscaler'],
  ['policy/v1', 'PodDisruptionBudget'],
  ['networking.k8s.io/v1', 'Ingress'],
  ['networking.k8s.io/v1', 'NetworkPolicy'],
] as const;

export interface LiveEntry {
  readonly key: string;
  readonly deploymentId: string | undefined;
  readonly specHash: string | undefined;
  readonly inventory: string | undefined;
  /** A database's generated credentials, which outlive its render while its volume is kept. */
  readonly databaseCredentials: boolean;
}

/** Every object carrying this listener's label in `namespaces`, across every kind the agent writes. */
export async function listListenerObjects(world: World, namespaces: readonly string[]): Promise<LiveEntry[]> {
  const entries: LiveEntry[] = [];
  for (const namespace of namespaces) {
    for (const [apiVersion, kind] of WRITTEN_KINDS) {
      const list = await world.kube.objects.list(
        apiVersion,
        kind,
        namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        `${LABEL_LISTENER_ID}=${world.listenerId}`,
      );
      for (const item of list.items) {
        const data = (item as { data?: Record<string, string> }).data;
        entries.push({
          key: `${kind}/${namespace}/${item.metadata?.name}`,
          deploymentId: item.metadata?.labels?.[LABEL_DEPLOYMENT_ID],
          specHash: item.metadata?.annotations?.[ANNOTATION_SPEC_HASH],
          inventory: item.metadata?.labels?.[LABEL_COMPONENT] === 'inventory' ? data?.inventory : undefined,
          databaseCredentials: isDatabaseCredentials({
            kind,
            metadata: { labels: item.metadata?.labels ?? {}, annotations: item.metadata?.annotations ?? {} },
          }),
        });
      }
    }
  }
  return entries;
}

export interface ExpectedDeployment {
  readonly deploymentId: string;
  readonly revisionId: string | undefined;
  readonly specHash: string;
  /** kind/namespace/name of every rendered object, and of the inventory ConfigMap. */
  readonly keys: readonly string[];
  /** The spec-hash annotation each rendered object carries. */
  readonly objectHashes: ReadonlyMap<string, string | undefined>;
}

/**
 * What the control plane asks for now, rendered the way the agent does (default render
 * configuration, the agent's digest key): deployments that do not render are left out (they must
 * have no object).
 */
export function expectedState(
  emulator: RunningEmulator,
  listenerId: string,
  digestKey: Uint8Array | undefined,
): ExpectedDeployment[] {
  const state = emulator.state();
  const listener = state.listeners.find((l) => l.id === listenerId);
  if (!listener) throw new Error(`listener ${listenerId} is not in the emulator`);
  const config = RenderConfig.parse({});
  const expected: ExpectedDeployment[] = [];
  for (const { deployment, revisions } of state.deployments) {
    if (deployment.source_config.listener_id !== listenerId) continue;
    const revision = revisions.find((r) => r.id === deployment.latest_revision_id);
    const rendered = renderDeployment(
      { deployment, revision, listener, allowedNamespaces: undefined, digestKey },
      config,
    );
    if (!rendered.ok) continue;
    const { namespace, objects, specHash } = rendered.value;
    expected.push({
      deploymentId: deployment.id,
      revisionId: revision?.id,
      specHash,
      objectHashes: new Map(
        // A create-only Secret (generated credentials) is written once and never updated.
        objects.map((o) => [
          `${o.kind}/${namespace}/${o.metadata.name}`,
          o.metadata.annotations[ANNOTATION_CREATE_ONLY] === 'true'
            ? undefined
            : o.metadata.annotations[ANNOTATION_SPEC_HASH],
        ]),
      ),
      keys: [
        ...objects.map((o) => `${o.kind}/${namespace}/${o.metadata.name}`),
        `ConfigMap/${namespace}/${inventoryName(deployment.id)}`,
      ],
    });
  }
  return expected;
}

/** Problems of the cluster against the expected state (empty: equal). */
export function stateDifferences(
  live: readonly LiveEntry[],
  expected: readonly ExpectedDeployment[],
): string[] {
  const problems: string[] = [];
  const owner = new Map<string, ExpectedDeployment>();
  for (const deployment of expected) for (const key of deployment.keys) owner.set(key, deployment);
  const seen = new Set<string>();
  for (const entry of live) {
    if (seen.has(entry.key)) problems.push(`${entry.key} listed twice`);
    seen.add(entry.key);
    const wanted = owner.get(entry.key);
    if (!wanted) {
      // Kept with its volume (reconcile.prune.keepDatabaseVolumes), as the volume's claims are.
      if (!entry.databaseCredentials)
        problems.push(`${entry.key} (deployment ${entry.deploymentId}) is an orphan`);
      continue;
    }
    if (entry.deploymentId !== wanted.deploymentId)
      problems.push(`${entry.key} belongs to ${entry.deploymentId}, not ${wanted.deploymentId}`);
    // Objects carry the spec hash of their own body, the inventory the hash of the whole set.
    const hash = wanted.objectHashes.get(entry.key);
    if (hash !== undefined && entry.specHash !== hash)
      problems.push(`${entry.key} is not the latest revision's object (spec hash ${entry.specHash})`);
    if (entry.inventory !== undefined) {
      const stored = JSON.parse(entry.inventory) as {
        specHash: string;
        revisionId?: string;
        entries: { kind: string; namespace: string; name: string }[];
      };
      const recorded = stored.entries.map((e) => `${e.kind}/${e.namespace}/${e.name}`).sort();
      const rendered = wanted.keys.filter((k) => k !== entry.key).sort();
      if (JSON.stringify(recorded) !== JSON.stringify(rendered))
        problems.push(`${entry.key} records ${recorded.join(',')} instead of ${rendered.join(',')}`);
      if (stored.specHash !== wanted.specHash) problems.push(`${entry.key} has an old spec hash`);
      if (stored.revisionId !== wanted.revisionId)
        problems.push(`${entry.key} records revision ${stored.revisionId}, not ${wanted.revisionId}`);
    }
  }
  for (const key of owner.keys()) if (!seen.has(key)) problems.push(`${key} is missing`);
  return problems;
}
