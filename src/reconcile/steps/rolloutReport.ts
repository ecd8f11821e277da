// The last step of a reconcile: the rollout of the live objects (and their pods) read, with the
// render's notes, reported where it is read (control plane, Events, the inventory's status
// annotation, metrics), and what that means for the queue — a rollout in progress is looked at
// again at its recheck, anything else is done.
import type { Logger } from 'pino';
import type { LiveKubeObject } from '../../kube/index.ts';
import { LABEL_COMPONENT } from '../../objects/ownership.ts';
import type { KubeObject } from '../../render/index.ts';
import type { DeploymentReport } from '../../report/deploymentReport.ts';
import { type RolloutStatus, withStatusNotes } from '../../report/rolloutHealth.ts';
import type { DoneDetail, ReconcileOutcome } from '../outcome.ts';
import { inventoryRef } from './inventoryStore.ts';
import type { RolloutReader } from './rolloutReader.ts';
import type { RolloutRechecks } from './rolloutRechecks.ts';

/** One rollout to report: the deployment's revision, its objects and what of them is live. */
export interface RolloutToReport {
  readonly deploymentId: string;
  readonly revisionId: string | undefined;
  readonly namespace: string;
  readonly objects: readonly KubeObject[];
  readonly live: Map<string, LiveKubeObject>;
  readonly notes: readonly string[];
  /** Written by this reconcile: a warning sign waits for the next look (DeploymentReport). */
  readonly justApplied: boolean;
}

export class RolloutReport {
  readonly #rollouts: RolloutReader;
  readonly #report: DeploymentReport;
  /** The rollouts in progress, and how soon each is looked at again. */
  readonly #rechecks: RolloutRechecks;

  constructor(rollouts: RolloutReader, report: DeploymentReport, rechecks: RolloutRechecks) {
    this.#rollouts = rollouts;
    this.#report = report;
    this.#rechecks = rechecks;
  }

  /** The rollout read and reported; returned for the caller's outcome. */
  async report(
    rollout: RolloutToReport,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<RolloutStatus> {
    const { deploymentId, revisionId, namespace, objects, live, notes, justApplied } = rollout;
    const status = withStatusNotes(
      await this.#rollouts.rollout(deploymentId, revisionId, namespace, objects, live, signal),
      notes,
    );
    await this.#report.status(
      {
        deploymentId,
        revisionId,
        status,
        main: mainWorkload(live),
        annotated: inventoryRef(deploymentId, namespace),
        justApplied,
      },
      log,
    );
    return status;
  }

  /**
   * A rollout in progress is looked at again at its recheck, in the background: applying what a
   * deployment not yet applied asks comes before telling how another's rollout goes (its outcome's
   * Event and annotation are two writes). Any other is done.
   */
  after(deploymentId: string, status: RolloutStatus, detail: DoneDetail): ReconcileOutcome {
    return status.revisionStatus === 'DEPLOYING'
      ? { result: 'requeue', afterMs: this.#rechecks.inProgress(deploymentId), background: true }
      : { result: 'done', detail };
  }

  /** How soon a rollout in progress is looked at again (counted as in progress). */
  recheckMs(deploymentId: string): number {
    return this.#rechecks.inProgress(deploymentId);
  }

  /** The reconcile ended otherwise than with a requeue: not in progress any more. */
  settled(deploymentId: string): void {
    this.#rechecks.settled(deploymentId);
  }

  /** The deployment is gone: its rollout memory and its reports go. */
  forget(deploymentId: string): void {
    this.#rollouts.forget(deploymentId);
    this.#report.deleted(deploymentId);
  }
}

/** The main workload among the live objects: where a deployment's Events go. */
export function mainWorkload(live: ReadonlyMap<string, LiveKubeObject>): LiveKubeObject | undefined {
  return [...live.values()].find(
    (o) => o.kind === 'Deployment' && o.metadata.labels[LABEL_COMPONENT] === 'main',
  );
}
