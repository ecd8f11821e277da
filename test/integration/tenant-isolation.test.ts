// Issue 18, as an attacker with only a control-plane account would try it, against the real agent
// and API server: a second deployment in the same namespace that names the first one's database
// volume, generated Secrets or inventory gets nothing — it is refused, naming each reference, and
// nothing of it is written — while the first keeps running untouched.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Agent } from '../../src/manager/agent.ts';
import { inventoryName } from '../../src/reconcile/inventoryStore.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../support/agentHarness.ts';

let world: World;
let agent: Agent;
let ns: string;

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  [ns = ''] = world.namespaces;
  agent = await startAgent(world, { allowedNamespaces: world.namespaces });
});
afterAll(async () => {
  await agent?.stop();
  await world?.close();
});

const source = (resource_spec: Record<string, unknown>) => ({
  source_config: { listener_id: world.listenerId, listener_config: { k8s_namespace: ns }, resource_spec },
});

describe("another deployment's objects", () => {
  it('cannot be mounted, read as variables or named as pull secrets by a deployment beside it', async () => {
    const victim = await world.client.createDeployment(
      app(
        world,
        'victim',
        ns,
        source({ min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, db_storage_gi: 1 }),
      ),
    );
    await waitForRevision(world, victim, 'DEPLOYED');

    const thief = await world.client.createDeployment(
      app(world, 'thief', ns, {
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
    await waitForRevision(world, thief, 'DEPLOY_FAILED');
    const reason =
      world.emulator
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
    const names = (await world.kube.apps.listNamespacedDeployment({ namespace: ns })).items.map(
      (d) => d.metadata?.name,
    );
    expect(names).toEqual(['victim']);
    const secrets = (await world.kube.core.listNamespacedSecret({ namespace: ns })).items.map(
      (s) => s.metadata?.name,
    );
    expect(secrets.filter((n) => n?.startsWith('thief'))).toEqual([]);
  });
});
