// The agent as a real `k8s-listener run` process, and the checks that compare a whole cluster with
// what the control plane asks for: every rendered object exactly once, no orphan, inventories
// complete. Shared by the kill and hostile-input tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StatusReport } from '../../src/controlplane/schemas/index.ts';
import type { RunningEmulator } from '../../src/emulator/server.ts';
import {
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_SPEC_HASH,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
} from '../../src/objects/ownership.ts';
import { inventoryName } from '../../src/reconcile/inventoryStore.ts';
import { RenderConfig, renderDeployment } from '../../src/render/index.ts';
import { FAST_RECONCILE, type World } from './agentHarness.ts';

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

export interface AgentProcess {
  readonly identity: string;
  readonly child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  /** The probe server's URL, once the process has logged it. */
  readonly probesUrl: () => string | undefined;
}

/** Writes an agent configuration file (JSON is YAML) for `world` with fast loops and a short lease. */
export async function writeAgentConfig(
  world: World,
  options: { leaseName: string; namespaces?: readonly string[]; reconcile?: Record<string, unknown> },
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-agent-'));
  const path = join(dir, 'config.yaml');
  await writeFile(
    path,
    JSON.stringify({
      listenerId: world.listenerId,
      controlPlane: { baseUrl: world.emulator.url },
      kubeconfig: world.kubeconfigPath,
      agentNamespace: 'default',
      namespaces: options.namespaces ?? world.namespaces,
      probes: { host: '127.0.0.1', port: 0 },
      log: { level: 'info', format: 'json' },
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
    }),
  );
  return path;
}

/**
 * The agent from its sources, or as the image runs it (`main`: a bundle, with `env`: the image's);
 * `env` last (the test setup's K8S_LISTENER_KUBECONFIG would win over the file's `kubeconfig`).
 */
export function startAgentProcess(
  configPath: string,
  identity: string,
  image?: { readonly main: string; readonly env: Readonly<Record<string, string>> },
  env: Readonly<Record<string, string>> = {},
): AgentProcess {
  const child = spawn(process.execPath, [image?.main ?? MAIN, 'run', '--config', configPath], {
    env: { ...process.env, ...image?.env, POD_NAME: identity, POD_NAMESPACE: 'default', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const probesUrl = () => /"probes":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(output)?.[1];
  return { identity, child, output: () => output, exited, probesUrl };
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
