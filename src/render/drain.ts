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

/**
 * The drain of a pod that runs jobs, as a LangGraph image can run it: its own `python3` and the
 * standard library (psycopg where the process cannot say, as the images of the MIT runtime have
 * it). Arguments: the seconds to keep serving first, the run grace, the server's port. It asks the
 * process for its active runs once a second and ends at 0 or at the run grace; where the process
 * does not report them, it counts the deployment's runs `running` in its database; where neither
 * answers for 10 s in a row, it ends: no run records its end without its database, and a deleted
 * deployment's stores go with it (waiting out the grace held every deletion that long). It always
 * exits 0: the kubelet sends SIGTERM next either way.
 */
export const RUN_DRAIN_SCRIPT = `import json, os, sys, time, urllib.request
serve, grace, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
time.sleep(serve)
deadline = time.monotonic() + grace
def own():
    try:
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics?format=json" % port, timeout=5) as r:
            return int(json.load(r)["workers"]["active"])
    except Exception:
        return None
def deployment():
    uri = os.environ.get("DATABASE_URI") or os.environ.get("POSTGRES_URI")
    if not uri:
        return None
    try:
        import psycopg
        uri = uri.replace("+asyncpg", "").replace("+psycopg", "")
        with psycopg.connect(uri, connect_timeout=5) as c:
            return int(c.execute("select count(*) from runs where status = 'running'").fetchone()[0])
    except Exception:
        return None
silent = 0
while time.monotonic() < deadline:
    active = own()
    if active is None:
        active = deployment()
    silent = silent + 1 if active is None else 0
    if active == 0 or silent >= 10:
        break
    time.sleep(1)
`;

/**
 * The `lifecycle` of an application container: for a pod that runs jobs (with `runDrain`), the
 * drain, after `serveSeconds` (the API server's, while its Service drops it); otherwise that sleep
 * alone, if any.
 */
export function stopHook(
  drain: PodDrain,
  serveSeconds: number,
  config: RenderConfig,
): Record<string, unknown> | undefined {
  if (config.app.runDrain && drain.runGraceSeconds > 0) {
    const args = [serveSeconds, drain.runGraceSeconds, config.app.containerPort].map(String);
    return { preStop: { exec: { command: ['python3', '-c', RUN_DRAIN_SCRIPT, ...args] } } };
  }
  return serveSeconds > 0 ? { preStop: { sleep: { seconds: serveSeconds } } } : undefined;
}
