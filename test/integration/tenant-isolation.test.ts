// Issue 18, as an attacker with only a control-plane account would try it, against the real agent
// and API server: a second deployment in the same namespace that names the first one's database
// volume, generated Secrets or inventory gets nothing — it is refused, naming each reference, and
// nothing of it is written — while the first keeps running untouched.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Deployment } from '../../src/controlplane/schemas/index.ts';
import { KubeClient, type LiveKubeObject } from '../../src/kube/index.ts';
import { loadDigestKey } from '../../src/manager/digestKey.ts';
import { LABEL_DEPLOYMENT_ID } from '../../src/objects/ownership.ts';
import { inventoryName } from '../../src/reconcile/inventoryStore.ts';
import { chooseTarget } from '../../src/reconcile/target.ts';
import { RenderConfig, renderDeployment } from '../../src/render/index.ts';
import { app, useAgentWorld, waitForRevision } from '../support/agentHarness.ts';

const setup = useAgentWorld();

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
          ],
          volume_mounts: [
            { name: 'loot', mountPath: '/loot' },
            { name: 'creds', mountPath: '/creds' },
            { name: 'books', mountPath: '/books' },
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

// Issue 18, finding 4: digests of secret values in objects anyone with read access to the
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
