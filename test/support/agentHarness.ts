// Runs the real agent in-process against the emulator and the test cluster.
import pino, { type Logger } from 'pino';
import { afterAll, beforeAll, inject } from 'vitest';
import type {
  Deployment,
  DeploymentCreate,
  Revision,
  RevisionStatus,
} from '../../src/controlplane/schemas/index.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/server.ts';
import { Agent } from '../../src/manager/agent.ts';
import { ReconcileConfig } from '../../src/reconcile/policy/reconcileConfig.ts';
import { RenderConfig, type RenderConfigInput } from '../../src/render/index.ts';
import { type AgentMetrics, createMetrics } from '../../src/report/metrics.ts';
import { type AdminKube, adminKube, createNamespace, uniqueNamespace } from './adminKube.ts';
import { ControlPlaneTestClient } from './controlPlaneTestClient.ts';
import { eventually } from './eventually.ts';

/** Fast loops for tests: everything the defaults do, in seconds instead of minutes. */
export const FAST_RECONCILE = {
  pollIntervalMs: 300,
  pollJitter: 0.1,
  rolloutRecheckMs: 300,
  failureGraceMs: 3_000,
  backoffBaseMs: 200,
  backoffMaxMs: 2_000,
  resyncIntervalMs: 60_000,
  shutdownDrainMs: 5_000,
};

export interface World {
  readonly kube: AdminKube;
  readonly kubeconfigPath: string;
  readonly emulator: RunningEmulator;
  readonly client: ControlPlaneTestClient;
  readonly listenerId: string;
  readonly namespaces: readonly string[];
  /** The emulator's API key, when it requires one (the agent is given it). */
  readonly apiKey?: string | undefined;
  close(): Promise<void>;
}

/** An emulator with one k8s listener for fresh namespaces of the test cluster. */
export async function startWorld(
  kubeconfigPath: string,
  options: {
    namespaces?: number;
    extraListenerNamespaces?: string[];
    apiKey?: string;
    /** Of every namespace made: e.g. the real node's, to run its pods there. */
    namespaceAnnotations?: Readonly<Record<string, string>>;
  } = {},
): Promise<World> {
  const kube = adminKube(kubeconfigPath);
  const namespaces = Array.from({ length: options.namespaces ?? 2 }, () => uniqueNamespace('rec'));
  for (const namespace of namespaces) await createNamespace(kube, namespace, options.namespaceAnnotations);
  const emulator = await startEmulator({ apiKey: options.apiKey });
  const client = new ControlPlaneTestClient({
    baseUrl: emulator.url,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    logger: pino({ level: 'silent' }),
    retry: { retries: 1, minDelayMs: 5, maxDelayMs: 20 },
  });
  const listener = await client.createListener({
    compute_type: 'k8s',
    compute_id: `test-${namespaces[0]}`,
    compute_config: { k8s_namespaces: [...namespaces, ...(options.extraListenerNamespaces ?? [])] },
  });
  return {
    kube,
    kubeconfigPath,
    emulator,
    client,
    listenerId: listener.id,
    namespaces,
    apiKey: options.apiKey,
    close: async () => {
      await client.close();
      await emulator.close();
      for (const namespace of namespaces)
        await kube.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}

export interface AgentOverrides {
  readonly baseUrl?: string;
  readonly allowedNamespaces?: readonly string[];
  readonly identity?: string;
  readonly leaderElection?: boolean;
  readonly leaseName?: string;
  readonly reconcile?: Record<string, unknown>;
  /** Default: every render default (no ingress class, so no Ingress). */
  readonly render?: RenderConfigInput;
  /** Default: a registry without the process metrics. */
  readonly metrics?: AgentMetrics;
  /** Default: silent (or TEST_LOG_LEVEL). */
  readonly logger?: Logger;
}

export async function startAgent(world: World, overrides: AgentOverrides = {}): Promise<Agent> {
  const agent = new Agent({
    listenerId: world.listenerId,
    controlPlane: {
      baseUrl: overrides.baseUrl ?? world.emulator.url,
      ...(world.apiKey ? { apiKey: world.apiKey } : {}),
      retry: { retries: 1, minDelayMs: 5, maxDelayMs: 20, maxElapsedMs: 1_000 },
    },
    kubeconfigPath: world.kubeconfigPath,
    allowedNamespaces: overrides.allowedNamespaces,
    identity: overrides.identity ?? 'agent-under-test',
    agentNamespace: 'default',
    render: RenderConfig.parse(overrides.render ?? {}),
    reconcile: ReconcileConfig.parse({
      ...FAST_RECONCILE,
      ...overrides.reconcile,
      leaderElection: {
        enabled: overrides.leaderElection ?? false,
        leaseName: overrides.leaseName ?? `lease-${world.namespaces[0]}`,
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 500,
      },
    }),
    metrics: overrides.metrics ?? createMetrics({ defaultMetrics: false }),
    logger: overrides.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  });
  await agent.start();
  return agent;
}

export function app(
  world: World,
  name: string,
  namespace: string,
  extra: Partial<DeploymentCreate> = {},
): DeploymentCreate {
  return {
    name,
    source: 'external_container',
    source_config: {
      listener_id: world.listenerId,
      listener_config: { k8s_namespace: namespace },
      deployment_type: 'dev',
      resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.1, memory_mb: 64 },
    },
    source_revision_config: { image_uri: 'nginx:1.27' },
    secrets: [{ name: 'API_TOKEN', value: 'integration-secret-value' }],
    ...extra,
  };
}

export async function revisionStatus(
  world: World,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionStatus | undefined> {
  const revisions = await world.client.listAllRevisions(deploymentId);
  return revisions.items.find((r: Revision) => r.id === revisionId)?.status;
}

/** Waits until the control plane has the revision in `status` (reported by the agent). */
export async function waitForRevision(
  world: World,
  deployment: Deployment,
  status: RevisionStatus,
  timeoutMs = 60_000,
): Promise<void> {
  const revisionId = deployment.latest_revision_id ?? '';
  await eventually(
    `revision ${revisionId} ${status}`,
    async () => ((await revisionStatus(world, deployment.id, revisionId)) === status ? true : undefined),
    timeoutMs,
  );
}

/** The configuration flags of a world, as an operator passes them to a command. */
export function worldFlags(world: World, namespace: string): string[] {
  return [
    '--listener-id',
    world.listenerId,
    '--control-plane',
    world.emulator.url,
    '--kubeconfig',
    world.kubeconfigPath,
    '--namespaces',
    namespace,
  ];
}

export async function deploymentNamed(world: World, id: string): Promise<Deployment | undefined> {
  return (await world.client.listAllDeployments({ deployment_ids: [id] })).items[0];
}

/** A world of one namespace and an agent serving it (its allow-list that namespace), for a test file. */
export interface AgentWorld {
  readonly world: World;
  readonly agent: Agent;
  /** The world's namespace. */
  readonly ns: string;
}

/**
 * Starts an AgentWorld before the file's tests and stops it after them; its fields are set once
 * the tests run.
 */
export function useAgentWorld(overrides: AgentOverrides = {}): AgentWorld {
  const context: { world?: World; agent?: Agent; ns?: string } = {};
  beforeAll(async () => {
    const world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
    context.world = world;
    context.ns = world.namespaces[0] ?? '';
    context.agent = await startAgent(world, { allowedNamespaces: world.namespaces, ...overrides });
  });
  afterAll(async () => {
    await context.agent?.stop();
    await context.world?.close();
  });
  const set = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`useAgentWorld: ${what} is read before the file's tests run`);
    return value;
  };
  return {
    get world() {
      return set(context.world, 'world');
    },
    get agent() {
      return set(context.agent, 'agent');
    },
    get ns() {
      return set(context.ns, 'ns');
    },
  };
}
