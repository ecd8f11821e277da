// No run lost, on the real node: a LangGraph server (stock langgraph-api, MIT Postgres + Redis
// runtime) deployed by the official LangGraph CLI through the emulator and the agent (a real
// process, so that it can be SIGKILLed), with two queue workers taking two runs each. Runs of the
// `long_run` graph, each longer than the old 30 s grace, are started through the Service as a
// client would, and once all run, an event happens: a new revision rolls out; the agent is
// SIGKILLed mid-rollout and restarted; a worker is evicted through the Eviction API (its
// PodDisruptionBudget refusing a second eviction); the database pod is deleted; the Redis pod is
// deleted; the queue group scales down. Each execution of a run's work is a row of
// `long_run_executions` in the deployment's PostgreSQL: for the first four events every run ends
// `success` with its result, its work executed exactly once; for the stores' restarts every run
// is answered (`success` with its result, or — the test image's MIT runtime does not retry a
// store's connection error — `error`), the test prints how many of each and how many executed
// twice, and the thread state is intact.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PolicyV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { type AgentProcess, startAgentProcess, writeAgentConfig } from '../../support/agentProcess.ts';
import { eventually } from '../../support/eventually.ts';
import { installLanggraphCli, langgraphShell } from '../../support/langgraphCli.ts';
import { databaseQuery, NODE_LANGGRAPH_JSON, serviceClient } from '../../support/langgraphServer.ts';
import {
  image,
  REAL_NODE_NAMESPACE_ANNOTATIONS,
  type RealNodeImages,
  realNodeFor,
  realNodeRender,
} from '../../support/realNodeSuite.ts';

const API_KEY = 'runs-survive-test-key';
const NAME = 'runs';
const AGENT = 'runs-survive-agent';
/** Longer than the 30 s every pod was given to stop before the drain contract. */
const RUN_SECONDS = 40;
/** Two queue workers taking two runs each: four runs fill both, so each event meets runs in flight. */
const WORKERS = 2;
const JOBS_PER_WORKER = 2;
const RUNS = WORKERS * JOBS_PER_WORKER;
/**
 * Whether the server retries a run whose write meets a store's restart. The MIT runtime of the
 * test image does not: it retries only its own `RetryableException`, so a run that meets a broken
 * database or Redis connection ends `error`, even where its work ran to its end. With a runtime
 * that retries them, every run of those events must end `success`: set true.
 */
const STORE_ERRORS_RETRIED = false;
const node = realNodeFor('node/runs-survive');

interface StartedRun {
  readonly threadId: string;
  readonly runId: string;
}

/** Per run, what its executions say (`long_run_executions`). */
interface Executions {
  readonly rows: number;
  readonly finished: number;
  readonly cut: number;
  readonly maxAttempt: number;
}

describe.skipIf(!node)('runs in flight survive the platform’s routine operations, on a real node', () => {
  const realNode = node as RealNodeImages;
  let bin: string;
  let world: World;
  let dir: string;
  let ns: string;
  let configPath: string;
  let deploymentId = '';
  let counterThread = '';
  const agents: AgentProcess[] = [];

  const cli = langgraphShell({
    bin: () => bin,
    dir: () => dir,
    url: () => world.emulator.url,
    apiKey: API_KEY,
    vars: () => ({ LISTENER_ID: world.listenerId, NAMESPACE: ns, DEPLOYMENT_ID: deploymentId }),
    timeoutMs: 280_000,
  });

  async function startAgent(): Promise<AgentProcess> {
    const agent = startAgentProcess(configPath, AGENT, { env: { K8S_LISTENER_API_KEY: API_KEY } });
    agents.push(agent);
    await agent.started;
    return agent;
  }

  const server = serviceClient(
    () => world,
    () => ns,
    NAME,
  );

  async function pods(component: string): Promise<V1Pod[]> {
    const list = await world.kube.core.listNamespacedPod({
      namespace: ns,
      labelSelector: `app.kubernetes.io/component=${component}`,
    });
    return list.items;
  }

  const psql = databaseQuery(
    () => world,
    () => ns,
    () => inject('clusterBinDir'),
  );

  /** Starts `RUNS` long runs, each on a thread of its own, and returns once every one is running. */
  async function startRuns(): Promise<StartedRun[]> {
    const started: StartedRun[] = [];
    for (let i = 0; i < RUNS; i++) {
      // After a store's restart the server's first requests may meet a pooled connection the
      // restart broke (HTTP 500): a client asks again.
      const one = await eventually(
        `run ${i + 1} of ${RUNS} started`,
        async () => {
          const thread = await server('POST', '/threads', {}).catch(() => undefined);
          if (thread?.status !== 200) return undefined;
          const threadId = (thread.body as { thread_id: string }).thread_id;
          const run = await server('POST', `/threads/${threadId}/runs`, {
            assistant_id: 'long_run',
            input: { seconds: RUN_SECONDS },
          }).catch(() => undefined);
          return run?.status === 200
            ? { threadId, runId: (run.body as { run_id: string }).run_id }
            : undefined;
        },
        60_000,
        1_000,
      );
      started.push(one);
    }
    await eventually(
      `all ${RUNS} runs running`,
      async () => {
        for (const run of started) if ((await status(run)) !== 'running') return undefined;
        return true;
      },
      60_000,
      500,
    );
    return started;
  }

  async function status(run: StartedRun): Promise<string> {
    const answer = await server('GET', `/threads/${run.threadId}/runs/${run.runId}`);
    return (answer.body as { status?: string } | undefined)?.status ?? `HTTP ${answer.status}`;
  }

  /**
   * Waits for every run to end (through a store's restart the server may not answer for a while),
   * then reads each one's final status, result and executions; prints the counts of `event`.
   */
  async function outcome(event: string, runs: readonly StartedRun[]) {
    const finals = await eventually(
      `the runs of "${event}" ended`,
      async () => {
        const found: string[] = [];
        for (const run of runs) {
          const now = await status(run).catch(() => 'unanswered');
          if (['pending', 'running', 'unanswered'].includes(now) || now.startsWith('HTTP')) return undefined;
          found.push(now);
        }
        return found;
      },
      240_000,
      1_000,
    );
    // Read through a store's restart: the server and the database may not answer for a while.
    const results = await eventually(
      `the results of "${event}" read`,
      async () => {
        const read: unknown[] = [];
        for (const run of runs) {
          const joined = await server('GET', `/threads/${run.threadId}/runs/${run.runId}/join`).catch(
            () => undefined,
          );
          if (joined?.status !== 200) return undefined;
          read.push(joined.body);
        }
        return read;
      },
      120_000,
      1_000,
    );
    const ids = runs.map((run) => `'${run.runId}'`).join(',');
    const rows = await eventually(
      `the executions of "${event}" read`,
      () =>
        psql(
          `select run_id, count(*), count(finished_at), count(cut_at), max(attempt) from long_run_executions where run_id in (${ids}) group by run_id`,
        ).catch(() => undefined),
      120_000,
      1_000,
    );
    const executions = new Map<string, Executions>();
    for (const line of rows.split('\n').filter(Boolean)) {
      const [runId = '', total, finished, cut, maxAttempt] = line.split('|');
      executions.set(runId, {
        rows: Number(total),
        finished: Number(finished),
        cut: Number(cut),
        maxAttempt: Number(maxAttempt),
      });
    }
    const of = (run: StartedRun) =>
      executions.get(run.runId) ?? { rows: 0, finished: 0, cut: 0, maxAttempt: 0 };
    const counts = {
      runs: runs.length,
      success: finals.filter((s) => s === 'success').length,
      once: runs.filter((run) => of(run).rows === 1 && of(run).finished === 1).length,
      cutAndRetried: runs.filter((run) => of(run).finished === 1 && of(run).rows > 1).length,
      twice: runs.filter((run) => of(run).finished > 1).length,
      neverFinished: runs.filter((run) => of(run).finished === 0).length,
    };
    const errors = runs
      .map((_, i) => (finals[i] === 'success' ? undefined : JSON.stringify(results[i]).slice(0, 300)))
      .filter(Boolean);
    console.log(
      `[runs-survive] ${event}: ${counts.runs} runs of ${RUN_SECONDS} s, ${counts.success} success, executed once ${counts.once}, cut and retried ${counts.cutAndRetried}, executed twice ${counts.twice}, never finished ${counts.neverFinished}; statuses ${JSON.stringify(finals)}${errors.length ? `; errors ${errors.join(' ')}` : ''}`,
    );
    return { finals, results, executions: runs.map(of), counts };
  }

  /** Every run `success` with its result, its work executed exactly once. */
  function expectExactlyOnce(runs: readonly StartedRun[], ended: Awaited<ReturnType<typeof outcome>>): void {
    expect(ended.finals).toEqual(runs.map(() => 'success'));
    expect(ended.results).toEqual(
      runs.map((run) => expect.objectContaining({ seconds: RUN_SECONDS, run_id: run.runId, attempt: 1 })),
    );
    expect(ended.executions).toEqual(runs.map(() => ({ rows: 1, finished: 1, cut: 0, maxAttempt: 1 })));
  }

  /**
   * Every run ended and the client is told how: with the server's own retry of a store's
   * connection error, every run `success` with its result (however often its work ran); without
   * it (`STORE_ERRORS_RETRIED`), each run `success` with its result or `error` with the server's
   * error — none left pending or running, none without an answer.
   */
  function expectEveryRunAnswered(
    runs: readonly StartedRun[],
    ended: Awaited<ReturnType<typeof outcome>>,
  ): void {
    if (STORE_ERRORS_RETRIED) expect(ended.finals).toEqual(runs.map(() => 'success'));
    runs.forEach((run, i) => {
      const final = ended.finals[i];
      expect(['success', 'error']).toContain(final);
      expect(ended.results[i]).toEqual(
        final === 'success'
          ? expect.objectContaining({ seconds: RUN_SECONDS, run_id: run.runId })
          : { __error__: expect.anything() },
      );
      if (final === 'success') expect(ended.executions[i]?.finished).toBeGreaterThanOrEqual(1);
    });
  }

  async function workloadGenerations(): Promise<Record<string, number>> {
    const found: Record<string, number> = {};
    for (const name of [NAME, `${NAME}-queue`]) {
      const workload = await world.kube.apps.readNamespacedDeployment({ name, namespace: ns });
      found[name] = workload.metadata?.generation ?? 0;
    }
    return found;
  }

  async function expectNoRestarts(): Promise<void> {
    for (const pod of [...(await pods('main')), ...(await pods('queue'))])
      for (const container of pod.status?.containerStatuses ?? [])
        expect(container.restartCount, `${pod.metadata?.name}/${container.name}`).toBe(0);
  }

  /** Waits until `component` has exactly `count` pods, all Ready and none stopping. */
  async function settled(component: string, count: number): Promise<void> {
    await eventually(
      `${count} ${component} pods ready and none stopping`,
      async () => {
        const found = await pods(component);
        const ready = found.filter(
          (pod) =>
            !pod.metadata?.deletionTimestamp &&
            pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        return found.length === count && ready.length === count ? true : undefined;
      },
      240_000,
      1_000,
    );
  }

  beforeAll(async () => {
    bin = await installLanggraphCli();
    world = await startWorld(inject('kubeconfigPath'), {
      namespaces: 1,
      apiKey: API_KEY,
      namespaceAnnotations: REAL_NODE_NAMESPACE_ANNOTATIONS,
    });
    [ns = ''] = world.namespaces;
    configPath = await writeAgentConfig(world, {
      leaseName: `lease-${ns}`,
      reconcile: { failureGraceMs: 120_000 },
    });
    // The CLI sends an empty resource spec: the listener's defaults give every deployment the
    // PostgreSQL and Redis a LangGraph server needs.
    const stores = realNodeRender(realNode);
    const file = JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>;
    file.render = {
      ...stores,
      database: { ...stores.database, provision: 'always' },
      kvstore: { ...stores.kvstore, provision: 'always' },
    };
    await writeFile(configPath, JSON.stringify(file));
    await startAgent();
    dir = await mkdtemp(join(tmpdir(), 'k8s-listener-runs-survive-'));
    await writeFile(join(dir, 'langgraph.json'), NODE_LANGGRAPH_JSON);
    const created = await cli(
      `langgraph deploy --image-uri ${image(realNode, 'langgraph-server')} --listener-id "$LISTENER_ID" --k8s-namespace "$NAMESPACE" --name ${NAME} --no-input`,
    );
    expect(created.code, `${created.stdout}\n${created.stderr}`).toBe(0);
    deploymentId = /Deployment ID: (\S+)/.exec(created.stdout)?.[1] ?? '';
    // The queue group, each worker taking two runs at once (the deployment's own
    // N_JOBS_PER_WORKER, which reaches the queue workers only).
    const deployment = (await world.client.listAllDeployments({ deployment_ids: [deploymentId] })).items[0];
    if (!deployment) throw new Error('deployment gone');
    const patched = await world.client.patchDeployment(deploymentId, {
      source_config: {
        resource_spec: {
          ...deployment.source_config.resource_spec,
          queue_min_scale: WORKERS,
          queue_max_scale: WORKERS,
        },
      },
      secrets: [{ name: 'N_JOBS_PER_WORKER', value: String(JOBS_PER_WORKER) }],
      source_revision_config: { image_uri: image(realNode, 'langgraph-server-2') },
    });
    await waitForRevision(world, patched, 'DEPLOYED', 240_000);
    await settled('queue', WORKERS);
    await settled('main', 1);
    // A thread whose state the stores' restarts must keep.
    counterThread = ((await server('POST', '/threads', {})).body as { thread_id: string }).thread_id;
    for (const count of [1, 2])
      expect(
        (await server('POST', `/threads/${counterThread}/runs/wait`, { assistant_id: 'counter', input: {} }))
          .body,
      ).toEqual({ count });
  }, 900_000);

  afterAll(async () => {
    for (const agent of agents) {
      if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGTERM');
      await agent.exited;
    }
    await world?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a new revision rolls out (the API server and the queue workers replaced): every run once', async () => {
    const runs = await startRuns();
    const before = (await pods('queue')).map((pod) => pod.metadata?.uid);
    const updated = await cli(
      `langgraph deploy --deployment-id "$DEPLOYMENT_ID" --image-uri ${image(realNode, 'langgraph-server')} --no-input`,
    );
    expect(updated.code, `${updated.stdout}\n${updated.stderr}`).toBe(0);
    const ended = await outcome('a new revision rolled out', runs);
    await settled('queue', WORKERS);
    // Every worker that held the runs was replaced.
    const after = (await pods('queue')).map((pod) => pod.metadata?.uid);
    expect(after.filter((uid) => before.includes(uid))).toEqual([]);
    expectExactlyOnce(runs, ended);
  }, 600_000);

  it('the agent SIGKILLed mid-rollout and restarted: every run once, no pod restarted or replaced because of it', async () => {
    await settled('main', 1);
    const runs = await startRuns();
    const generations = await workloadGenerations();
    const deploying = cli(
      `langgraph deploy --deployment-id "$DEPLOYMENT_ID" --image-uri ${image(realNode, 'langgraph-server-2')} --no-input`,
    );
    // Mid-rollout: the agent has applied the new revision and the old workers are draining.
    await eventually(
      'the rollout under way',
      async () => {
        const queue = await pods('queue');
        return queue.some((pod) => pod.metadata?.deletionTimestamp) ? true : undefined;
      },
      120_000,
      250,
    );
    const killed = agents.at(-1) as AgentProcess;
    killed.child.kill('SIGKILL');
    await killed.exited;
    await startAgent();
    const updated = await deploying;
    expect(updated.code, `${updated.stdout}\n${updated.stderr}`).toBe(0);
    const ended = await outcome('the agent SIGKILLed mid-rollout', runs);
    await settled('queue', WORKERS);
    // One rollout: what the restarted agent applied changed nothing it had rendered.
    const now = await workloadGenerations();
    expect(now).toEqual(Object.fromEntries(Object.entries(generations).map(([name, g]) => [name, g + 1])));
    await expectNoRestarts();
    expectExactlyOnce(runs, ended);
  }, 600_000);

  it('a queue worker evicted through the Eviction API, its PodDisruptionBudget refusing a second: every run once', async () => {
    await settled('queue', WORKERS);
    const budget = await eventually(
      'the queue workers’ PodDisruptionBudget counting both workers',
      async () => {
        const found = await world.kube.config.makeApiClient(PolicyV1Api).readNamespacedPodDisruptionBudget({
          name: `${NAME}-queue`,
          namespace: ns,
        });
        return found.status?.currentHealthy === WORKERS && found.status.disruptionsAllowed === 1
          ? found
          : undefined;
      },
      60_000,
      500,
    );
    expect(budget.spec?.maxUnavailable).toBe(1);
    const runs = await startRuns();
    const [first, second] = (await pods('queue')).map((pod) => pod.metadata?.name ?? '');
    const evict = (name: string) =>
      world.kube.core.createNamespacedPodEviction({
        name,
        namespace: ns,
        body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: ns } },
      });
    await evict(first ?? '');
    // As `kubectl drain` is told: the budget allows one worker away at a time.
    const refused = await evict(second ?? '').then(
      () => 'evicted',
      (error: { code?: number }) => error.code,
    );
    expect(refused).toBe(429);
    const ended = await outcome('a queue worker evicted', runs);
    await settled('queue', WORKERS);
    expectExactlyOnce(runs, ended);
  }, 600_000);

  it('the database pod deleted: every run answered, the executions counted, the thread state intact', async () => {
    await settled('queue', WORKERS);
    const runs = await startRuns();
    const [db] = await pods('database');
    await world.kube.core.deleteNamespacedPod({ name: db?.metadata?.name ?? '', namespace: ns });
    const ended = await outcome('the database pod deleted', runs);
    expectEveryRunAnswered(runs, ended);
    // The server's first reads after the restart may meet a pooled connection the restart broke
    // (HTTP 500): a client reads again, and the state must be there. The failed reads are printed.
    let failedReads = 0;
    const state = await eventually(
      'the thread state read',
      async () => {
        const read = await server('GET', `/threads/${counterThread}/state`).catch(() => undefined);
        if (read?.status === 200) return read.body as { values: unknown };
        failedReads += 1;
        return undefined;
      },
      30_000,
      1_000,
    );
    console.log(
      `[runs-survive] the database pod deleted: ${failedReads} failed reads of the thread state first`,
    );
    expect(state.values).toEqual({ count: 2 });
    // The next event meets a database that is back.
    await settled('database', 1);
  }, 600_000);

  it('the Redis pod deleted: every run answered, the executions counted, the thread state intact', async () => {
    await settled('queue', WORKERS);
    const runs = await startRuns();
    const [redis] = await pods('kvstore');
    await world.kube.core.deleteNamespacedPod({ name: redis?.metadata?.name ?? '', namespace: ns });
    const ended = await outcome('the Redis pod deleted', runs);
    expectEveryRunAnswered(runs, ended);
    expect(
      (await server('POST', `/threads/${counterThread}/runs/wait`, { assistant_id: 'counter', input: {} }))
        .body,
    ).toEqual({ count: 3 });
  }, 600_000);
  it('the queue group scales down through the control plane: every run once', async () => {
    await settled('queue', WORKERS);
    const runs = await startRuns();
    const deployment = (await world.client.listAllDeployments({ deployment_ids: [deploymentId] })).items[0];
    if (!deployment) throw new Error('deployment gone');
    await world.client.patchDeployment(deploymentId, {
      source_config: {
        resource_spec: { ...deployment.source_config.resource_spec, queue_min_scale: 1, queue_max_scale: 1 },
      },
    });
    await eventually(
      'a worker stopping',
      async () => ((await pods('queue')).some((pod) => pod.metadata?.deletionTimestamp) ? true : undefined),
      120_000,
      250,
    );
    const ended = await outcome('the queue group scaled down', runs);
    await settled('queue', 1);
    expectExactlyOnce(runs, ended);
  }, 600_000);
});
