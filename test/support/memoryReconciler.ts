// A Reconciler over the in-memory cluster, for unit tests that reconcile deployments a test sets
// as desired: its reports are read back with `reported`.
import { pino } from 'pino';
import type { Deployment, Listener, StatusReportBatch } from '../../src/controlplane/schemas/index.ts';
import { DesiredState } from '../../src/reconcile/loop/desiredState.ts';
import { ReconcileConfig } from '../../src/reconcile/policy/reconcileConfig.ts';
import { Reconciler } from '../../src/reconcile/reconciler.ts';
import { InventoryStore } from '../../src/reconcile/steps/inventoryStore.ts';
import { RenderConfig } from '../../src/render/index.ts';
import { ControlPlaneReporter } from '../../src/report/controlPlaneReporter.ts';
import { createMetrics } from '../../src/report/metrics.ts';
import { MemoryCluster } from './memoryCluster.ts';

export function memoryReconciler(
  listener: Listener,
  namespaces: readonly string[],
  renderConfig: RenderConfig = RenderConfig.parse({}),
) {
  const logger = pino({ level: 'silent' });
  const cluster = new MemoryCluster(namespaces);
  const sent: StatusReportBatch[] = [];
  const metrics = createMetrics({ defaultMetrics: false });
  const reporter = new ControlPlaneReporter({
    sink: { postStatusReports: async (_listenerId, batch) => void sent.push(batch) },
    listenerId: listener.id,
    logger,
    metrics,
  });
  const desired = new DesiredState();
  const reconciler = new Reconciler({
    kube: cluster,
    desired,
    inventories: new InventoryStore(cluster, listener.id),
    reporter,
    events: { record: async () => undefined },
    metrics,
    logger,
    renderConfig,
    config: ReconcileConfig.parse({}),
    listener: () => listener,
    allowedNamespaces: undefined,
  });
  /** Sets the deployment as desired (a first revision, nothing settled) and reconciles it. */
  const reconcile = (deployment: Deployment) => {
    desired.set(deployment.id, {
      kind: 'present',
      deployment,
      target: { revision: undefined, settled: undefined },
      fingerprint: deployment.updated_at,
    });
    return reconciler.reconcile(deployment.id);
  };
  const reported = async () => {
    await reporter.flush();
    return sent.flatMap((batch) => batch.reports);
  };
  return { cluster, reconcile, reported };
}
