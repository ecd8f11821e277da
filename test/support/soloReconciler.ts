// A reconciler of its own over the real API server, with no agent loops around it: a test sets the
// desired state, calls `reconcile` and reads what it reported. `passThrough` counts each request
// by verb (and may act before one) on its way to the real client.
import type { Logger } from 'pino';
import { afterAll, beforeAll, inject } from 'vitest';
import type {
  Deployment,
  DeploymentCreate,
  Listener,
  StatusReportBatch,
} from '../../src/controlplane/schemas/index.ts';
import { EventRecorder, KubeClient } from '../../src/kube/index.ts';
import { DesiredState } from '../../src/reconcile/loop/desiredState.ts';
import { chooseTarget } from '../../src/reconcile/loop/target.ts';
import { ReconcileConfig } from '../../src/reconcile/policy/reconcileConfig.ts';
import { Reconciler } from '../../src/reconcile/reconciler.ts';
import type { ReconcilerKube, ReconcilerOptions } from '../../src/reconcile/reconcilerOptions.ts';
import { InventoryStore } from '../../src/reconcile/steps/inventoryStore.ts';
import { RenderConfig } from '../../src/render/index.ts';
import { ControlPlaneReporter } from '../../src/report/controlPlaneReporter.ts';
import { createMetrics } from '../../src/report/metrics.ts';
import { FAST_RECONCILE, startWorld, type World } from './agentHarness.ts';
import type { ControlPlaneTestClient } from './controlPlaneTestClient.ts';

/** What a file of solo reconcilers runs in: a world of one namespace, a client over it, its listener. */
export interface SoloWorld {
  readonly world: World;
  readonly kube: KubeClient;
  readonly listener: Listener;
  readonly namespace: string;
}

/**
 * Registers the file's hooks that start a world of one namespace before its tests and stop it
 * after; the returned object holds it once they have run.
 */
export function soloWorld(logger: Logger): SoloWorld {
  const held: { -readonly [K in keyof SoloWorld]?: SoloWorld[K] } = {};
  beforeAll(async () => {
    held.world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
    held.namespace = held.world.namespaces[0] ?? '';
    held.kube = await KubeClient.fromKubeconfig(held.world.kubeconfigPath, { logger });
    held.listener = await held.world.client.getListener(held.world.listenerId);
  });
  afterAll(async () => {
    await held.kube?.close();
    await held.world?.close();
  });
  const present = <K extends keyof SoloWorld>(key: K): SoloWorld[K] => {
    const value = held[key];
    if (value === undefined) throw new Error(`soloWorld: ${key} is read before the file's beforeAll ran`);
    return value as SoloWorld[K];
  };
  return {
    get world() {
      return present('world');
    },
    get kube() {
      return present('kube');
    },
    get listener() {
      return present('listener');
    },
    get namespace() {
      return present('namespace');
    },
  };
}

export interface SoloReconcilerOptions {
  readonly kube: KubeClient;
  readonly listener: Listener;
  readonly logger: Logger;
  /** What the reconciler sends its requests through; default: `kube` itself. */
  readonly client?: ReconcilerKube;
  readonly renderConfig?: RenderConfig;
  /** Default: FAST_RECONCILE. */
  readonly config?: ReconcileConfig;
  /** Passed to the reconciler as they are (ReconcilerOptions). */
  readonly suspension?: ReconcilerOptions['suspension'];
  readonly agentChanges?: ReconcilerOptions['agentChanges'];
  /** The agent's digest key; default none (plain digests). */
  readonly digestKey?: Uint8Array;
}

/** A reconciler of its own, whose reports are kept in `sent`. */
export function soloReconciler(options: SoloReconcilerOptions) {
  const { kube, listener, logger } = options;
  const client = options.client ?? kube;
  const sent: StatusReportBatch[] = [];
  const metrics = createMetrics({ defaultMetrics: false });
  const reporter = new ControlPlaneReporter({
    sink: { postStatusReports: async (_listenerId, batch) => void sent.push(batch) },
    listenerId: listener.id,
    logger,
    metrics,
  });
  const desired = new DesiredState();
  const inventories = new InventoryStore(client, listener.id);
  const reconciler = new Reconciler({
    kube: client,
    desired,
    inventories,
    reporter,
    events: new EventRecorder({ client: kube, logger, identity: 'solo-reconciler-test' }),
    metrics,
    logger,
    renderConfig: options.renderConfig ?? RenderConfig.parse({}),
    config: options.config ?? ReconcileConfig.parse(FAST_RECONCILE),
    listener: () => listener,
    allowedNamespaces: undefined,
    suspension: options.suspension,
    agentChanges: options.agentChanges,
    digestKey: options.digestKey,
  });
  return { reconciler, desired, reporter, sent, metrics, inventories };
}

/** The Kubernetes client, with each call counted by verb and `before` run ahead of it. */
export function passThrough(
  kube: KubeClient,
  before: (verb: string, kind: string) => void = () => undefined,
) {
  const calls: string[] = [];
  const seen = (verb: string, kind: string) => {
    calls.push(verb);
    before(verb, kind);
  };
  const client: ReconcilerKube = {
    get: (ref, options) => {
      seen('get', ref.kind);
      return kube.get(ref, options);
    },
    list: (kind, options) => {
      seen('list', typeof kind === 'string' ? kind : kind.kind);
      return kube.list(kind, options);
    },
    apply: (object, options) => {
      seen('apply', object.kind);
      return kube.apply(object, options);
    },
    create: (object, options) => {
      seen('create', object.kind);
      return kube.create(object, options);
    },
    delete: (ref, options) => {
      seen('delete', ref.kind);
      return kube.delete(ref, options);
    },
    mergePatch: (ref, patch, options) => {
      seen('patch', ref.kind);
      return kube.mergePatch(ref, patch, options);
    },
  };
  return { client, calls };
}

/** Creates a deployment in the control plane and sets it as desired, its target as the poller would choose it. */
export async function desire(
  client: Pick<ControlPlaneTestClient, 'createDeployment' | 'listAllRevisions'>,
  desired: DesiredState,
  body: DeploymentCreate,
): Promise<Deployment> {
  const deployment = await client.createDeployment(body);
  const revisions = (await client.listAllRevisions(deployment.id)).items;
  desired.set(deployment.id, {
    kind: 'present',
    deployment,
    target: chooseTarget(deployment, revisions),
    fingerprint: 'f',
  });
  return deployment;
}
