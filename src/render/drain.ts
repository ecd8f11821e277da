// The LangGraph server's drain contract: a pod that runs jobs is given its run grace on top of the
// stop every application pod gets, the server is told that same run grace, and the autoscalers of
// such pods take them away slowly. One number per pod, so the kubelet never kills a server that is
// still waiting for its runs.
import type { Secret, SecretReference } from '../controlplane/schemas/index.ts';
import type { RenderProblem } from './errors.ts';
import type { AppRole } from './plan.ts';
import type { RenderConfig } from './renderConfig.ts';

/** A whole number of seconds, as the LangGraph server reads it (`int(...)`). */
const SECONDS = /^\s*\d{1,7}\s*$/;

/**
 * The run grace of the deployment's pods that run jobs: the deployment's own `runGraceEnv`, at most
 * `maxRunGraceSeconds`, or `runGraceSeconds`. A value render cannot read (a secret reference's) or
 * that is out of bounds is a problem: the pod's grace is derived from it. Messages name the field,
 * never the secret's value.
 */
export function planRunGrace(
  input: { readonly secrets: readonly Secret[]; readonly secretReferences: readonly SecretReference[] },
  config: RenderConfig,
  problems: RenderProblem[],
): number {
  const { runGraceEnv, runGraceSeconds, maxRunGraceSeconds } = config.app;
  if (runGraceEnv === null) return runGraceSeconds;
  const bound = `a whole number of seconds from 0 to ${maxRunGraceSeconds} (render.app.maxRunGraceSeconds)`;
  const referenced = input.secretReferences.findIndex((reference) => reference.name === runGraceEnv);
  if (referenced >= 0)
    problems.push({
      path: `secret_references[${referenced}].name`,
      message: `${runGraceEnv} cannot come from a secret reference, whose value render cannot read: its pods are given that long to stop. Set it among the secrets, ${bound}`,
    });
  const index = input.secrets.findIndex((secret) => secret.name === runGraceEnv);
  const secret = input.secrets[index];
  if (!secret) return runGraceSeconds;
  const seconds = SECONDS.test(secret.value) ? Number(secret.value.trim()) : Number.NaN;
  if (!(seconds <= maxRunGraceSeconds)) {
    problems.push({
      path: `secrets[${index}].value`,
      message: `${runGraceEnv} must be ${bound}: its pods are given that long to stop, on top of render.app.terminationGracePeriodSeconds`,
    });
    return runGraceSeconds;
  }
  return seconds;
}

/**
 * Whether a workload's pods run jobs: all but an API server beside a queue group, which is given
 * `N_JOBS_PER_WORKER=0`. Orchestrators and executors carry runs' work too.
 */
export function runsJobs(role: AppRole, hasQueue: boolean): boolean {
  return role !== 'main' || !hasQueue;
}

export interface PodDrain {
  /** The server's wait for its runs (`runGraceEnv`): 0 in a pod that runs none. */
  readonly runGraceSeconds: number;
  /** The pod's: the stop every application pod gets, plus its run grace. */
  readonly terminationGracePeriodSeconds: number;
}

export function podDrain(jobs: boolean, runGraceSeconds: number, config: RenderConfig): PodDrain {
  const run = jobs ? runGraceSeconds : 0;
  return {
    runGraceSeconds: run,
    terminationGracePeriodSeconds: config.app.terminationGracePeriodSeconds + run,
  };
}

/** `behavior` of the autoscaler of pods that run jobs: take them away one at a time, after a lull. */
export function scaleDownBehavior(config: RenderConfig): Record<string, unknown> {
  const { stabilizationWindowSeconds, podsPerPeriod, periodSeconds } = config.autoscaling.scaleDown;
  return {
    scaleDown: {
      stabilizationWindowSeconds,
      policies: [{ type: 'Pods', value: podsPerPeriod, periodSeconds }],
    },
  };
}
