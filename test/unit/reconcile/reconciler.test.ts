// The reconciler's edge cases as fast unit tests, over an in-memory cluster
// behind its narrow reader/writer: an abort is its own outcome, a namespace missing or terminating
// is retried whatever kind meets it first, and a failed revision gets a real retry after a
// transient error. The same cases run against the real API server in
// test/integration/reconcile/edges.test.ts.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Deployment, ResourceSpec, StatusReportBatch } from '../../../src/controlplane/schemas/index.ts';
import { KubeApiError } from '../../../src/kube/index.ts';
import { ObjectCache } from '../../../src/kube/objectCache.ts';
import { secretData } from '../../../src/objects/fields.ts';
import type { KubeObject } from '../../../src/objects/kubeObject.ts';
import {
  AGENT_NAME,
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_GENERATED_KEYS,
  DATABASE_COMPONENT,
  KEPT_VOLUME_DECISION,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../../src/objects/ownership.ts';
import { DesiredState } from '../../../src/reconcile/loop/desiredState.ts';
import type { Target } from '../../../src/reconcile/loop/target.ts';
import { type ReconcileOutcome, WaitingError } from '../../../src/reconcile/outcome.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import { WATCHED_KINDS } from '../../../src/reconcile/policy/watchedKinds.ts';
import { Reconciler } from '../../../src/reconcile/reconciler.ts';
import { InventoryStore } from '../../../src/reconcile/steps/inventoryStore.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { ownedAnnotations } from '../../../src/render/ownedAnnotations.ts';
import { ControlPlaneReporter } from '../../../src/report/controlPlaneReporter.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import { MemoryCluster } from '../../support/memoryCluster.ts';
import { listener, minimalDeployment } from '../../support/renderFixtures.ts';

const logger = pino({ level: 'silent' });
const NAMESPACE = 'apps';

/** The minimal deployment with a Secret, so that a Secret is among the objects written. */
const defaultDeployment: Deployment = {
  ...minimalDeployment,
  secrets: [{ name: 'API_TOKEN', value: 'unit-secret-value' }],
};
const fresh: Target = { revision: undefined, settled: undefined };
const failed: Target = { revision: undefined, settled: 'DEPLOY_FAILED' };

function world(
  target: Target = fresh,
  options: {
    cache?: ObjectCache;
    deployment?: Deployment;
    renderConfig?: RenderConfig;
    config?: ReconcileConfig;
  } = {},
) {
  const deployment = options.deployment ?? defaultDeployment;
  const cluster = new MemoryCluster([NAMESPACE]);
  const sent: StatusReportBatch[] = [];
  const events: string[] = [];
  const metrics = createMetrics({ defaultMetrics: false });
  const reporter = new ControlPlaneReporter({
    sink: { postStatusReports: async (_listenerId, batch) => void sent.push(batch) },
    listenerId: listener.id,
    logger,
    metrics,
  });
  const desired = new DesiredState();
  desired.set(deployment.id, { kind: 'present', deployment, target, fingerprint: 'f1' });
  const config = options.config ?? ReconcileConfig.parse({});
  // The waits' clock (waitingSince.ts): moved by the test, past the grace.
  let nowMs = 0;
  const reconciler = new Reconciler({
    kube: cluster,
    desired,
    inventories: new InventoryStore(cluster, listener.id),
    reporter,
    events: { record: async (_subject, details) => void events.push(details.reason) },
    metrics,
    logger,
    renderConfig: options.renderConfig ?? RenderConfig.parse({}),
    config,
    listener: () => listener,
    allowedNamespaces: undefined,
    now: () => nowMs,
    ...(options.cache ? { cache: options.cache } : {}),
  });
  const reported = async () => {
    await reporter.flush();
    return sent.flatMap((batch) => batch.reports);
  };
  const reconcile = (signal?: AbortSignal) => reconciler.reconcile(deployment.id, signal);
  /**
   * A wait reported in progress, with its reason; once the grace has passed, the next reconcile
   * reports it failed. Returns that last report.
   */
  const failsPastGrace = async (reason: string) => {
    expect((await reported()).at(-1)).toMatchObject({ revision_status: 'DEPLOYING' });
    expect((await reported()).at(-1)?.message).toBeDefined();
    nowMs += config.failureGraceMs;
    const outcome = await reconcile();
    expect(outcome.result).toBe('retry');
    expect(outcome.result === 'retry' && (outcome.error as { reason?: string }).reason).toBe(reason);
    return (await reported()).at(-1);
  };
  return { cluster, reconciler, reconcile, reported, events, desired, failsPastGrace };
}

const writes = <Call extends { verb: string }>(calls: readonly Call[]) =>
  calls.filter((call) => call.verb !== 'get' && call.verb !== 'list');

describe('the reconciler at the edges (in memory)', () => {
  it('converges: every object written, the inventory recorded, the status reported', async () => {
    const { cluster, reconcile, reported, events } = world();
    // Rolling out: looked at again, behind any deployment not yet applied (reconcileWorker).
    expect(await reconcile()).toMatchObject({ result: 'requeue', background: true });
    expect(cluster.names('Secret')).toEqual([`Secret/${NAMESPACE}/hello-secrets`]);
    expect(cluster.names('ConfigMap')).toEqual([
      `ConfigMap/${NAMESPACE}/k8s-listener-inv-${defaultDeployment.id}`,
    ]);
    expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/hello`]);
    expect((await reported()).map((r) => r.revision_status)).toEqual(['DEPLOYING']);
    // A routine rollout is no Event, at the reconcile that started it nor at the next look: its
    // outcome is (the workloads' controllers tell its steps).
    expect(events).toEqual([]);
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(events).toEqual([]);
  });

  it('1. an abort (a lost lease) mid-reconcile is its own outcome: nothing reported, nothing recorded', async () => {
    const { cluster, reconcile, reported, events } = world();
    const lease = new AbortController();
    // The lease is lost as the first object is written.
    cluster.before = ({ verb }) => {
      if (verb === 'apply') lease.abort(new Error('leadership lost'));
    };

    expect(await reconcile(lease.signal)).toEqual({ result: 'aborted' } satisfies ReconcileOutcome);
    expect(await reported()).toEqual([]);
    expect(events).toEqual([]);

    // Nothing recorded as attempted: the next leader's reconcile does the whole work.
    cluster.before = () => undefined;
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/hello`]);
  });

  it.each([
    ['terminating', 403],
    ['missing', 404],
  ] as const)(
    '2. retries a Secret that meets a %s namespace first (by the Status, not its text)',
    async (state, status) => {
      const { cluster, reconcile, reported, failsPastGrace } = world();
      expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
      // The Secret removed by hand, then the namespace gone or going: the Secret is the only
      // object to write, and a Secret's error message is the client's shortened one.
      cluster.remove({ apiVersion: 'v1', kind: 'Secret', namespace: NAMESPACE, name: 'hello-secrets' });
      cluster.setNamespace(NAMESPACE, state);

      const outcome = await reconcile();

      // The applier raises the wait itself, from the API server's Status.
      expect(outcome.result).toBe('retry');
      const error = outcome.result === 'retry' ? outcome.error : undefined;
      expect(error).toBeInstanceOf(WaitingError);
      expect((error as WaitingError).reason).toBe('NamespaceMissing');
      const cause = (error as WaitingError).cause;
      expect(cause).toBeInstanceOf(KubeApiError);
      expect((cause as KubeApiError).kind).toBe('Secret');
      expect((cause as KubeApiError).status).toBe(status);
      expect((cause as KubeApiError).message).not.toContain('terminat');
      // Reported in progress with its reason, failed past the grace; retried all the while.
      expect((await reported()).at(-1)).toMatchObject({ revision_status: 'DEPLOYING' });
      expect((await reported()).at(-1)?.message).toContain(`namespace ${NAMESPACE} does not exist`);
      expect((await failsPastGrace('NamespaceMissing'))?.revision_status).toBe('DEPLOY_FAILED');

      // The namespace back: the retry converges.
      cluster.setNamespace(NAMESPACE, 'active');
      expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
      expect(cluster.names('Secret')).toEqual([`Secret/${NAMESPACE}/hello-secrets`]);
    },
  );

  it('2. a Secret refused for its content is terminal, not retried', async () => {
    const { cluster, reconcile } = world();
    cluster.before = ({ verb, kind }) => {
      if (verb === 'apply' && kind === 'Secret')
        throw new KubeApiError({ verb: 'apply', kind: 'Secret', status: 422, reason: 'Invalid' });
    };
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    if (outcome.result === 'terminal') expect(outcome.error.reason).toBe('ApplyRejected');
  });

  it('3. gives a revision that already failed a real retry after a transient error', async () => {
    const { cluster, reconcile } = world(failed);
    let faults = 1;
    cluster.before = ({ verb, kind }) => {
      if (verb === 'apply' && kind !== 'ConfigMap' && faults-- > 0)
        throw new KubeApiError({ verb: 'apply', kind, status: 503, reason: 'ServiceUnavailable' });
    };

    expect((await reconcile()).result).toBe('retry');
    const before = cluster.calls.length;
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    // The retry did the work: the objects are there.
    expect(writes(cluster.calls.slice(before)).map((c) => c.verb)).toContain('apply');
    expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/hello`]);

    // Once an attempt settled, the same input is not tried again: nothing written.
    const settled = cluster.calls.length;
    expect(await reconcile()).toEqual({ result: 'done', detail: 'settled' } satisfies ReconcileOutcome);
    expect(writes(cluster.calls.slice(settled))).toEqual([]);
  });

  it('3. a failed revision whose first attempt failed for good is not tried again', async () => {
    const { cluster, reconcile } = world(failed);
    cluster.before = ({ verb, kind }) => {
      if (verb === 'apply' && kind === 'Deployment')
        throw new KubeApiError({ verb: 'apply', kind, status: 422, reason: 'Invalid' });
    };
    expect((await reconcile()).result).toBe('terminal');
    const settled = cluster.calls.length;
    expect(await reconcile()).toEqual({ result: 'done', detail: 'settled' } satisfies ReconcileOutcome);
    expect(cluster.calls.length).toBe(settled);
    // A first apply is not dry-run: what it wrote before the refusal (its Secret, first in render
    // order) is deleted, and its inventory with it.
    expect(cluster.calls.filter((c) => c.dryRun)).toEqual([]);
    expect(cluster.calls.filter((c) => c.verb === 'apply').map((c) => c.kind)).toContain('Secret');
    expect(cluster.names()).toEqual([]);
  });

  it('a verdict reached while the served namespaces changed is not final: tried again under the new ones', async () => {
    const { cluster, reconciler, reconcile } = world(failed);
    let refusals = 1;
    cluster.before = ({ verb, kind }) => {
      if (verb === 'apply' && kind === 'Deployment' && refusals-- > 0) {
        // The poller saw the listener's namespaces change while this reconcile ran; its
        // requeue of every deployment is handled after this reconcile ends.
        reconciler.namespacesChanged();
        throw new KubeApiError({ verb: 'apply', kind, status: 422, reason: 'Invalid' });
      }
    };
    expect((await reconcile()).result).toBe('terminal');
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/hello`]);
  });
});

/** A watch cache whose watches have listed every kind in the namespace, and hold nothing. */
function syncedCache(): ObjectCache {
  const cache = new ObjectCache({ indexLabel: LABEL_DEPLOYMENT_ID });
  cache.markSynced([...WATCHED_KINDS, 'Pod'], NAMESPACE);
  return cache;
}

describe('misses of a synced watch (in memory)', () => {
  it('are not asked: every missing object is created with no GET', async () => {
    const { cluster, reconcile } = world(fresh, { cache: syncedCache() });
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/hello`]);
    expect(cluster.calls.filter((c) => c.verb === 'get')).toEqual([]);
  });

  it('never adopt a same-named object of another owner: refused naming it, left as it was', async () => {
    const { cluster, reconcile, reported } = world(fresh, { cache: syncedCache() });
    const foreign = await cluster.create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'hello', namespace: NAMESPACE, labels: { app: 'theirs' }, annotations: {} },
      spec: { ports: [{ port: 81 }] },
    });
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    const message = outcome.result === 'terminal' ? outcome.error.message : '';
    expect(message).toContain(`Service/${NAMESPACE}/hello exists and is not managed by this listener`);
    expect((await reported()).at(-1)?.revision_status).toBe('DEPLOY_FAILED');
    expect(
      await cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NAMESPACE, name: 'hello' }),
    ).toEqual(foreign);
    // Nothing of the deployment is left beside it.
    expect(cluster.names()).toEqual([`Service/${NAMESPACE}/hello`]);
  });
});

/** The default deployment whose pods name `volumes` (besides its own Secret). */
function naming(volumes: NonNullable<ResourceSpec['volumes']>, spec: ResourceSpec = {}): Deployment {
  return {
    ...defaultDeployment,
    source_config: {
      ...defaultDeployment.source_config,
      resource_spec: {
        ...spec,
        volumes,
        volume_mounts: volumes.map((v) => ({ name: v.name, mountPath: `/${v.name}` })),
      },
    },
  };
}

/** A Secret as someone else made it: the platform team (no labels) or the agent, for another deployment. */
function secret(name: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NAMESPACE, labels, annotations: {} },
    data: { k: 'dg==' },
  };
}

const OTHER_LISTENER = '00000000-0000-4000-8000-0000000000aa';
const OTHER_DEPLOYMENT = '00000000-0000-4000-8000-0000000000bb';
const theirs = (listenerId: string) => ({
  [LABEL_MANAGED_BY]: AGENT_NAME,
  [LABEL_LISTENER_ID]: listenerId,
  [LABEL_DEPLOYMENT_ID]: OTHER_DEPLOYMENT,
});

// docs/design.md, "What a pod may name": a name a pod would take whatever is made under later,
// and the agent's objects of another listener.
describe('references of a deployment’s pods (in memory)', () => {
  const loot = naming([{ name: 'loot', secret: { secretName: 'victim-secrets' } }]);

  it('waits for an object that does not exist yet: reported, retried, nothing written', async () => {
    const { cluster, reconcile, reported, failsPastGrace } = world(fresh, { deployment: loot });
    const outcome = await reconcile();
    expect(outcome.result).toBe('retry');
    const error = outcome.result === 'retry' ? outcome.error : undefined;
    expect(error).toBeInstanceOf(WaitingError);
    expect((error as WaitingError).reason).toBe('ReferenceMissing');
    expect((error as WaitingError).message).toContain(
      'Deployment/hello spec.volumes[0].secret.secretName names Secret/victim-secrets, which does not exist yet',
    );
    expect((await reported()).at(-1)?.message).toContain(
      'names Secret/victim-secrets, which does not exist yet',
    );
    const last = await failsPastGrace('ReferenceMissing');
    expect(last?.revision_status).toBe('DEPLOY_FAILED');
    expect(last?.message).toContain('names Secret/victim-secrets, which does not exist yet');
    expect(writes(cluster.calls)).toEqual([]);
    expect(cluster.names()).toEqual([]);

    // Still missing at the next look: still waiting, still nothing written.
    expect((await reconcile()).result).toBe('retry');
    expect(writes(cluster.calls)).toEqual([]);

    // The platform team makes it: the next look applies.
    await cluster.create(secret('victim-secrets'));
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/hello`]);
  });

  it('refuses for good once another deployment made it meanwhile', async () => {
    const { cluster, reconcile, reported } = world(fresh, { deployment: loot });
    expect((await reconcile()).result).toBe('retry');
    await cluster.create(secret('victim-secrets', theirs(listener.id)));
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    if (outcome.result === 'terminal') expect(outcome.error.reason).toBe('ForeignReference');
    expect((await reported()).at(-1)?.message).toContain(
      'spec.volumes[0].secret.secretName names Secret/victim-secrets, which belongs to another deployment',
    );
    expect(cluster.names()).toEqual([`Secret/${NAMESPACE}/victim-secrets`]);
  });

  it.each([
    ['of another listener', theirs(OTHER_LISTENER), 'belongs to another deployment'],
    [
      'with the agent’s label and no listener',
      { ...theirs(OTHER_LISTENER), [LABEL_LISTENER_ID]: '' },
      'belongs to another deployment',
    ],
    ['the agent keeps for itself', { [LABEL_MANAGED_BY]: AGENT_NAME }, 'the agent keeps for itself'],
  ])('refuses an object the agent manages %s', async (_, labels, owner) => {
    const { cluster, reconcile } = world(fresh, { deployment: loot, cache: syncedCache() });
    await cluster.create(secret('victim-secrets', labels));
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    const message = outcome.result === 'terminal' ? outcome.error.message : '';
    expect(message).toContain(`names Secret/victim-secrets, which ${owner}`);
    expect(cluster.names()).toEqual([`Secret/${NAMESPACE}/victim-secrets`]);
  });

  it('names each missing and each foreign reference, and refuses for good when any is foreign', async () => {
    const both = naming([
      { name: 'a', secret: { secretName: 'victim-secrets' } },
      { name: 'b', csi: { driver: 'secrets-store.csi.k8s.io', nodePublishSecretRef: { name: 'not-yet' } } },
    ]);
    // The CSI driver listed, as a platform would: what is tried is the Secret the volume names.
    const { cluster, reconcile } = world(fresh, {
      deployment: both,
      renderConfig: RenderConfig.parse({ policy: { csiDrivers: ['secrets-store.csi.k8s.io'] } }),
    });
    await cluster.create(secret('victim-secrets', theirs(OTHER_LISTENER)));
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    const message = outcome.result === 'terminal' ? outcome.error.message : '';
    expect(message).toContain('spec.volumes[0].secret.secretName names Secret/victim-secrets, which belongs');
    expect(message).toContain(
      'spec.volumes[1].csi.nodePublishSecretRef.name names Secret/not-yet, which does not exist yet',
    );
  });

  it('uses what the platform team made and what it renders itself, its database claim included', async () => {
    const own = naming(
      [
        { name: 'platform', secret: { secretName: 'shared-tls' } },
        { name: 'mine', secret: { secretName: 'hello-secrets' } },
        { name: 'data', persistentVolumeClaim: { claimName: 'data-hello-db-0' } },
      ],
      { db_storage_gi: 1 },
    );
    const { cluster, reconcile } = world(fresh, { deployment: own, cache: syncedCache() });
    await cluster.create(secret('shared-tls'));
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('StatefulSet')).toEqual([`StatefulSet/${NAMESPACE}/hello-db`]);
    // This render's own objects are not looked up as references; what the watch cache does not
    // hold is asked: the platform's Secret, and the claim its StatefulSet makes (once there, it
    // must be this deployment's).
    expect(cluster.calls.filter((c) => c.verb === 'get')).toEqual([
      { verb: 'get', kind: 'Secret', namespace: NAMESPACE },
      { verb: 'get', kind: 'PersistentVolumeClaim', namespace: NAMESPACE },
    ]);
  });
  it('a platform Secret deleted since is no change of owner: the status path stops nothing, and asks nothing', async () => {
    const platform = naming([{ name: 'platform', secret: { secretName: 'shared-tls' } }]);
    const { cluster, reconcile, reported } = world(fresh, { deployment: platform, cache: syncedCache() });
    await cluster.create(secret('shared-tls'));
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    await cluster.delete({ apiVersion: 'v1', kind: 'Secret', namespace: NAMESPACE, name: 'shared-tls' });
    const before = cluster.calls.length;
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.calls.slice(before).filter((c) => c.kind === 'Secret')).toEqual([]);
    expect((await reported()).every((r) => r.revision_status !== 'DEPLOY_FAILED')).toBe(true);
  });
});

// docs/design.md, "What a pod may name": (a) what this same render makes, or (b) a platform object
// that exists. One carrying this deployment's id that this render does not make counts as missing.
describe('references by construction (in memory)', () => {
  const own = { [LABEL_MANAGED_BY]: AGENT_NAME, [LABEL_LISTENER_ID]: listener.id };
  const ofThis = { ...own, [LABEL_DEPLOYMENT_ID]: defaultDeployment.id };
  const configMap = (name: string, labels: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: NAMESPACE, labels, annotations: {} },
    data: { k: 'v' },
  });
  const sidecar = (fields: Record<string, unknown>) => ({
    sidecars: [{ name: 'side', image: 'busybox:1.36', ...fields }],
  });
  const volume = (source: Record<string, unknown>): ResourceSpec => ({
    volumes: [{ name: 'v', ...source }],
    volume_mounts: [{ name: 'v', mountPath: '/v' }],
  });
  const csi = RenderConfig.parse({ policy: { csiDrivers: ['secrets-store.csi.k8s.io'] } });
  interface Route {
    readonly route: string;
    readonly kind: 'Secret' | 'ConfigMap';
    readonly spec: (name: string) => ResourceSpec;
    readonly renderConfig?: RenderConfig;
  }
  const routes: readonly Route[] = [
    {
      route: 'env secretKeyRef',
      kind: 'Secret',
      spec: (n) => sidecar({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: n, key: 'k' } } }] }),
    },
    {
      route: 'env configMapKeyRef',
      kind: 'ConfigMap',
      spec: (n) => sidecar({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: n, key: 'k' } } }] }),
    },
    {
      route: 'envFrom secretRef',
      kind: 'Secret',
      spec: (n) => sidecar({ envFrom: [{ secretRef: { name: n } }] }),
    },
    {
      route: 'envFrom configMapRef',
      kind: 'ConfigMap',
      spec: (n) => sidecar({ envFrom: [{ configMapRef: { name: n } }] }),
    },
    {
      route: 'a secret volume',
      kind: 'Secret',
      spec: (n) => volume({ secret: { secretName: n, optional: true } }),
    },
    {
      route: 'a configMap volume',
      kind: 'ConfigMap',
      spec: (n) => volume({ configMap: { name: n, optional: true } }),
    },
    {
      route: 'a CSI nodePublishSecretRef',
      kind: 'Secret',
      spec: (n) => volume({ csi: { driver: 'secrets-store.csi.k8s.io', nodePublishSecretRef: { name: n } } }),
      renderConfig: csi,
    },
    {
      route: 'a projected secret',
      kind: 'Secret',
      spec: (n) => volume({ projected: { sources: [{ secret: { name: n } }] } }),
    },
    {
      route: 'a projected configMap',
      kind: 'ConfigMap',
      spec: (n) => volume({ projected: { sources: [{ configMap: { name: n } }] } }),
    },
    { route: 'image_pull_secrets', kind: 'Secret', spec: (n) => ({ image_pull_secrets: [{ name: n }] }) },
  ];
  const withSpec = (spec: ResourceSpec): Deployment => ({
    ...defaultDeployment,
    source_config: { ...defaultDeployment.source_config, resource_spec: spec },
  });

  it.each(routes)(
    'by $route, an object of this deployment’s id its render does not make counts as missing: waiting, nothing written',
    async ({ kind, spec, renderConfig }) => {
      const { cluster, reconcile } = world(fresh, {
        deployment: withSpec(spec('old-name')),
        ...(renderConfig ? { renderConfig } : {}),
      });
      await cluster.create(kind === 'Secret' ? secret('old-name', ofThis) : configMap('old-name', ofThis));
      const before = cluster.calls.length;
      const outcome = await reconcile();
      expect(outcome.result).toBe('retry');
      const error = outcome.result === 'retry' ? outcome.error : undefined;
      expect((error as WaitingError).reason).toBe('ReferenceMissing');
      expect((error as WaitingError).message).toContain(
        `names ${kind}/old-name, which carries this deployment's id but is not made by its render`,
      );
      expect(writes(cluster.calls.slice(before))).toEqual([]);
    },
  );

  it.each(routes.filter(({ kind }) => kind === 'Secret'))(
    'by $route, the Secret its own render makes is used',
    async ({ spec, renderConfig }) => {
      const { cluster, reconcile } = world(fresh, {
        deployment: withSpec(spec('hello-secrets')),
        ...(renderConfig ? { renderConfig } : {}),
      });
      expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
      expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/hello`]);
    },
  );

  it('by a persistentVolumeClaim volume: a claim of this deployment’s id its StatefulSets do not bind counts as missing; the one they bind is used', async () => {
    const earlier = naming([{ name: 'v', persistentVolumeClaim: { claimName: 'data-old-db-0' } }]);
    const { cluster, reconcile, desired } = world(fresh, { deployment: earlier });
    await cluster.create(claim('data-old-db-0', ofThis));
    const before = cluster.calls.length;
    const outcome = await reconcile();
    expect(outcome.result).toBe('retry');
    expect(outcome.result === 'retry' ? (outcome.error as WaitingError).reason : '').toBe('ReferenceMissing');
    expect(writes(cluster.calls.slice(before))).toEqual([]);

    // Its claim template's claim, kept under this id, is this render's own.
    const current = naming([{ name: 'v', persistentVolumeClaim: { claimName: 'data-hello-db-0' } }], {
      db_storage_gi: 1,
    });
    await cluster.create(claim('data-hello-db-0', ofThis));
    desired.set(current.id, { kind: 'present', deployment: current, target: fresh, fingerprint: 'f2' });
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('StatefulSet')).toEqual([`StatefulSet/${NAMESPACE}/hello-db`]);
  });

  it('by a claim template: a claim of the platform’s under its name is waited on, not bound', async () => {
    const { cluster, reconcile } = world(fresh, { deployment: naming([], { db_storage_gi: 1 }) });
    await cluster.create(claim('data-hello-db-0', {}));
    const outcome = await reconcile();
    expect(outcome.result === 'retry' ? (outcome.error as WaitingError).reason : '').toBe('ClaimTaken');
    expect(cluster.names('StatefulSet')).toEqual([]);
  });

  it('refuses an object of another listener’s agent that carries no managed-by label', async () => {
    const { cluster, reconcile } = world(fresh, {
      deployment: naming([{ name: 'v', secret: { secretName: 'elsewhere' } }]),
    });
    await cluster.create(secret('elsewhere', { [LABEL_LISTENER_ID]: OTHER_LISTENER }));
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    expect(outcome.result === 'terminal' ? outcome.error.message : '').toContain(
      'names Secret/elsewhere, which the agent keeps for itself',
    );
  });

  // A renamed deployment that still names its own generated Secret of the old name: were that
  // Secret pruned, the next deployment of the old name would get it made anew, under its pods.
  it('a rename that still names the old name’s Secret waits: not pruned, and never another deployment’s', async () => {
    const shop = (id: string, name: string): Deployment => ({
      ...naming([{ name: 'old', secret: { secretName: 'shop-secrets', optional: true } }]),
      id,
      name,
    });
    const shopSecrets = { apiVersion: 'v1', kind: 'Secret', namespace: NAMESPACE, name: 'shop-secrets' };
    const first = shop(defaultDeployment.id, 'shop');
    const { cluster, reconciler, desired } = world(fresh, { deployment: first });
    expect((await reconciler.reconcile(first.id)).result).toMatch(/^(done|requeue)$/);
    const made = await cluster.get(shopSecrets);
    expect(made?.metadata.labels[LABEL_DEPLOYMENT_ID]).toBe(first.id);

    desired.set(first.id, {
      kind: 'present',
      deployment: { ...first, name: 'shop2' },
      target: fresh,
      fingerprint: 'f2',
    });
    const before = cluster.calls.length;
    const outcome = await reconciler.reconcile(first.id);
    expect(outcome.result).toBe('retry');
    expect(outcome.result === 'retry' ? (outcome.error as WaitingError).message : '').toContain(
      "Deployment/shop2 spec.volumes[0].secret.secretName names Secret/shop-secrets, which carries this deployment's id",
    );
    expect(writes(cluster.calls.slice(before))).toEqual([]);
    const kept = await cluster.get(shopSecrets);
    expect(kept?.metadata.uid).toBe(made?.metadata.uid);
    expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/shop`]);

    // Another deployment named `shop` cannot have its own `shop-secrets` made under the first's pods.
    const second = shop(OTHER_DEPLOYMENT, 'shop');
    desired.set(second.id, { kind: 'present', deployment: second, target: fresh, fingerprint: 'g1' });
    expect((await reconciler.reconcile(second.id)).result).toBe('terminal');
    const after = await cluster.get(shopSecrets);
    expect(after?.metadata.uid).toBe(made?.metadata.uid);
    expect(after?.metadata.labels[LABEL_DEPLOYMENT_ID]).toBe(first.id);
  });
});

// A target that changed owner since it was judged, caught at the next look.
describe('a reference whose target changed owner (in memory)', () => {
  const platform = naming([{ name: 'platform', secret: { secretName: 'shared-tls' } }]);
  const shared = { apiVersion: 'v1', kind: 'Secret', namespace: NAMESPACE, name: 'shared-tls' };

  /** The platform's Secret deleted, and the agent's of another deployment made under its name. */
  async function takenOver(cluster: MemoryCluster, cache: ObjectCache): Promise<void> {
    await cluster.delete(shared);
    const theirsNow = await cluster.create(secret('shared-tls', theirs(listener.id)));
    cache.observe({ type: 'ADDED', object: theirsNow });
  }

  it('a converged look at a platform reference sends no request', async () => {
    const cache = syncedCache();
    const { cluster, reconcile } = world(fresh, { deployment: platform, cache });
    await cluster.create(secret('shared-tls'));
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    const before = cluster.calls.length;
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.calls.slice(before).filter((c) => c.verb === 'get' || c.verb === 'list')).toEqual([]);
  });

  it('is caught on the status path: the workload naming it deleted, DEPLOY_FAILED naming field and object, an Event', async () => {
    const cache = syncedCache();
    const { cluster, reconcile, reported, events } = world(fresh, { deployment: platform, cache });
    await cluster.create(secret('shared-tls'));
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/hello`]);

    await takenOver(cluster, cache);
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    if (outcome.result === 'terminal') expect(outcome.error.reason).toBe('ForeignReference');
    expect(cluster.names('Deployment')).toEqual([]);
    const last = (await reported()).at(-1);
    expect(last?.revision_status).toBe('DEPLOY_FAILED');
    expect(last?.message).toContain(
      'Deployment/hello spec.volumes[0].secret.secretName names Secret/shared-tls, which belongs to another deployment',
    );
    expect(last?.message).toContain('Deployment/hello deleted');
    expect(events).toContain('ReferenceChangedOwner');
    // Its Secret and inventory stay; the other deployment's Secret is untouched.
    expect(cluster.names('Secret')).toEqual([
      `Secret/${NAMESPACE}/hello-secrets`,
      `Secret/${NAMESPACE}/shared-tls`,
    ]);

    // The next look (a full one) refuses again, and makes nothing that would run on it.
    expect((await reconcile()).result).toBe('terminal');
    expect(cluster.names('Deployment')).toEqual([]);
  });

  it('is caught by a full reconcile too, and only a workload that runs on it is taken off it', async () => {
    const cache = syncedCache();
    const { cluster, reconcile, desired } = world(fresh, { deployment: platform, cache });
    await cluster.create(secret('shared-tls'));
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    await takenOver(cluster, cache);
    // A new input at the same time: the full path judges it.
    const changed = { ...platform, secrets: [{ name: 'API_TOKEN', value: 'another-value' }] };
    desired.set(platform.id, { kind: 'present', deployment: changed, target: fresh, fingerprint: 'f2' });
    expect((await reconcile()).result).toBe('terminal');
    expect(cluster.names('Deployment')).toEqual([]);
  });
});

// One of the render's own objects, deleted by hand and made anew under its name by another
// deployment: the workloads whose live template names it would take the other's at their next
// pod start. The full path finds the name taken (the status path sends it there: the uid moved).
describe("one of the render's own objects held by another owner (in memory)", () => {
  const shop2: Deployment = {
    ...defaultDeployment,
    name: 'shop2',
    source_config: {
      ...defaultDeployment.source_config,
      resource_spec: {
        sidecars: [
          {
            name: 'side',
            image: 'busybox:1.36',
            envFrom: [{ secretRef: { name: 'shop2-secrets' } }],
          },
        ],
      },
    },
  };
  const shopSecrets = { apiVersion: 'v1', kind: 'Secret', namespace: NAMESPACE, name: 'shop2-secrets' };

  it.each([
    ['the watch cache', syncedCache],
    ['reads', () => undefined],
  ])(
    'seen through %s: the workloads naming it deleted, DEPLOY_FAILED naming the fields and the object, an Event',
    async (_, makeCache) => {
      const cache = makeCache();
      const { cluster, reconcile, reported, events } = world(fresh, {
        deployment: shop2,
        ...(cache ? { cache } : {}),
      });
      expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
      expect(cluster.names('Deployment')).toEqual([`Deployment/${NAMESPACE}/shop2`]);

      const ours = await cluster.get(shopSecrets);
      await cluster.delete(shopSecrets);
      if (ours) cache?.observe({ type: 'DELETED', object: ours });
      const theirsNow = await cluster.create(secret('shop2-secrets', theirs(listener.id)));
      cache?.observe({ type: 'ADDED', object: theirsNow });

      const outcome = await reconcile();
      expect(outcome.result).toBe('terminal');
      if (outcome.result === 'terminal') expect(outcome.error.reason).toBe('ApplyRejected');
      expect(cluster.names('Deployment')).toEqual([]);
      const last = (await reported()).at(-1);
      expect(last?.revision_status).toBe('DEPLOY_FAILED');
      expect(last?.message).toContain(
        `Secret/${NAMESPACE}/shop2-secrets belongs to another deployment of this listener`,
      );
      expect(last?.message).toContain(
        'Deployment/shop2 spec.containers[1](side).envFrom[0].secretRef.name names Secret/shop2-secrets',
      );
      expect(last?.message).toContain('Deployment/shop2 deleted');
      expect(events).toContain('ReferenceChangedOwner');
      // The other deployment's Secret is untouched.
      expect((await cluster.get(shopSecrets))?.metadata.uid).toBe(theirsNow.metadata.uid);

      // The next look refuses again, and makes nothing that would run on it.
      expect((await reconcile()).result).toBe('terminal');
      expect(cluster.names('Deployment')).toEqual([]);
    },
  );

  // Its database credentials made anew by another deployment of this listener read as a kept
  // volume's, waited on for a hand-over: the pods that read them are taken off them meanwhile.
  it('its database credentials: the workloads reading them deleted while the hand-over is waited on', async () => {
    const cache = syncedCache();
    const withDatabase = naming([], { db_storage_gi: 1 });
    const { failsPastGrace, cluster, reconcile } = world(fresh, {
      deployment: withDatabase,
      cache,
    });
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('StatefulSet')).toEqual([`StatefulSet/${NAMESPACE}/hello-db`]);

    const credentials = { ...shopSecrets, name: 'hello-db-credentials' };
    const ours = await cluster.get(credentials);
    await cluster.delete(credentials);
    if (ours) cache.observe({ type: 'DELETED', object: ours });
    const theirsNow = await cluster.create({
      ...secret('hello-db-credentials'),
      metadata: {
        name: 'hello-db-credentials',
        namespace: NAMESPACE,
        labels: { ...theirs(listener.id), [LABEL_COMPONENT]: DATABASE_COMPONENT },
        annotations: { [ANNOTATION_CREATE_ONLY]: 'true', [ANNOTATION_GENERATED_KEYS]: 'password' },
      },
    });
    cache.observe({ type: 'ADDED', object: theirsNow });

    const outcome = await reconcile();
    expect(outcome.result).toBe('retry');
    const error = outcome.result === 'retry' ? (outcome.error as WaitingError) : undefined;
    expect(error?.reason).toBe('ClaimTaken');
    expect(error?.message).toContain('StatefulSet/hello-db deleted');
    expect(error?.message).toMatch(
      /Deployment\/hello spec\.containers\[0\]\(app\)\.env\[\d+\]\.valueFrom\.secretKeyRef\.name names Secret\/hello-db-credentials/,
    );
    expect(cluster.names('StatefulSet')).toEqual([]);
    expect(cluster.names('Deployment')).toEqual([]);
    expect((await failsPastGrace('ClaimTaken'))?.revision_status).toBe('DEPLOY_FAILED');
    expect((await cluster.get(credentials))?.metadata.uid).toBe(theirsNow.metadata.uid);
  });
});

// docs/design.md, "All or nothing", on a first apply: what runs nothing is written first, then every
// workload but the first is dry-run before any is written.
describe('a first apply of several workloads (in memory)', () => {
  const several = naming([], { queue_min_scale: 1, db_storage_gi: 1 });

  it('writes what runs nothing, dry-runs every workload but the first, then writes the workloads', async () => {
    const { cluster, reconcile } = world(fresh, { deployment: several });
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    const sent = writes(cluster.calls)
      .filter((c) => c.kind !== 'ConfigMap')
      .map((c) => `${c.kind}${c.dryRun ? ' (dry run)' : ''}`);
    const isWorkload = (c: string) => /^(Deployment|StatefulSet)/.test(c);
    const firstDryRun = sent.findIndex((c) => c.endsWith('(dry run)'));
    // What runs nothing first (the Secret, Services, NetworkPolicies), none of it dry-run…
    expect(sent.slice(0, firstDryRun).some(isWorkload)).toBe(false);
    expect(sent.slice(0, firstDryRun)).toContain('Secret');
    // …then the dry runs of the workloads but the first, then the workloads, StatefulSets last.
    expect(sent.slice(firstDryRun, firstDryRun + 2).sort()).toEqual([
      'Deployment (dry run)',
      'StatefulSet (dry run)',
    ]);
    expect(sent.slice(firstDryRun + 2)).toEqual(['Deployment', 'Deployment', 'StatefulSet']);
  });

  it.each([
    ['the second Deployment', 'Deployment'],
    ['the StatefulSet', 'StatefulSet'],
  ])('refused at the dry run of %s: no workload written, the rest undone', async (_, refusedKind) => {
    const { cluster, reconcile, reported } = world(fresh, { deployment: several });
    cluster.before = ({ verb, kind, dryRun }) => {
      if (verb === 'apply' && kind === refusedKind && dryRun)
        throw new KubeApiError({ verb: 'apply', kind, status: 422, reason: 'Invalid' });
    };
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    expect((await reported()).at(-1)?.revision_status).toBe('DEPLOY_FAILED');
    const workloadWrites = writes(cluster.calls).filter(
      (c) => (c.kind === 'Deployment' || c.kind === 'StatefulSet') && !c.dryRun,
    );
    expect(workloadWrites).toEqual([]);
    // The Secret, Services and policies written first are deleted, the inventory too.
    expect(cluster.calls.filter((c) => c.verb === 'delete').length).toBeGreaterThan(0);
    expect(cluster.names()).toEqual([]);
  });
});

/** A claim as the StatefulSet controller (or the platform team) left it. */
function claim(name: string, labels: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NAMESPACE, labels, annotations: {} },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  };
}

// A StatefulSet's controller binds whatever claim already has the name of its template's: the
// claims it will bind are references like any volume a pod names.
describe('the claims a StatefulSet will bind (in memory)', () => {
  const withDatabase = naming([], { db_storage_gi: 1 });
  const ours = { [LABEL_MANAGED_BY]: AGENT_NAME, [LABEL_LISTENER_ID]: listener.id };

  it.each([
    [
      'a deleted deployment kept',
      { ...ours, [LABEL_DEPLOYMENT_ID]: OTHER_DEPLOYMENT },
      `belongs to deployment ${OTHER_DEPLOYMENT}`,
    ],
    ['the platform team made', {}, 'carries no deployment id'],
  ])(
    'waits while one %s is there, writing nothing; goes on once it is handed over',
    async (_, labels, whose) => {
      const { failsPastGrace, cluster, reconcile } = world(fresh, {
        deployment: withDatabase,
        cache: syncedCache(),
      });
      await cluster.create(claim('data-hello-db-0', labels));
      const before = cluster.calls.length;
      const outcome = await reconcile();
      expect(outcome.result).toBe('retry');
      const error = outcome.result === 'retry' ? outcome.error : undefined;
      expect((error as WaitingError).reason).toBe('ClaimTaken');
      expect((error as WaitingError).message).toContain(
        `StatefulSet/hello-db spec.volumeClaimTemplates[0](data) would bind PersistentVolumeClaim/data-hello-db-0, which exists and ${whose}: ${KEPT_VOLUME_DECISION}`,
      );
      // Whose it is and that the platform team decides: never an invitation to relabel it.
      expect((error as WaitingError).message).not.toContain(`${LABEL_DEPLOYMENT_ID}=`);
      expect((await failsPastGrace('ClaimTaken'))?.revision_status).toBe('DEPLOY_FAILED');
      expect(writes(cluster.calls.slice(before))).toEqual([]);

      // The platform team relabels it: the same revision goes on, its StatefulSet written.
      await cluster.mergePatch(
        { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: NAMESPACE, name: 'data-hello-db-0' },
        { metadata: { labels: { [LABEL_DEPLOYMENT_ID]: withDatabase.id } } },
      );
      expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
      expect(cluster.names('StatefulSet')).toEqual([`StatefulSet/${NAMESPACE}/hello-db`]);
    },
  );

  const credentialsRef = {
    apiVersion: 'v1',
    kind: 'Secret',
    namespace: NAMESPACE,
    name: 'hello-db-credentials',
  } as const;

  it("waits while the credentials kept with a deleted deployment's volume are there; goes on with their password once handed over", async () => {
    // No watch cache: each read asks the cluster, as a watch that delivered every change would tell.
    const { failsPastGrace, cluster, reconcile } = world(fresh, { deployment: withDatabase });
    const password = Buffer.from('the-volume-password').toString('base64');
    await cluster.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: credentialsRef.name,
        namespace: NAMESPACE,
        labels: { ...ours, [LABEL_COMPONENT]: DATABASE_COMPONENT, [LABEL_DEPLOYMENT_ID]: OTHER_DEPLOYMENT },
        annotations: { [ANNOTATION_CREATE_ONLY]: 'true', [ANNOTATION_GENERATED_KEYS]: 'password' },
      },
      data: { password },
    });
    const before = cluster.calls.length;
    const outcome = await reconcile();
    expect(outcome.result).toBe('retry');
    const error = outcome.result === 'retry' ? (outcome.error as WaitingError) : undefined;
    expect(error?.reason).toBe('ClaimTaken');
    expect(error?.message).toContain(
      `Secret/hello-db-credentials, the password of a kept database volume, exists and belongs to deployment ${OTHER_DEPLOYMENT}: ${KEPT_VOLUME_DECISION}`,
    );
    expect(error?.message).not.toContain(`${LABEL_DEPLOYMENT_ID}=`);
    expect((await failsPastGrace('ClaimTaken'))?.revision_status).toBe('DEPLOY_FAILED');
    expect(writes(cluster.calls.slice(before))).toEqual([]);

    await cluster.mergePatch(credentialsRef, {
      metadata: { labels: { [LABEL_DEPLOYMENT_ID]: withDatabase.id } },
    });
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('StatefulSet')).toEqual([`StatefulSet/${NAMESPACE}/hello-db`]);
    expect((await cluster.get(credentialsRef))?.data).toEqual({ password });
  });

  const ownDatabase: Deployment = {
    ...withDatabase,
    secrets: [
      ...(withDatabase.secrets ?? []),
      { name: 'POSTGRES_URI_CUSTOM', value: 'postgresql://app:elsewhere@db.example.test:5432/app' },
    ],
  };

  /** The deployment changed in the control plane: `deployment` desired under a new fingerprint. */
  const change = (desired: DesiredState, deployment: Deployment, fingerprint: string) =>
    desired.set(deployment.id, { kind: 'present', deployment, target: fresh, fingerprint });

  it('keeps the credentials of a database the deployment drops, and opens it again with them', async () => {
    const { cluster, reconcile, desired } = world(fresh, { deployment: withDatabase });
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    const made = await cluster.get(credentialsRef);
    // Generated at its create (the in-memory cluster keeps stringData as sent).
    expect(secretData(made).stringData.password).toMatch(/.{16,}/);

    change(desired, ownDatabase, 'f2');
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('StatefulSet')).toEqual([]);
    expect((await cluster.get(credentialsRef))?.metadata.uid).toBe(made?.metadata.uid);

    change(desired, withDatabase, 'f3');
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('StatefulSet')).toEqual([`StatefulSet/${NAMESPACE}/hello-db`]);
    const again = await cluster.get(credentialsRef);
    expect(again?.metadata.uid).toBe(made?.metadata.uid);
    expect(secretData(again).stringData).toEqual(secretData(made).stringData);
  });

  it.each([
    [true, [`Secret/${NAMESPACE}/hello-db-credentials`]],
    [false, []],
  ])(
    'deletes a deployment that dropped its database with its credentials only when volumes are not kept (keepDatabaseVolumes %s)',
    async (keepDatabaseVolumes, left) => {
      const config = ReconcileConfig.parse({ prune: { keepDatabaseVolumes } });
      const { cluster, reconcile, desired } = world(fresh, { deployment: withDatabase, config });
      expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
      // Dropped first: the credentials leave the inventory and are found by their labels.
      change(desired, ownDatabase, 'f2');
      expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
      expect(cluster.names('Secret')).toContain(`Secret/${NAMESPACE}/hello-db-credentials`);

      desired.set(ownDatabase.id, { kind: 'gone' });
      await reconcile();
      expect(cluster.names('Secret')).toEqual(left);
      expect(cluster.names('ConfigMap')).toEqual([]);
    },
  );

  it('re-uses a kept claim of the same deployment id', async () => {
    const { cluster, reconcile } = world(fresh, { deployment: withDatabase, cache: syncedCache() });
    await cluster.create(claim('data-hello-db-0', { ...ours, [LABEL_DEPLOYMENT_ID]: withDatabase.id }));
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('StatefulSet')).toEqual([`StatefulSet/${NAMESPACE}/hello-db`]);
  });
});

// docs/design.md, "Database volumes are kept": a rename keeps the earlier name's volume, within a bound.
describe('the volumes of a renamed deployment (in memory)', () => {
  const withDatabase = naming([], { db_storage_gi: 1 });
  const named = (name: string): Deployment => ({ ...withDatabase, name });
  /** The claim the StatefulSet controller makes for the database of `name`, made on `day`. */
  const claimOf = (name: string, day: number, deploymentId = withDatabase.id): KubeObject => {
    const made = claim(`data-${name}-db-0`, {
      [LABEL_MANAGED_BY]: AGENT_NAME,
      [LABEL_LISTENER_ID]: listener.id,
      [LABEL_DEPLOYMENT_ID]: deploymentId,
      [LABEL_COMPONENT]: DATABASE_COMPONENT,
      'app.kubernetes.io/instance': name,
    });
    const metadata = { ...made.metadata, creationTimestamp: `2026-01-0${day}T00:00:00Z` };
    return { ...made, metadata };
  };
  /** Renamed through `names`, each database's claim made as its StatefulSet ran. */
  async function renamed(names: readonly string[], config?: ReconcileConfig) {
    const first = names[0] ?? '';
    const made = world(fresh, { deployment: named(first), ...(config ? { config } : {}) });
    for (const [i, name] of names.entries()) {
      made.desired.set(withDatabase.id, {
        kind: 'present',
        deployment: named(name),
        target: fresh,
        fingerprint: `f${i}`,
      });
      expect((await made.reconcile()).result, name).toMatch(/^(done|requeue)$/);
      await made.cluster.create(claimOf(name, i + 1));
    }
    return made;
  }
  const claims = (cluster: MemoryCluster) => cluster.names('PersistentVolumeClaim');
  const credentials = (cluster: MemoryCluster) =>
    cluster.names('Secret').filter((name) => name.endsWith('-db-credentials'));

  it('keeps the current name’s volume and one earlier name’s after four renames: the oldest go, claims with their credentials', async () => {
    const { cluster } = await renamed(['shop-1', 'shop-2', 'shop-3', 'shop-4', 'shop-5']);
    expect(claims(cluster)).toEqual([
      `PersistentVolumeClaim/${NAMESPACE}/data-shop-4-db-0`,
      `PersistentVolumeClaim/${NAMESPACE}/data-shop-5-db-0`,
    ]);
    expect(credentials(cluster)).toEqual([
      `Secret/${NAMESPACE}/shop-4-db-credentials`,
      `Secret/${NAMESPACE}/shop-5-db-credentials`,
    ]);
    // Deleted by uid, as prune does.
    const deletes = cluster.calls.filter((c) => c.verb === 'delete' && c.kind === 'PersistentVolumeClaim');
    expect(deletes).toHaveLength(3);
  });

  it('frees an earlier name for another tenant once its volume is gone', async () => {
    const { cluster, reconciler, desired } = await renamed(['shop', 'shop-2', 'shop-3']);
    expect(claims(cluster)).toEqual([
      `PersistentVolumeClaim/${NAMESPACE}/data-shop-2-db-0`,
      `PersistentVolumeClaim/${NAMESPACE}/data-shop-3-db-0`,
    ]);
    const other: Deployment = { ...named('shop'), id: OTHER_DEPLOYMENT };
    desired.set(other.id, { kind: 'present', deployment: other, target: fresh, fingerprint: 'o1' });
    expect((await reconciler.reconcile(other.id)).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('StatefulSet')).toContain(`StatefulSet/${NAMESPACE}/shop-db`);
  });

  it.each([
    [{ keptVolumesPerDeployment: 2 }, ['shop-2', 'shop-3', 'shop-4']],
    [{ keptVolumesPerDeployment: 0 }, ['shop-4']],
    [{ keepDatabaseVolumes: false, keptVolumesPerDeployment: 3 }, ['shop-4']],
  ])('keeps as reconcile.prune says (%j)', async (prune, left) => {
    const { cluster } = await renamed(
      ['shop-1', 'shop-2', 'shop-3', 'shop-4'],
      ReconcileConfig.parse({ prune }),
    );
    // The last name's claim came after its reconcile: the earlier ones were judged then.
    expect(claims(cluster)).toEqual(
      left.map((name) => `PersistentVolumeClaim/${NAMESPACE}/data-${name}-db-0`),
    );
    expect(credentials(cluster)).toEqual(left.map((name) => `Secret/${NAMESPACE}/${name}-db-credentials`));
  });

  it('finishes a rename cut short at the next full reconcile, from the claims its watch cache holds', async () => {
    // Earlier names' claims left (a reconcile stopped after its prune), nothing stale any more.
    const cache = syncedCache();
    const made = world(fresh, { deployment: named('shop-4'), cache });
    for (const [i, name] of ['shop-1', 'shop-2', 'shop-3'].entries())
      cache.observe({ type: 'ADDED', object: await made.cluster.create(claimOf(name, i + 1)) });
    expect((await made.reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(claims(made.cluster)).toEqual([`PersistentVolumeClaim/${NAMESPACE}/data-shop-3-db-0`]);
  });

  it('never touches the volume of another deployment, or of another listener', async () => {
    const made = world(fresh, { deployment: named('shop-1') });
    await made.cluster.create(claimOf('shop-0', 1, OTHER_DEPLOYMENT));
    const elsewhere = claimOf('shop-9', 1);
    await made.cluster.create({
      ...elsewhere,
      metadata: {
        ...elsewhere.metadata,
        labels: { ...elsewhere.metadata.labels, [LABEL_LISTENER_ID]: OTHER_LISTENER },
      },
    });
    for (const [i, name] of ['shop-1', 'shop-2', 'shop-3'].entries()) {
      made.desired.set(withDatabase.id, {
        kind: 'present',
        deployment: named(name),
        target: fresh,
        fingerprint: `f${i}`,
      });
      expect((await made.reconcile()).result).toMatch(/^(done|requeue)$/);
      await made.cluster.create(claimOf(name, i + 2));
    }
    expect(claims(made.cluster)).toEqual([
      `PersistentVolumeClaim/${NAMESPACE}/data-shop-0-db-0`,
      `PersistentVolumeClaim/${NAMESPACE}/data-shop-2-db-0`,
      `PersistentVolumeClaim/${NAMESPACE}/data-shop-3-db-0`,
      `PersistentVolumeClaim/${NAMESPACE}/data-shop-9-db-0`,
    ]);
  });
});

describe('a ServiceAccount token Secret (in memory)', () => {
  it('is refused whatever else allows it, naming the field', async () => {
    const token = naming([{ name: 'token', secret: { secretName: 'builder-token' } }]);
    const { cluster, reconcile } = world(fresh, { deployment: token, cache: syncedCache() });
    await cluster.create({ ...secret('builder-token'), type: 'kubernetes.io/service-account-token' });
    const outcome = await reconcile();
    expect(outcome.result).toBe('terminal');
    if (outcome.result === 'terminal') expect(outcome.error.reason).toBe('ForeignReference');
    expect(outcome.result === 'terminal' ? outcome.error.message : '').toContain(
      'Deployment/hello spec.volumes[0].secret.secretName names Secret/builder-token, which holds a ServiceAccount token',
    );
    expect(cluster.names('Deployment')).toEqual([]);
  });
});

describe('a routed host (in memory)', () => {
  const routing = RenderConfig.parse({
    ingress: { className: 'nginx', allowedHostSuffixes: ['example.test'] },
  });
  const at = (host: string): Deployment => ({
    ...defaultDeployment,
    source_config: { ...defaultDeployment.source_config, custom_url: `https://${host}/` },
  });
  const ingress = (name: string, host: string, labels: Record<string, string>): KubeObject => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace: NAMESPACE, labels, annotations: {} },
    spec: { rules: [{ host }] },
  });

  it.each([
    [
      'another deployment of this listener',
      ingress('shop', 'shop.example.test', theirs(listener.id)),
      `deployment ${OTHER_DEPLOYMENT}`,
    ],
    [
      'an Ingress the agent does not manage',
      ingress('platform', 'SHOP.example.test', {}),
      `Ingress ${NAMESPACE}/platform, which this agent does not manage`,
    ],
  ])('already routed to %s is refused, nothing written', async (_, holder, named) => {
    const { cluster, reconcile } = world(fresh, {
      deployment: at('shop.example.test'),
      cache: syncedCache(),
      renderConfig: routing,
    });
    await cluster.create(holder);
    const before = cluster.calls.length;
    const outcome = await reconcile();
    expect(outcome.result).toBe('retry');
    const error = outcome.result === 'retry' ? (outcome.error as WaitingError) : undefined;
    expect(error?.reason).toBe('HostTaken');
    expect(error?.message).toContain(
      `source_config.custom_url: host shop.example.test is already routed to ${named}`,
    );
    expect(writes(cluster.calls.slice(before))).toEqual([]);
  });

  // One registry across both kinds: an agent that renders one kind sees the holders of the other.
  const gatewayRouting = RenderConfig.parse({
    gateway: { parentRefs: [{ name: 'shared', namespace: 'gateways' }] },
    ingress: { allowedHostSuffixes: ['example.test'] },
  });
  const httpRoute = (name: string, host: string, labels: Record<string, string>): KubeObject => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: NAMESPACE, labels, annotations: {} },
    spec: { hostnames: [host] },
  });
  it.each([
    [
      'an HTTPRoute, with a Gateway configured, of a host an Ingress serves',
      gatewayRouting,
      ingress('platform', 'shop.example.test', {}),
      `Ingress ${NAMESPACE}/platform, which this agent does not manage`,
      'HTTPRoute',
    ],
    [
      'an Ingress of a host an HTTPRoute of another deployment serves',
      routing,
      httpRoute('shop', 'shop.example.test', theirs(listener.id)),
      `deployment ${OTHER_DEPLOYMENT}`,
      'Ingress',
    ],
  ])('refuses %s, nothing written', async (_, renderConfig, holder, named, kind) => {
    const { cluster, reconcile } = world(fresh, {
      deployment: at('shop.example.test'),
      cache: syncedCache(),
      renderConfig,
    });
    await cluster.create(holder);
    const before = cluster.calls.length;
    const outcome = await reconcile();
    expect(outcome.result).toBe('retry');
    const error = outcome.result === 'retry' ? (outcome.error as WaitingError) : undefined;
    expect(error?.reason).toBe('HostTaken');
    expect(error?.message).toContain(
      `source_config.custom_url: host shop.example.test is already routed to ${named}`,
    );
    expect(writes(cluster.calls.slice(before))).toEqual([]);
    expect(cluster.names(kind)).toEqual([]);
  });

  it('fails closed when it may not list the kind it does not render: nothing written', async () => {
    const { cluster, reconcile } = world(fresh, {
      deployment: at('shop.example.test'),
      cache: syncedCache(),
      renderConfig: gatewayRouting,
    });
    cluster.before = ({ verb, kind, namespace }) => {
      if (verb === 'list' && kind === 'Ingress')
        throw new KubeApiError({ verb, kind, namespace, status: 403, reason: 'Forbidden' });
    };
    const before = cluster.calls.length;
    const outcome = await reconcile();
    expect(outcome.result).toBe('retry');
    const error = outcome.result === 'retry' ? (outcome.error as WaitingError) : undefined;
    expect(error?.reason).toBe('HostsUnreadable');
    expect(error?.message).toContain(`may not list Ingress objects in namespace ${NAMESPACE}`);
    expect(writes(cluster.calls.slice(before))).toEqual([]);
  });

  it('is taken when free, and kept by its first holder', async () => {
    const { cluster, reconcile } = world(fresh, {
      deployment: at('shop.example.test'),
      cache: syncedCache(),
      renderConfig: routing,
    });
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    expect(cluster.names('Ingress')).toEqual([`Ingress/${NAMESPACE}/hello`]);
  });
});

// An annotation the agent writes beside its own (an ingress controller's auth and allow-list, as
// the platform configures them): an edit of one moves no generation, and is repaired at the next
// look all the same, through a watch cache that keeps it (render/ownedAnnotations).
describe('an annotation the agent writes, edited by hand (in memory)', () => {
  const AUTH_URL = 'nginx.ingress.kubernetes.io/auth-url';
  const WHITELIST = 'nginx.ingress.kubernetes.io/whitelist-source-range';
  const rendered = { [AUTH_URL]: 'https://auth.example.test/check', [WHITELIST]: '10.0.0.0/8' };
  const routing = RenderConfig.parse({
    ingress: { className: 'nginx', allowedHostSuffixes: ['example.test'], annotations: rendered },
  });
  const routed: Deployment = {
    ...defaultDeployment,
    source_config: { ...defaultDeployment.source_config, custom_url: 'https://shop.example.test/' },
  };
  const ref = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: NAMESPACE, name: 'hello' };

  it.each([
    ['removed', { [AUTH_URL]: null }],
    ['changed', { [WHITELIST]: '0.0.0.0/0' }],
  ])('one %s is written back at the next look', async (_how, edit) => {
    const cache = new ObjectCache({
      indexLabel: LABEL_DEPLOYMENT_ID,
      keptAnnotations: ownedAnnotations(routing),
    });
    const { cluster, reconcile } = world(fresh, { deployment: routed, cache, renderConfig: routing });
    // Each edit reaches the cache as the watch would bring it.
    const edited = async (patch: Record<string, unknown>) =>
      cache.observe({ type: 'MODIFIED', object: await cluster.mergePatch(ref, patch) });
    expect((await reconcile()).result).toMatch(/^(done|requeue)$/);
    // The API server gives an Ingress a generation, which an edit of its metadata leaves as it
    // was; the in-memory cluster keeps none of its own.
    await edited({ metadata: { generation: 1 } });
    await reconcile();
    const settled = cluster.calls.length;
    await reconcile();
    expect(writes(cluster.calls.slice(settled)).filter((c) => c.kind === 'Ingress')).toEqual([]);

    await edited({ metadata: { annotations: edit } });
    expect(cache.get(ref)?.metadata.generation).toBe(1);
    const before = cluster.calls.length;
    await reconcile();
    expect(writes(cluster.calls.slice(before)).map((c) => `${c.verb} ${c.kind}`)).toContain('apply Ingress');
    expect((await cluster.get(ref))?.metadata.annotations).toMatchObject(rendered);
    // The cache holds what the agent writes, and so sees the repair.
    expect(cache.get(ref)?.metadata.annotations).toMatchObject(rendered);
  });
});
