// The security model, as an attacker with only a control-plane account would try it, against the real agent
// and API server: a second deployment in the same namespace that names the first one's database
// volume, generated Secrets or inventory gets nothing — it is refused, naming each reference, and
// nothing of it is written — while the first keeps running untouched. Naming them before the
// first exists gets nothing either (held until they exist, then refused), nor does naming an
// object the agent keeps for another listener's deployment.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { KubeClient, type LiveKubeObject } from '../../../src/kube/index.ts';
import { loadDigestKey } from '../../../src/manager/digestKey.ts';
import {
  AGENT_NAME,
  KEPT_VOLUME_DECISION,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../../src/objects/ownership.ts';
import { chooseTarget } from '../../../src/reconcile/loop/target.ts';
import { inventoryName } from '../../../src/reconcile/steps/inventoryStore.ts';
import { RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import { app, revisionStatus, useAgentWorld, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

/** The platform's wildcard certificate, which every rendered Ingress serves. */
const WILDCARD_TLS = 'platform-wildcard-tls';
// The thief's CSI volume names its driver as a platform would list it: what is tried is the
// Secret it names, not a driver the platform never allowed.
const setup = useAgentWorld({
  render: {
    policy: { csiDrivers: ['secrets-store.csi.k8s.io'] },
    ingress: { className: 'nginx', tlsSecretName: WILDCARD_TLS, allowedHostSuffixes: ['example.test'] },
  },
});

const source = (resource_spec: Record<string, unknown>) => ({
  source_config: {
    listener_id: setup.world.listenerId,
    listener_config: { k8s_namespace: setup.ns },
    resource_spec,
  },
});

describe("another deployment's objects", () => {
  it('cannot be mounted, read as variables or named as pull secrets by a deployment beside it', async () => {
    const victim = await setup.world.client.createDeployment(
      app(
        setup.world,
        'victim',
        setup.ns,
        source({ min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, db_storage_gi: 1 }),
      ),
    );
    await waitForRevision(setup.world, victim, 'DEPLOYED');

    const thief = await setup.world.client.createDeployment(
      app(setup.world, 'thief', setup.ns, {
        ...source({
          min_scale: 1,
          max_scale: 1,
          cpu: 0.05,
          memory_mb: 32,
          volumes: [
            { name: 'loot', persistentVolumeClaim: { claimName: 'data-victim-db-0' } },
            { name: 'creds', secret: { secretName: 'victim-db-credentials' } },
            { name: 'books', configMap: { name: inventoryName(victim.id) } },
            // A CSI driver is handed the Secret it names at mount time.
            {
              name: 'driver',
              csi: { driver: 'secrets-store.csi.k8s.io', nodePublishSecretRef: { name: 'victim-secrets' } },
            },
          ],
          volume_mounts: [
            { name: 'loot', mountPath: '/loot' },
            { name: 'creds', mountPath: '/creds' },
            { name: 'books', mountPath: '/books' },
            { name: 'driver', mountPath: '/driver' },
          ],
          image_pull_secrets: [{ name: 'victim-secrets' }],
        }),
        secret_references: [{ name: 'STOLEN', secret_name: 'victim-secrets', secret_key: 'API_TOKEN' }],
      }),
    );
    await waitForRevision(setup.world, thief, 'DEPLOY_FAILED');
    const reason =
      setup.world.emulator
        .state()
        .deployments.find((d) => d.deployment.id === thief.id)
        ?.deploy_logs.at(-1)?.message ?? '';
    for (const named of [
      'PersistentVolumeClaim/data-victim-db-0',
      'Secret/victim-db-credentials',
      `ConfigMap/${inventoryName(victim.id)}`,
      'Secret/victim-secrets',
    ])
      expect(reason).toContain(`names ${named}, which belongs to another deployment`);
    expect(reason).toContain(
      'spec.volumes[3].csi.nodePublishSecretRef.name names Secret/victim-secrets, which belongs to another deployment',
    );

    // Nothing of the thief was written; the victim runs on, untouched.
    const names = (await setup.world.kube.apps.listNamespacedDeployment({ namespace: setup.ns })).items.map(
      (d) => d.metadata?.name,
    );
    expect(names).toEqual(['victim']);
    const secrets = (await setup.world.kube.core.listNamespacedSecret({ namespace: setup.ns })).items.map(
      (s) => s.metadata?.name,
    );
    expect(secrets.filter((n) => n?.startsWith('thief'))).toEqual([]);
  });
});

describe("the Ingress's TLS Secret", () => {
  it('cannot be mounted or read as variables by any container of a deployment: refused, nothing written', async () => {
    // As the platform team made it, in the namespace its Ingresses serve it from.
    await setup.world.kube.core.createNamespacedSecret({
      namespace: setup.ns,
      body: {
        metadata: { name: WILDCARD_TLS },
        type: 'kubernetes.io/tls',
        data: {
          'tls.crt': Buffer.from('cert').toString('base64'),
          'tls.key': Buffer.from('key').toString('base64'),
        },
      },
    });
    const snoop = await setup.world.client.createDeployment(
      app(setup.world, 'snoop', setup.ns, {
        ...source({
          min_scale: 1,
          max_scale: 1,
          cpu: 0.05,
          memory_mb: 32,
          volumes: [{ name: 'cert', secret: { secretName: WILDCARD_TLS } }],
          sidecars: [
            {
              name: 'log',
              image: 'busybox:1.36',
              envFrom: [{ secretRef: { name: WILDCARD_TLS } }],
              volumeMounts: [{ name: 'cert', mountPath: '/cert' }],
            },
          ],
          init_containers: [
            {
              name: 'proxy',
              image: 'busybox:1.36',
              restartPolicy: 'Always',
              env: [{ name: 'KEY', valueFrom: { secretKeyRef: { name: WILDCARD_TLS, key: 'tls.key' } } }],
            },
          ],
        }),
      }),
    );
    await waitForRevision(setup.world, snoop, 'DEPLOY_FAILED');
    const reason = lastMessage(snoop.id);
    expect(reason).toContain(`deployment ${snoop.id} cannot be rendered`);
    for (const field of [
      'spec.volumes[0].secret.secretName',
      'spec.containers[1](log).envFrom[0].secretRef.name',
      'spec.initContainers[0](proxy).env[0].valueFrom.secretKeyRef.name',
    ])
      expect(reason).toContain(
        `Deployment/snoop ${field}: Secret ${WILDCARD_TLS} is the Ingress TLS Secret (render.ingress.tlsSecretName)`,
      );
    expect(reason).not.toContain(Buffer.from('key').toString('base64'));
    expect(await objectsOf(snoop.id)).toEqual([]);
  });
});

/** The last message reported for a deployment. */
const lastMessage = (deploymentId: string): string =>
  setup.world.emulator
    .state()
    .deployments.find((d) => d.deployment.id === deploymentId)
    ?.deploy_logs.at(-1)?.message ?? '';

/** Every object of the kinds the agent writes that carries a deployment's id label, as `Kind/name`. */
async function objectsOf(deploymentId: string): Promise<string[]> {
  const kube = await KubeClient.fromKubeconfig(setup.world.kubeconfigPath, {
    logger: pino({ level: 'silent' }),
  });
  try {
    const found: string[] = [];
    for (const kind of [
      'Deployment',
      'StatefulSet',
      'Service',
      'Secret',
      'ConfigMap',
      'NetworkPolicy',
    ] as const)
      for (const object of await kube.list(kind, {
        namespace: setup.ns,
        labelSelector: `${LABEL_DEPLOYMENT_ID}=${deploymentId}`,
      }))
        found.push(`${kind}/${object.metadata.name}`);
    return found;
  } finally {
    await kube.close();
  }
}

describe('a name that does not exist yet', () => {
  it('is not used: the deployment waits, writes nothing, and is refused once another deployment makes it', async () => {
    // Named before the deployment they will belong to is made: its generated Secret and its database volume.
    const early = await setup.world.client.createDeployment(
      app(setup.world, 'early', setup.ns, {
        ...source({
          min_scale: 1,
          max_scale: 1,
          cpu: 0.05,
          memory_mb: 32,
          volumes: [
            { name: 'loot', persistentVolumeClaim: { claimName: 'data-late-db-0' } },
            { name: 'creds', secret: { secretName: 'late-secrets' } },
          ],
          volume_mounts: [
            { name: 'loot', mountPath: '/loot' },
            { name: 'creds', mountPath: '/creds' },
          ],
        }),
      }),
    );
    await waitForRevision(setup.world, early, 'DEPLOY_FAILED');
    const waiting = lastMessage(early.id);
    expect(waiting).toContain(
      'spec.volumes[0].persistentVolumeClaim.claimName names PersistentVolumeClaim/data-late-db-0, which does not exist yet',
    );
    expect(waiting).toContain(
      'spec.volumes[1].secret.secretName names Secret/late-secrets, which does not exist yet',
    );
    expect(await objectsOf(early.id)).toEqual([]);

    // The victim comes: its Secret and claim now exist under those names, and are its own.
    const late = await setup.world.client.createDeployment(
      app(
        setup.world,
        'late',
        setup.ns,
        source({ min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, db_storage_gi: 1 }),
      ),
    );
    // The waiting deployment, looked at again, is refused for good once either exists (the claim
    // comes after the Secret, once the StatefulSet runs: named as still missing, or as foreign).
    await eventually(
      'the early deployment refused as foreign',
      async () =>
        lastMessage(early.id).includes('Secret/late-secrets, which belongs to another deployment')
          ? true
          : undefined,
      60_000,
    );
    expect(lastMessage(early.id)).toMatch(
      /names PersistentVolumeClaim\/data-late-db-0, which (belongs to another deployment|does not exist yet)/,
    );
    expect(await revisionStatus(setup.world, early.id, early.latest_revision_id ?? '')).toBe('DEPLOY_FAILED');
    expect(await objectsOf(early.id)).toEqual([]);
    expect(await objectsOf(late.id)).toContain('Secret/late-secrets');
  }, 120_000);
});

describe("an object the agent keeps for another listener's deployment", () => {
  it('is foreign: refused, nothing written', async () => {
    // As another agent (another listener) would have made it for one of its deployments.
    await setup.world.kube.core.createNamespacedSecret({
      namespace: setup.ns,
      body: {
        metadata: {
          name: 'elsewhere-secrets',
          labels: {
            [LABEL_MANAGED_BY]: AGENT_NAME,
            [LABEL_LISTENER_ID]: randomUUID(),
            [LABEL_DEPLOYMENT_ID]: randomUUID(),
          },
        },
        stringData: { API_TOKEN: 'theirs' },
      },
    });
    const stranger = await setup.world.client.createDeployment(
      app(setup.world, 'stranger', setup.ns, {
        ...source({ min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32 }),
        secret_references: [{ name: 'STOLEN', secret_name: 'elsewhere-secrets', secret_key: 'API_TOKEN' }],
      }),
    );
    await waitForRevision(setup.world, stranger, 'DEPLOY_FAILED');
    expect(lastMessage(stranger.id)).toContain(
      'names Secret/elsewhere-secrets, which belongs to another deployment',
    );
    expect(await objectsOf(stranger.id)).toEqual([]);
  });
});

// A deployment names its own generated Secret, then its name changes: the Secret of the old name
// must neither be pruned from under it nor become another deployment's that it still mounts.
describe('a reference that outlives a rename', () => {
  it('waits, keeps the Secret it names, and never mounts the one a later deployment of the old name gets', async () => {
    const first = await setup.world.client.createDeployment(
      app(setup.world, 'stall', setup.ns, {
        ...source({
          min_scale: 1,
          max_scale: 1,
          cpu: 0.05,
          memory_mb: 32,
          volumes: [{ name: 'own', secret: { secretName: 'stall-secrets', optional: true } }],
          volume_mounts: [{ name: 'own', mountPath: '/own' }],
        }),
        secrets: [{ name: 'API_TOKEN', value: 'first-value' }],
      }),
    );
    await waitForRevision(setup.world, first, 'DEPLOYED');
    const readSecret = async () =>
      (await setup.world.kube.core.listNamespacedSecret({ namespace: setup.ns })).items.find(
        (s) => s.metadata?.name === 'stall-secrets',
      );
    const made = await readSecret();
    expect(made?.metadata?.labels?.[LABEL_DEPLOYMENT_ID]).toBe(first.id);

    // The control plane renames it (its interface has no PATCH of a name: changed in its store).
    const stored = setup.world.emulator.store.getDeployment(first.id);
    stored.name = 'stall2';
    stored.updated_at = new Date().toISOString();
    await eventually(
      'the renamed deployment waiting on the Secret of its old name',
      async () =>
        lastMessage(first.id).includes(
          "Deployment/stall2 spec.volumes[0].secret.secretName names Secret/stall-secrets, which carries this deployment's id",
        )
          ? true
          : undefined,
      60_000,
    );
    // Nothing of the new name written, nothing of the old pruned: the Secret is the one it had.
    expect(await objectsOf(first.id)).toEqual(
      expect.arrayContaining(['Deployment/stall', 'Secret/stall-secrets']),
    );
    expect((await objectsOf(first.id)).filter((n) => n.includes('stall2'))).toEqual([]);
    expect((await readSecret())?.metadata?.uid).toBe(made?.metadata?.uid);

    // A later deployment of the old name gets no `stall-secrets` of its own under the first's pods.
    const second = await setup.world.client.createDeployment(
      app(setup.world, 'stall', setup.ns, {
        ...source({ min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32 }),
        secrets: [{ name: 'API_TOKEN', value: 'second-value' }],
      }),
    );
    await waitForRevision(setup.world, second, 'DEPLOY_FAILED');
    const after = await readSecret();
    expect(after?.metadata?.uid).toBe(made?.metadata?.uid);
    expect(after?.metadata?.labels?.[LABEL_DEPLOYMENT_ID]).toBe(first.id);
    expect(await objectsOf(second.id)).toEqual([]);
  }, 120_000);
});

describe("a deleted deployment's kept database volume", () => {
  it('is never bound, nor its password taken, by a later deployment of the same name, unless handed over by the platform team', async () => {
    const spec = source({ min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, db_storage_gi: 1 });
    const first = await setup.world.client.createDeployment(app(setup.world, 'shop', setup.ns, spec));
    await waitForRevision(setup.world, first, 'DEPLOYED');
    const readClaim = async () =>
      (await setup.world.kube.core.listNamespacedPersistentVolumeClaim({ namespace: setup.ns })).items.find(
        (c) => c.metadata?.name === 'data-shop-db-0',
      );
    const kept = await readClaim();
    expect(kept?.metadata?.labels?.[LABEL_DEPLOYMENT_ID]).toBe(first.id);
    const readCredentials = () =>
      setup.world.kube.core.readNamespacedSecret({ name: 'shop-db-credentials', namespace: setup.ns });
    const password = (await readCredentials()).data?.password;
    expect(password).toBeTruthy();

    // Deleted: its objects go, its volume and the volume's password stay
    // (reconcile.prune.keepDatabaseVolumes).
    await setup.world.client.deleteDeployment(first.id);
    await eventually(
      'the first deployment pruned',
      async () => ((await objectsOf(first.id)).length === 1 ? true : undefined),
      60_000,
    );
    expect(await objectsOf(first.id)).toEqual(['Secret/shop-db-credentials']);
    expect((await readClaim())?.metadata?.uid).toBe(kept?.metadata?.uid);
    expect((await readCredentials()).data?.password).toBe(password);

    // Another tenant's deployment of the same name: its StatefulSet would bind the kept claim,
    // and its credentials would be the kept ones.
    const second = await setup.world.client.createDeployment(app(setup.world, 'shop', setup.ns, spec));
    await waitForRevision(setup.world, second, 'DEPLOY_FAILED');
    expect(lastMessage(second.id)).toContain(
      `Secret/shop-db-credentials, the password of a kept database volume, exists and belongs to deployment ${first.id}: ${KEPT_VOLUME_DECISION}`,
    );
    // Never an invitation to hand another tenant's data to this deployment.
    expect(lastMessage(second.id)).not.toContain(`${LABEL_DEPLOYMENT_ID}=${second.id}`);
    expect(await objectsOf(second.id)).toEqual([]);
    const sets = await setup.world.kube.apps.listNamespacedStatefulSet({ namespace: setup.ns });
    expect(sets.items.map((set) => set.metadata?.name)).not.toContain('shop-db');
    expect((await readClaim())?.metadata?.labels?.[LABEL_DEPLOYMENT_ID]).toBe(first.id);

    // The platform team hands the credentials over, and not yet the volume: still waiting, on the claim.
    const handOver = [
      { op: 'replace', path: '/metadata/labels/k8s-listener.io~1deployment-id', value: second.id },
    ];
    await setup.world.kube.core.patchNamespacedSecret({
      name: 'shop-db-credentials',
      namespace: setup.ns,
      body: handOver,
    });
    await eventually(
      'the claim named',
      async () =>
        lastMessage(second.id).includes('PersistentVolumeClaim/data-shop-db-0') ? true : undefined,
      60_000,
    );
    expect(lastMessage(second.id)).toContain(
      `StatefulSet/shop-db spec.volumeClaimTemplates[0](data) would bind PersistentVolumeClaim/data-shop-db-0, which exists and belongs to deployment ${first.id}: ${KEPT_VOLUME_DECISION}`,
    );
    expect(sets.items.map((set) => set.metadata?.name)).not.toContain('shop-db');

    // And the volume: the same revision goes on, binds it, and keeps the password it was made with.
    await setup.world.kube.core.patchNamespacedPersistentVolumeClaim({
      name: 'data-shop-db-0',
      namespace: setup.ns,
      body: handOver,
    });
    await waitForRevision(setup.world, second, 'DEPLOYED');
    expect(await objectsOf(second.id)).toContain('StatefulSet/shop-db');
    expect((await readClaim())?.metadata?.uid).toBe(kept?.metadata?.uid);
    expect((await readCredentials()).data?.password).toBe(password);
  }, 180_000);
});

// Digests of secret values in objects anyone with read access to the
// namespace sees (pod templates, the inventory) must not let a weak secret be guessed offline.
describe('a secret value', () => {
  it('cannot be guessed from any non-Secret object the agent writes (10,000 words, the value among them)', async () => {
    const secret = 'hunter2';
    const deployment = await setup.world.client.createDeployment(
      app(setup.world, 'guarded', setup.ns, { secrets: [{ name: 'API_TOKEN', value: secret }] }),
    );
    await waitForRevision(setup.world, deployment, 'DEPLOYED');

    // Every non-Secret object the agent wrote for it, as someone who may read them (not Secrets) sees them.
    const selector = `${LABEL_DEPLOYMENT_ID}=${deployment.id}`;
    const kube = await KubeClient.fromKubeconfig(setup.world.kubeconfigPath, {
      logger: pino({ level: 'silent' }),
    });
    const readable: LiveKubeObject[] = [];
    for (const kind of ['Deployment', 'Service', 'NetworkPolicy', 'ConfigMap'] as const)
      readable.push(...(await kube.list(kind, { namespace: setup.ns, labelSelector: selector })));
    const text = JSON.stringify(readable);
    const digests = new Set(text.match(/\b[0-9a-f]{16}\b/g) ?? []);
    expect(digests.size).toBeGreaterThan(2);

    // The attacker knows the deployment but its secret, and renders each guess as the agent would.
    const listener = await setup.world.client.getListener(setup.world.listenerId);
    const target = chooseTarget(deployment, (await setup.world.client.listAllRevisions(deployment.id)).items);
    const digestsOf = (guess: string, digestKey: Uint8Array | undefined) => {
      const candidate: Deployment = { ...deployment, secrets: [{ name: 'API_TOKEN', value: guess }] };
      const result = renderDeployment(
        {
          deployment: candidate,
          revision: target.revision,
          listener,
          allowedNamespaces: setup.world.namespaces,
          digestKey,
        },
        RenderConfig.parse({}),
      );
      if (!result.ok) throw result.error;
      return (
        JSON.stringify([
          result.value.objects.filter((o) => o.kind !== 'Secret'),
          result.value.specHash,
        ]).match(/\b[0-9a-f]{16}\b/g) ?? []
      );
    };
    const words = Array.from({ length: 10_000 }, (_, i) => (i === 7_777 ? secret : `word-${i.toString(36)}`));
    const recovered = words.filter((guess) => digestsOf(guess, undefined).some((d) => digests.has(d)));
    console.log(
      `dictionary attack: ${words.length} words tried against ${digests.size} digests, ${recovered.length} recovered`,
    );
    expect(recovered).toEqual([]);

    // The control: with the agent's key, the same search finds the word, so it was really looking.
    const key = await loadDigestKey(kube, 'default', { create: false });
    expect(digestsOf(secret, key).filter((d) => digests.has(d)).length).toBeGreaterThan(0);
    await kube.close();
  }, 120_000);
});
