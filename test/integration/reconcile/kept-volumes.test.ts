// A renamed deployment's database volumes against the real API server and StatefulSet controller
// (docs/design.md, "Database volumes are kept"): each name's StatefulSet makes its own claim
// (`data-<name>-db-0`); four renames leave the claims and credentials of the current name and of
// at most `reconcile.prune.keptVolumesPerDeployment` (1) earlier one, the oldest deleted, and the
// names freed for another deployment; `diff` shows what `run` deletes.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { previewListener } from '../../../src/cli/diffPreview.ts';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { chooseTarget } from '../../../src/reconcile/loop/target.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { app, FAST_RECONCILE } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { soloReconciler, soloWorld } from '../../support/soloReconciler.ts';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const cluster = soloWorld(logger);

describe("a renamed deployment's database volumes", () => {
  it('four renames keep the current name’s volume and one earlier, the oldest deleted with their credentials; a freed name binds afresh', async () => {
    const { world, kube, listener, namespace } = cluster;
    const { reconciler, desired } = soloReconciler({ kube, listener, logger });
    const created = await world.client.createDeployment(
      app(world, 'shop-1', namespace, {
        source_config: {
          listener_id: listener.id,
          listener_config: { k8s_namespace: namespace },
          resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, db_storage_gi: 1 },
        },
      }),
    );
    const revisions = (await world.client.listAllRevisions(created.id)).items;
    const target = chooseTarget(created, revisions);
    const selector = `${LABEL_DEPLOYMENT_ID}=${created.id}`;
    /** The deployment's claims and credentials not being deleted, by name. */
    const held = async () => {
      const [claims, secrets] = await Promise.all([
        kube.list('PersistentVolumeClaim', { namespace, labelSelector: selector }),
        kube.list('Secret', { namespace, labelSelector: selector }),
      ]);
      const live = [...claims, ...secrets.filter((s) => s.metadata.name.endsWith('-db-credentials'))];
      return live
        .filter((o) => o.metadata.deletionTimestamp === undefined)
        .map((o) => `${o.kind}/${o.metadata.name}`)
        .sort();
    };
    const rename = async (name: string, fingerprint: string): Promise<Deployment> => {
      const deployment = { ...created, name };
      desired.set(created.id, { kind: 'present', deployment, target, fingerprint });
      const outcome = await reconciler.reconcile(created.id);
      expect(outcome.result, `${name}: ${JSON.stringify(outcome)}`).toMatch(/^(done|requeue)$/);
      // The StatefulSet controller makes the name's claim.
      await eventually(
        `the claim of ${name}`,
        async () => ((await held()).includes(`PersistentVolumeClaim/data-${name}-db-0`) ? true : undefined),
        60_000,
      );
      return deployment;
    };

    for (const [i, name] of ['shop-1', 'shop-2', 'shop-3', 'shop-4', 'shop-5'].entries())
      await rename(name, `f${i}`);
    expect(await held()).toEqual([
      'PersistentVolumeClaim/data-shop-4-db-0',
      'PersistentVolumeClaim/data-shop-5-db-0',
      'Secret/shop-4-db-credentials',
      'Secret/shop-5-db-credentials',
    ]);

    // `diff` decides as `run` does. The control plane still names it shop-1 (the renames above
    // were the reconciler's desired state alone): back to shop-1, whose volume went, the earlier
    // names are shop-4 and shop-5, and the older goes.
    const previewed = (
      await previewListener(
        {
          kube,
          client: world.client,
          listener,
          namespaces: [namespace],
          allowedNamespaces: undefined,
          renderConfig: RenderConfig.parse({}),
          reconcileConfig: ReconcileConfig.parse(FAST_RECONCILE),
        },
        created.id,
      )
    ).deployments[0];
    const volumePrunes =
      previewed && 'changes' in previewed
        ? previewed.changes
            .filter(
              (c) =>
                c.action === 'prune' &&
                (c.ref.kind === 'PersistentVolumeClaim' || c.ref.name.endsWith('-db-credentials')),
            )
            .map((c) => `${c.ref.kind}/${c.ref.name}`)
            .sort()
        : [];
    expect(volumePrunes).toEqual(['PersistentVolumeClaim/data-shop-4-db-0', 'Secret/shop-4-db-credentials']);
    desired.set(created.id, { kind: 'present', deployment: created, target, fingerprint: 'back' });
    expect((await reconciler.reconcile(created.id)).result).toMatch(/^(done|requeue)$/);
    expect((await held()).filter((name) => name.includes('shop-4'))).toEqual([]);
    expect(await held()).toEqual(
      expect.arrayContaining(['PersistentVolumeClaim/data-shop-5-db-0', 'Secret/shop-5-db-credentials']),
    );

    // A freed name is another deployment's to take: its StatefulSet binds a claim of its own.
    const other = await world.client.createDeployment(
      app(world, 'shop-2', namespace, {
        source_config: {
          listener_id: listener.id,
          listener_config: { k8s_namespace: namespace },
          resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, db_storage_gi: 1 },
        },
      }),
    );
    const otherTarget = chooseTarget(other, (await world.client.listAllRevisions(other.id)).items);
    // The earlier claim is gone once its pod is (the claim's protection finalizer).
    await eventually(
      'the freed claim gone',
      async () =>
        (await kube.list('PersistentVolumeClaim', { namespace })).some(
          (c) => c.metadata.name === 'data-shop-2-db-0',
        )
          ? undefined
          : true,
      120_000,
    );
    desired.set(other.id, { kind: 'present', deployment: other, target: otherTarget, fingerprint: 'o1' });
    const outcome = await reconciler.reconcile(other.id);
    expect(outcome.result, JSON.stringify(outcome)).toMatch(/^(done|requeue)$/);
  }, 600_000);
});
