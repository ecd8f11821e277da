// The LangGraph server's drain contract: a pod that runs jobs gets its run grace on top of the stop
// every application pod gets, its server is told that same run grace, and the autoscalers of such
// pods take them away one at a time after a lull; an API server that runs no jobs keeps the short
// grace and the Kubernetes default autoscaling.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ResourceSpec } from '../../../src/controlplane/schemas/index.ts';
import { LABEL_COMPONENT } from '../../../src/objects/ownership.ts';
import { type KubeObject, type RenderInput, renderDeployment } from '../../../src/render/index.ts';
import type { RenderConfig } from '../../../src/render/renderConfig.ts';
import { config, listener, withSpec } from '../../support/renderFixtures.ts';
import { validDeployment } from '../../support/specArbitraries.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered objects freely
type Json = Record<string, any>;

const GRACE_ENV = 'BG_JOB_SHUTDOWN_GRACE_PERIOD_SECS';
/** Every application workload: API server, queue workers, orchestrator, executors. */
const ALL_GROUPS: ResourceSpec = { queue_cpu: 0.5, orchestrator_min_scale: 1, executor_memory_mb: 256 };

function render(input: RenderInput, cfg: RenderConfig = config()): KubeObject[] {
  const result = renderDeployment(input, cfg);
  if (!result.ok) throw result.error;
  return result.value.objects;
}

function problems(input: RenderInput, cfg: RenderConfig = config()): Record<string, string> {
  const result = renderDeployment(input, cfg);
  if (result.ok) throw new Error('expected the render to fail');
  return Object.fromEntries(result.error.problems.map((p) => [p.path, p.message]));
}

interface PodStop {
  readonly grace: number;
  /** The run grace the server is told, as its variable says it (a literal, never a reference). */
  readonly env: Json | undefined;
  /** Seconds it keeps serving when told to stop (a `preStop` sleep, or the drain's first argument). */
  readonly preStop: number;
  /** The most its drain waits for its runs: 0 without one. */
  readonly drain: number;
}

/** A `preStop` read back: the drain's arguments (serve, run grace, port), or a sleep's seconds. */
function preStopOf(lifecycle: Json | undefined): { preStop: number; drain: number } {
  const command = lifecycle?.preStop?.exec?.command as string[] | undefined;
  if (command) return { preStop: Number(command[3]), drain: Number(command[4]) };
  return { preStop: lifecycle?.preStop?.sleep?.seconds ?? 0, drain: 0 };
}

/** The stop of each application pod, by role (`main`, `queue`, `orchestrator`, `executor`). */
function stops(objects: KubeObject[]): Record<string, PodStop> {
  const found: Record<string, PodStop> = {};
  for (const object of objects as Json[]) {
    const template = object.kind === 'PodTemplate' ? object.template : object.spec?.template;
    const role = template?.metadata?.labels?.[LABEL_COMPONENT];
    if (!['main', 'queue', 'orchestrator', 'executor'].includes(role)) continue;
    const app = template.spec.containers[0];
    found[role] = {
      grace: template.spec.terminationGracePeriodSeconds,
      env: (app.env as Json[]).find((variable) => variable.name === GRACE_ENV),
      ...preStopOf(app.lifecycle),
    };
  }
  return found;
}

const literal = (seconds: number) => ({ name: GRACE_ENV, value: String(seconds) });

describe('the termination grace of application pods', () => {
  it('is the run grace on top of the short stop for every pod that runs jobs, the short stop alone for an API server beside a queue group', () => {
    expect(stops(render(withSpec(ALL_GROUPS)))).toEqual({
      main: { grace: 30, env: literal(0), preStop: 5, drain: 0 },
      queue: { grace: 210, env: literal(180), preStop: 0, drain: 180 },
      orchestrator: { grace: 210, env: literal(180), preStop: 0, drain: 180 },
      executor: { grace: 210, env: literal(180), preStop: 0, drain: 180 },
    });
    // Without a queue group the API server runs the jobs: its preStop sleep, its runs, its exit.
    const alone = stops(render(withSpec({})));
    expect(alone).toEqual({ main: { grace: 210, env: literal(180), preStop: 5, drain: 180 } });
    const main = alone.main as PodStop;
    expect(main.grace - main.preStop - 180).toBeGreaterThanOrEqual(20);
  });

  it('follows the settings, one number for the pod and its server', () => {
    const cfg = config({
      app: { terminationGracePeriodSeconds: 45, runGraceSeconds: 900, maxRunGraceSeconds: 900 },
    });
    const byRole = stops(render(withSpec({ queue_cpu: 0.5 }), cfg));
    expect(byRole.queue).toEqual({ grace: 945, env: literal(900), preStop: 0, drain: 900 });
    expect(byRole.main).toEqual({ grace: 45, env: literal(0), preStop: 5, drain: 0 });
    expect(() => config({ app: { runGraceSeconds: 601 } })).toThrow(/maxRunGraceSeconds/);
  });

  it("takes a deployment's own run grace, up to the platform's most, as a literal the pod's grace is made of", () => {
    const own = (value: string) => withSpec({ queue_cpu: 0.5 }, { secrets: [{ name: GRACE_ENV, value }] });
    const byRole = stops(render(own(' 420 ')));
    expect(byRole.queue).toEqual({ grace: 450, env: literal(420), preStop: 0, drain: 420 });
    // The API server beside the queue runs none, whatever the deployment asks for its runs.
    expect(byRole.main).toEqual({ grace: 30, env: literal(0), preStop: 5, drain: 0 });
    expect(stops(render(own('0'))).queue).toEqual({ grace: 30, env: literal(0), preStop: 0, drain: 0 });
    expect(stops(render(own('1200'), config({ app: { maxRunGraceSeconds: 1200 } }))).queue?.grace).toBe(1230);
    for (const value of ['601', '-1', '1.5', 'forever', '', '99999999']) {
      const found = problems(own(value));
      expect(Object.keys(found), value).toEqual(['secrets[0].value']);
      expect(found['secrets[0].value']).toBe(
        `${GRACE_ENV} must be a whole number of seconds from 0 to 600 (render.app.maxRunGraceSeconds): its pods are given that long to stop, on top of render.app.terminationGracePeriodSeconds`,
      );
    }
  });

  it('refuses a run grace from a secret reference, whose value render cannot read', () => {
    const input = withSpec(
      {},
      { secret_references: [{ name: GRACE_ENV, secret_name: 'tuning', secret_key: 'grace' }] },
    );
    expect(Object.keys(problems(input))).toEqual(['secret_references[0].name']);
    expect(problems(input)['secret_references[0].name']).toMatch(/cannot come from a secret reference/);
  });

  it('tells no server when the variable is null, and still gives the pods that run jobs their run grace', () => {
    const cfg = config({ app: { runGraceEnv: null } });
    const input = withSpec({ queue_cpu: 0.5 }, { secrets: [{ name: GRACE_ENV, value: 'not read' }] });
    const objects = render(input, cfg);
    const byRole = stops(objects);
    expect(byRole.queue?.grace).toBe(210);
    expect(byRole.main?.grace).toBe(30);
    // The deployment's variable is then an ordinary one, from its Secret.
    expect(byRole.queue?.env).toEqual({
      name: GRACE_ENV,
      valueFrom: { secretKeyRef: { name: 'hello-secrets', key: GRACE_ENV } },
    });
  });

  it('holds for any valid deployment: grace = short stop + the run grace its server is told, which is 0 only where no job runs', () => {
    const cfg = config();
    fc.assert(
      fc.property(validDeployment, (deployment) => {
        const input = { deployment, revision: undefined, listener, allowedNamespaces: undefined };
        const byRole = stops(render(input, cfg));
        for (const [role, stop] of Object.entries(byRole)) {
          const told = Number(stop.env?.value);
          expect(stop.grace, role).toBe(cfg.app.terminationGracePeriodSeconds + told);
          expect(told, role).toBe(role === 'main' && 'queue' in byRole ? 0 : cfg.app.runGraceSeconds);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('scale-down of the workloads that run jobs', () => {
  const SLOW = {
    scaleDown: {
      stabilizationWindowSeconds: 300,
      policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }],
    },
  };
  const hpa = (objects: KubeObject[], name: string): Json | undefined =>
    (objects as Json[]).find((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name === name);

  it('takes queue workers and orchestrators away one a minute after five minutes of lull, the API server beside them as Kubernetes does', () => {
    const objects = render(
      withSpec({ max_scale: 3, queue_max_scale: 4, orchestrator_min_scale: 1, orchestrator_max_scale: 2 }),
    );
    expect(hpa(objects, 'hello-queue')?.spec.behavior).toEqual(SLOW);
    expect(hpa(objects, 'hello-orchestrator')?.spec.behavior).toEqual(SLOW);
    expect(hpa(objects, 'hello')?.spec).not.toHaveProperty('behavior');
  });

  it('takes an API server that runs the jobs away as slowly, and follows the settings', () => {
    expect(hpa(render(withSpec({ max_scale: 3 })), 'hello')?.spec.behavior).toEqual(SLOW);
    const cfg = config({
      autoscaling: { scaleDown: { stabilizationWindowSeconds: 600, podsPerPeriod: 2, periodSeconds: 120 } },
    });
    expect(hpa(render(withSpec({ queue_max_scale: 4 }), cfg), 'hello-queue')?.spec.behavior).toEqual({
      scaleDown: {
        stabilizationWindowSeconds: 600,
        policies: [{ type: 'Pods', value: 2, periodSeconds: 120 }],
      },
    });
    // Bounds the HorizontalPodAutoscaler's API would refuse past.
    expect(() => config({ autoscaling: { scaleDown: { stabilizationWindowSeconds: 3601 } } })).toThrow();
    expect(() => config({ autoscaling: { scaleDown: { periodSeconds: 1801 } } })).toThrow();
    expect(() => config({ autoscaling: { scaleDown: { podsPerPeriod: 0 } } })).toThrow();
  });

  it("gives KEDA's autoscaler of queue workers the same behaviour", () => {
    const objects = render(
      withSpec({ queue_min_scale: 0, queue_max_scale: 5, db_storage_gi: 1 }),
      config({ autoscaling: { queue: 'keda' } }),
    ) as Json[];
    const scaled = objects.find((o) => o.kind === 'ScaledObject');
    expect(scaled?.spec.advanced).toEqual({ horizontalPodAutoscalerConfig: { behavior: SLOW } });
  });
});

describe('the drain of pods that run jobs', () => {
  it('waits for the runs of every pod that runs jobs, after the API server’s own preStop sleep; none where no job runs', () => {
    const byRole = stops(render(withSpec(ALL_GROUPS)));
    expect(byRole.main).toMatchObject({ preStop: 5, drain: 0 });
    for (const role of ['queue', 'orchestrator', 'executor'])
      expect(byRole[role]).toMatchObject({ drain: 180 });
    // Within the pod's grace, leaving the server its exit after the drain.
    const alone = stops(render(withSpec({}))).main as PodStop;
    expect(alone).toMatchObject({ preStop: 5, drain: 180 });
    expect(alone.grace - alone.preStop - alone.drain).toBe(25);
  });

  it('runs the image’s own python3, asking the server on its port', () => {
    const objects = render(withSpec({ queue_cpu: 0.5 }), config({ app: { containerPort: 9000 } })) as Json[];
    const queue = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'hello-queue');
    const command = queue?.spec.template.spec.containers[0].lifecycle.preStop.exec.command as string[];
    expect(command[0]).toBe('python3');
    expect(command.slice(3)).toEqual(['0', '180', '9000']);
  });

  it('is turned off by render.app.runDrain, leaving the preStop sleep alone', () => {
    const byRole = stops(render(withSpec({}), config({ app: { runDrain: false } })));
    expect(byRole.main).toEqual({ grace: 210, env: literal(180), preStop: 5, drain: 0 });
    const queue = stops(render(withSpec({ queue_cpu: 0.5 }), config({ app: { runDrain: false } }))).queue;
    expect(queue).toEqual({ grace: 210, env: literal(180), preStop: 0, drain: 0 });
  });
});

describe('the disruption budget of queue workers', () => {
  const budgets = (objects: KubeObject[]) =>
    (objects as Json[])
      .filter((o) => o.kind === 'PodDisruptionBudget')
      .map((o) => [o.metadata.name, o.spec.maxUnavailable, o.spec.selector.matchLabels[LABEL_COMPONENT]]);

  it('lets an eviction take one queue worker at a time, in every deployment type', () => {
    expect(budgets(render(withSpec({ queue_min_scale: 2 }))).sort()).toEqual([['hello-queue', 1, 'queue']]);
    const dev = withSpec({ queue_min_scale: 2 });
    const source = { ...dev.deployment.source_config, deployment_type: 'prod' as const };
    const prod = render({ ...dev, deployment: { ...dev.deployment, source_config: source } });
    expect(budgets(prod).sort()).toEqual([
      ['hello', 1, 'main'],
      ['hello-queue', 1, 'queue'],
    ]);
  });

  it('is turned off by render.queue.podDisruptionBudget', () => {
    expect(
      budgets(render(withSpec({ queue_min_scale: 2 }), config({ queue: { podDisruptionBudget: false } }))),
    ).toEqual([]);
  });
});
