// Queue workers scaled on the runs that need them (render.autoscaling.queue: keda): a KEDA
// ScaledObject with a PostgreSQL trigger that counts runs in the deployment's database, one worker
// per `jobsPerWorker` of them, and a TriggerAuthentication that names the Secret holding the
// connection — the Secret the pods already read it from, so no password is ever in an object.
import type { Secret, SecretReference } from '../controlplane/schemas/index.ts';
import type { KubeObject } from '../objects/kubeObject.ts';
import {
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_INSTANCE,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
  LABEL_NAME,
} from '../objects/ownership.ts';
import type { RenderProblem } from './errors.ts';
import type { RenderConfig } from './renderConfig.ts';

/** Where KEDA reads the database connection from. */
export type QueueConnection =
  /** The database the agent renders: its credentials Secret, the host and port its Service has. */
  | { readonly kind: 'generated' }
  /** A database the deployment brings in its own `secrets`: a key of the Secret the agent makes of them. */
  | { readonly kind: 'deploymentSecret'; readonly key: string }
  /** A database the deployment brings by `secret_references`: the platform's Secret it names. */
  | { readonly kind: 'reference'; readonly secretName: string; readonly key: string };

export interface QueueScalerPlan {
  /** KEDA's `targetQueryValue`: never below 1. */
  readonly jobsPerWorker: number;
  /** The agent sets `render.queue.jobsPerWorkerEnv` on the queue workers to `jobsPerWorker` (the deployment set none). */
  readonly setsJobsEnv: boolean;
  readonly connection: QueueConnection;
}

/** A whole number of runs a worker takes at once, as the LangGraph server reads it (`int(...)`). */
const JOBS = /^\s*[1-9]\d{0,5}\s*$/;

/**
 * The ScaledObject a deployment's queue workers get, or undefined (cpu autoscaling, no autoscaled
 * queue, or no database to count runs in: then a note says so). A `jobsPerWorkerEnv` secret that
 * is not a whole number of at least 1 is a problem: KEDA cannot aim at 0 runs per worker, and such
 * workers would take no runs. Messages name the field, never the secret's value.
 */
export function planQueueScaler(
  input: {
    readonly queueScale: { readonly min: number; readonly max: number } | undefined;
    readonly database: boolean;
    readonly secrets: readonly Secret[];
    readonly secretReferences: readonly SecretReference[];
  },
  config: RenderConfig,
  problems: RenderProblem[],
  notes: string[],
): QueueScalerPlan | undefined {
  const scale = input.queueScale;
  if (config.autoscaling.queue !== 'keda' || !scale || scale.max <= scale.min) return undefined;
  const connection = connectionOf(input, config);
  if (!connection) {
    notes.push(
      'queue workers scale on cpu: the deployment has no database KEDA could count runs in (render.autoscaling.queue: keda)',
    );
    return undefined;
  }
  // The deployment's own connection string would have KEDA's operator dial any address it names.
  if (connection.kind !== 'generated' && !config.autoscaling.keda.broughtDatabases) {
    notes.push(
      'queue workers scale on cpu: KEDA counts runs in a database the deployment brings only with render.autoscaling.keda.broughtDatabases',
    );
    return undefined;
  }
  const jobsEnv = config.queue.jobsPerWorkerEnv;
  const secretIndex = jobsEnv === null ? -1 : input.secrets.findIndex((secret) => secret.name === jobsEnv);
  const secret = input.secrets[secretIndex];
  if (secret) {
    if (!JOBS.test(secret.value)) {
      problems.push({
        path: `secrets[${secretIndex}].value`,
        message: `${jobsEnv} must be a whole number of at least 1 (and at most 999999) when queue workers scale on runs (render.autoscaling.queue: keda): KEDA cannot aim at 0 runs per worker`,
      });
      return undefined;
    }
    return { jobsPerWorker: Number(secret.value.trim()), setsJobsEnv: false, connection };
  }
  const referenced =
    jobsEnv !== null && input.secretReferences.some((reference) => reference.name === jobsEnv);
  if (referenced)
    notes.push(
      `queue workers scale at ${config.autoscaling.keda.jobsPerWorker} runs a worker (render.autoscaling.keda.jobsPerWorker): ${jobsEnv} comes from a secret reference, whose value render cannot read`,
    );
  return {
    jobsPerWorker: config.autoscaling.keda.jobsPerWorker,
    setsJobsEnv: !referenced && jobsEnv !== null,
    connection,
  };
}

function connectionOf(
  input: {
    readonly database: boolean;
    readonly secrets: readonly Secret[];
    readonly secretReferences: readonly SecretReference[];
  },
  config: RenderConfig,
): QueueConnection | undefined {
  if (input.database) return { kind: 'generated' };
  for (const name of config.database.bringYourOwnNames) {
    if (input.secrets.some((secret) => secret.name === name)) return { kind: 'deploymentSecret', key: name };
    const reference = input.secretReferences.find((r) => r.name === name);
    if (reference) return { kind: 'reference', secretName: reference.secret_name, key: reference.secret_key };
  }
  return undefined;
}

/** What the objects need to know of the deployment, and how to make an object of it. */
export interface QueueScalerContext {
  readonly namespace: string;
  /** The queue workload's Deployment: the scale target, and the name of both objects. */
  readonly workloadName: string;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly databaseService: string;
  readonly databaseCredentials: string;
  readonly deploymentSecrets: string;
  /** The KEDA-made HorizontalPodAutoscaler's `behavior`. */
  readonly behavior: Record<string, unknown>;
  readonly make: (
    apiVersion: string,
    kind: string,
    name: string,
    body: Record<string, unknown>,
  ) => KubeObject;
}

/**
 * KEDA makes a HorizontalPodAutoscaler of each ScaledObject and copies the ScaledObject's labels
 * onto it: without our labels it is KEDA's, never taken for one of the agent's objects.
 */
const EXCLUDED_FROM_HPA = [
  LABEL_NAME,
  LABEL_INSTANCE,
  LABEL_COMPONENT,
  LABEL_MANAGED_BY,
  LABEL_LISTENER_ID,
  LABEL_DEPLOYMENT_ID,
].join(',');
export const KEDA_HPA_EXCLUDED_LABELS = 'scaledobject.keda.sh/hpa-excluded-labels';

export function queueScalerObjects(
  scaler: QueueScalerPlan,
  context: QueueScalerContext,
  config: RenderConfig,
): KubeObject[] {
  const keda = config.autoscaling.keda;
  const { connection } = scaler;
  const secretTargetRef =
    connection.kind === 'generated'
      ? [
          { parameter: 'userName', name: context.databaseCredentials, key: 'username' },
          { parameter: 'dbName', name: context.databaseCredentials, key: 'database' },
          { parameter: 'password', name: context.databaseCredentials, key: 'password' },
        ]
      : [
          {
            parameter: 'connection',
            name: connection.kind === 'reference' ? connection.secretName : context.deploymentSecrets,
            key: connection.key,
          },
        ];
  const authentication = context.make('keda.sh/v1alpha1', 'TriggerAuthentication', context.workloadName, {
    secretTargetRef,
  });
  const target = String(scaler.jobsPerWorker);
  const scaledObject = context.make('keda.sh/v1alpha1', 'ScaledObject', context.workloadName, {
    scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: context.workloadName },
    minReplicaCount: context.minReplicas,
    maxReplicaCount: context.maxReplicas,
    pollingInterval: keda.pollingIntervalSeconds,
    cooldownPeriod: keda.cooldownPeriodSeconds,
    advanced: { horizontalPodAutoscalerConfig: { behavior: context.behavior } },
    triggers: [
      {
        type: 'postgresql',
        metadata: {
          ...(connection.kind === 'generated'
            ? {
                host: `${context.databaseService}.${context.namespace}.svc`,
                port: String(config.database.port),
                sslmode: keda.sslMode,
              }
            : {}),
          query: keda.pendingRunsQuery,
          // One worker per `target` runs; a single waiting run wakes a queue scaled to zero.
          targetQueryValue: target,
          activationTargetQueryValue: '0',
        },
        authenticationRef: { kind: 'TriggerAuthentication', name: context.workloadName },
      },
    ],
  });
  scaledObject.metadata.annotations[KEDA_HPA_EXCLUDED_LABELS] = EXCLUDED_FROM_HPA;
  return [authentication, scaledObject];
}
