// `diff` decides as `run` does. The same live objects go through the reconciler and through the
// preview `diff` prints, and both must reach the same verdict: whose an object is before it is
// written (never adopted from another owner, nor from another deployment of this listener), and
// which recorded objects a deletion removes (only those still carrying the deployment's id, and a
// database's volume and credentials only when volumes are not kept).
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Deployment, Listener } from '../../../src/controlplane/schemas/index.ts';
import type { KubeClient } from '../../../src/kube/index.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { previewListener } from '../../../src/reconcile/preview.ts';
import { ReconcileConfig } from '../../../src/reconcile/reconcileConfig.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { app, FAST_RECONCILE, type World } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { desire, soloReconciler, soloWorld } from '../../support/soloReconciler.ts';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const cluster = soloWorld(logger);
let world: World;
let kube: KubeClient;
let listener: Listener;
let namespace: string;
beforeAll(() => {
  ({ world, kube, listener, namespace } = cluster);
});

const preview = (only: string, reconcileConfig = ReconcileConfig.parse(FAST_RECONCILE)) =>
  previewListener(
    {
      kube,
      client: world.client,
      listener,
      namespaces: [namespace],
      allowedNamespaces: undefined,
      renderConfig: RenderConfig.parse({}),
      reconcileConfig,
    },
    only,
  );

/** A deployment made in the control plane and handed to the reconciler as desired. */
const present = (
  desired: ReturnType<typeof soloReconciler>['desired'],
  name: string,
  spec: Record<string, unknown> = {},
): Promise<Deployment> =>
  desire(
    world.client,
    desired,
    app(world, name, namespace, {
      source_config: {
        listener_id: listener.id,
        listener_config: { k8s_namespace: namespace },
        resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, ...spec },
      },
    }),
  );

describe('diff and run agree', () => {
  it('on an object of another deployment of this listener under a generated name: both refuse it, in the same words', async () => {
    const { reconciler, desired } = soloReconciler({ kube, listener, logger });
    // `owner` with a database renders the Service `owner-db`; an application named `owner-db`
    // renders a Service of that name too.
    const owner = await present(desired, 'owner', { db_storage_gi: 1 });
    expect((await reconciler.reconcile(owner.id)).result).not.toBe('terminal');
    const collider = await present(desired, 'owner-db');

    const previewed = (await preview(collider.id)).deployments[0];
    const outcome = await reconciler.reconcile(collider.id);
    expect(outcome.result).toBe('terminal');
    const refusal = outcome.result === 'terminal' ? outcome.error.message : '';
    expect(refusal).toContain(`Service/${namespace}/owner-db belongs to another deployment of this listener`);
    expect(previewed).toMatchObject({ state: 'failed' });
    expect(refusal).toContain(previewed?.state === 'failed' ? previewed.message : '(no refusal previewed)');
  });

  it.each([
    [true, "its database volume and the volume's credentials kept"],
    [false, 'its database volume and credentials removed too'],
  ])(
    'on a deletion: diff shows exactly what run removes, never an object another deployment took (keepDatabaseVolumes %s: %s)',
    async (keepDatabaseVolumes) => {
      const config = ReconcileConfig.parse({ ...FAST_RECONCILE, prune: { keepDatabaseVolumes } });
      const { reconciler, desired } = soloReconciler({ kube, listener, logger, config });
      const name = keepDatabaseVolumes ? 'leaving' : 'leaving-all';
      const leaving = await present(desired, name, { db_storage_gi: 1 });
      expect((await reconciler.reconcile(leaving.id)).result).not.toBe('terminal');
      // One recorded object has since become another deployment's (its id label is another's).
      const serviceRef = { apiVersion: 'v1', kind: 'Service', namespace, name };
      await kube.mergePatch(serviceRef, { metadata: { labels: { [LABEL_DEPLOYMENT_ID]: 'someone-else' } } });
      // The StatefulSet controller's claim, which only an unkept deletion removes.
      await eventually(
        'the database claim made',
        async () =>
          (await kube.list('PersistentVolumeClaim', { namespace })).some(
            (claim) => claim.metadata.name === `data-${name}-db-0`,
          ) || undefined,
        60_000,
      );
      await world.client.deleteDeployment(leaving.id);

      const previewed = (await preview(leaving.id, config)).deployments[0];
      const previewedPrunes =
        previewed && 'changes' in previewed
          ? previewed.changes.filter((c) => c.action === 'prune').map((c) => `${c.ref.kind}/${c.ref.name}`)
          : [];
      expect(previewedPrunes.length).toBeGreaterThan(0);

      const labelled = async () =>
        (
          await Promise.all(
            (
              [
                'Deployment',
                'StatefulSet',
                'Service',
                'Secret',
                'ConfigMap',
                'NetworkPolicy',
                'PersistentVolumeClaim',
              ] as const
            ).map((kind) => kube.list(kind, { namespace })),
          )
        )
          .flat()
          // Deleting counts as removed: a claim in use waits for its pod.
          .filter((o) => o.metadata.deletionTimestamp === undefined)
          .map((o) => `${o.kind}/${o.metadata.name}`);
      const before = new Set(await labelled());
      desired.set(leaving.id, { kind: 'gone' });
      expect((await reconciler.reconcile(leaving.id)).result).toBe('done');
      const after = new Set(await labelled());
      const removed = [...before].filter((name) => !after.has(name));
      expect(previewedPrunes.sort()).toEqual(removed.sort());
      expect(after.has(`Service/${name}`)).toBe(true);
      for (const volume of [`Secret/${name}-db-credentials`, `PersistentVolumeClaim/data-${name}-db-0`])
        expect(after.has(volume), volume).toBe(keepDatabaseVolumes);
      expect(removed).toContain(`StatefulSet/${name}-db`);
    },
  );
});
