// A RolloutReport over the in-memory cluster, for unit tests of the steps that report a rollout:
// its main workload put in the cluster rolling out or available, what the control plane and the
// cluster were told kept for the test to read.
import type { Logger } from 'pino';
import { pino } from 'pino';
import type { EventDetails, EventSubject, LiveKubeObject } from '../../src/kube/index.ts';
import type { KubeObject } from '../../src/objects/kubeObject.ts';
import { LABEL_COMPONENT, LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../../src/objects/ownership.ts';
import { entryId, entryOf } from '../../src/reconcile/steps/inventory.ts';
import { RolloutReader } from '../../src/reconcile/steps/rolloutReader.ts';
import { RolloutRechecks } from '../../src/reconcile/steps/rolloutRechecks.ts';
import { RolloutReport, type RolloutToReport } from '../../src/reconcile/steps/rolloutReport.ts';
import type { StatusChange } from '../../src/report/controlPlaneReporter.ts';
import { DeploymentReport } from '../../src/report/deploymentReport.ts';
import { createMetrics } from '../../src/report/metrics.ts';
import { MemoryCluster } from './memoryCluster.ts';
import { listener } from './renderFixtures.ts';

export const ROLLOUT_NAMESPACE = 'apps';
/** How soon a rollout in progress is looked at again, with few in progress. */
export const RECHECK_MS = 1_000;
/** Rechecks per second: two rollouts in progress spread theirs to two seconds. */
export const RECHECKS_PER_SECOND = 1;

/** A Deployment of a deployment's render, with the labels its rollout and Events go by. */
export function workload(deploymentId: string, component = 'main', name = 'web'): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: ROLLOUT_NAMESPACE,
      labels: {
        [LABEL_COMPONENT]: component,
        [LABEL_LISTENER_ID]: listener.id,
        [LABEL_DEPLOYMENT_ID]: deploymentId,
      },
      annotations: {},
    },
    spec: { replicas: 1 },
  };
}

const AVAILABLE = { replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 };

export function memoryRollouts() {
  const logger: Logger = pino({ level: 'silent' });
  const cluster = new MemoryCluster([ROLLOUT_NAMESPACE]);
  const told: StatusChange[] = [];
  const events: { subject: EventSubject | LiveKubeObject; details: EventDetails }[] = [];
  const eventRecorder = {
    record: async (subject: EventSubject | LiveKubeObject, details: EventDetails) =>
      void events.push({ subject, details }),
  };
  const report = new DeploymentReport({
    reporter: { record: (change) => told.push(change) > 0 },
    events: eventRecorder,
    objects: { read: (ref) => cluster.get(ref), mergePatch: (ref, patch) => cluster.mergePatch(ref, patch) },
    metrics: createMetrics({ defaultMetrics: false }),
  });
  const reader = new RolloutReader({ kube: cluster, listener: () => listener, failureGraceMs: 60_000 });
  const rollouts = new RolloutReport(reader, report, new RolloutRechecks(RECHECK_MS, RECHECKS_PER_SECOND));
  /** Puts the workload in the cluster, rolling out or available; returns it as live, by entry id. */
  const live = async (object: KubeObject, available: boolean): Promise<Map<string, LiveKubeObject>> => {
    const held = await cluster.apply(
      { ...object, ...(available ? { status: AVAILABLE } : {}) },
      { force: true },
    );
    return new Map([[entryId(entryOf(object)), held]]);
  };
  /** A rollout of one workload to report, as the steps hand it over. */
  const rollout = (
    deploymentId: string,
    objects: KubeObject[],
    found: Map<string, LiveKubeObject>,
  ): RolloutToReport => ({
    deploymentId,
    revisionId: 'r1',
    namespace: ROLLOUT_NAMESPACE,
    objects,
    live: found,
    notes: [],
    justApplied: false,
  });
  return { cluster, rollouts, told, events, eventRecorder, logger, live, rollout };
}

/** `Kind/name` of an Event's subject, whichever form it was given in. */
export function subjectName(subject: EventSubject | LiveKubeObject): string {
  return `${subject.kind}/${'metadata' in subject ? subject.metadata.name : subject.name}`;
}
