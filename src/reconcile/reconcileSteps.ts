// The steps a Reconciler runs, wired once from its options: the apply engine, the reference guard,
// prune, the rollout report, the agent-change step, the status path, and the undo of references
// a failure refused. Every read goes through the applier (the watch cache, else a request), and
// every write it makes is shown to the cache, so that the steps see one picture of the cluster.
import type { Logger } from 'pino';
import type { ObjectRef } from '../kube/index.ts';
import { ownedAnnotations } from '../render/ownedAnnotations.ts';
import { DeploymentReport } from '../report/deploymentReport.ts';
import type { ReconcilerOptions } from './reconcilerOptions.ts';
import { AgentChangeStep } from './steps/agentChangeStep.ts';
import { Applier } from './steps/applier.ts';
import { Pruner } from './steps/pruner.ts';
import type { PruneStepOptions } from './steps/pruneStep.ts';
import { ReferenceGuard } from './steps/referenceGuard.ts';
import { undoRefused } from './steps/referenceUndo.ts';
import { RolloutReader } from './steps/rolloutReader.ts';
import { RolloutRechecks } from './steps/rolloutRechecks.ts';
import { RolloutReport } from './steps/rolloutReport.ts';
import { StatusPath } from './steps/statusPath.ts';

export interface ReconcileSteps {
  readonly applier: Applier;
  readonly guard: ReferenceGuard;
  readonly pruner: Pruner;
  readonly prune: PruneStepOptions;
  readonly report: DeploymentReport;
  readonly rollouts: RolloutReport;
  readonly agentChanges: AgentChangeStep;
  readonly statusPath: StatusPath;
  /** Takes the deployment's `workloads` off what a failure refused (referenceUndo.ts). */
  readonly undo: (
    deploymentId: string,
    workloads: readonly ObjectRef[],
    error: unknown,
    log: Logger,
    signal: AbortSignal | undefined,
  ) => Promise<unknown>;
}

export function reconcileSteps(options: ReconcilerOptions): ReconcileSteps {
  const { kube, cache, metrics, events, inventories, listener, config, allowedNamespaces } = options;
  const applier = new Applier({ kube, cache, metrics, events, inventories });
  const read = (ref: ObjectRef, signal?: AbortSignal) => applier.read(ref, signal);
  const pruner = new Pruner({ kube, metrics, listener });
  const report = new DeploymentReport({
    reporter: options.reporter,
    events,
    metrics,
    objects: { read, mergePatch: async (ref, patch) => applier.written(await kube.mergePatch(ref, patch)) },
  });
  const { failureGraceMs, rolloutRecheckMs, rolloutRechecksPerSecond } = config;
  const rollouts = new RolloutReport(
    new RolloutReader({ kube, cache, listener, failureGraceMs, evidence: options.evidence }),
    report,
    new RolloutRechecks(rolloutRecheckMs, rolloutRechecksPerSecond),
  );
  const listenerId = () => listener().id;
  return {
    applier,
    guard: new ReferenceGuard({ read, kube, listener, allowedNamespaces }),
    pruner,
    prune: { pruner, inventories, cache, prune: config.prune, listener, allowedNamespaces },
    report,
    rollouts,
    agentChanges: new AgentChangeStep({ gate: options.agentChanges, metrics, events, rollouts }),
    statusPath: new StatusPath({
      listener,
      digestKey: options.digestKey,
      ownedAnnotations: ownedAnnotations(options.renderConfig),
      cached: cache && ((ref) => cache.get(ref)),
      read,
    }),
    undo: (deploymentId, workloads, error, log, signal) =>
      undoRefused({ kube, events, listenerId }, deploymentId, workloads, error, log, signal),
  };
}
