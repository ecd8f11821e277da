// A real LangGraph server (stock langgraph-api with the MIT Postgres + Redis runtime, serving a
// counter and a long-run graph) deployed by the official LangGraph CLI through the emulator and
// the agent, on the real node: the CLI's wait ends DEPLOYED only once the server answers GET /ok;
// a run through the deployment's Service returns its result and its thread is in the agent's
// PostgreSQL; a long_run works its set time and records its one execution by run id there too;
// with a queue group, a queued run is taken by the queue worker; a new revision rolls out behind
// real readiness while a client calls the Service every 100 ms; delete removes the pods and keeps
// the database volume.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Agent } from '../../../src/manager/agent.ts';
import { kubectl } from '../../support/adminKube.ts';
import { startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
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

const API_KEY = 'langgraph-server-test-key';
const NAME = 'counter';
const node = realNodeFor('node/langgraph-server');

describe.skipIf(!node)('a LangGraph server deployed by the LangGraph CLI on a real node', () => {
  const realNode = node as RealNodeImages;
  let bin: string;
  let world: World;
  let agent: Agent;
  let dir: string;
  let ns: string;
  let deploymentId = '';
  let threadId = '';

  const cli = langgraphShell({
    bin: () => bin,
    dir: () => dir,
    url: () => world.emulator.url,
    apiKey: API_KEY,
    vars: () => ({ LISTENER_ID: world.listenerId, NAMESPACE: ns, DEPLOYMENT_ID: deploymentId }),
    timeoutMs: 280_000,
  });

  const server = serviceClient(
    () => world,
    () => ns,
    NAME,
  );

  const psql = databaseQuery(
    () => world,
    () => ns,
    () => inject('clusterBinDir'),
  );

  beforeAll(async () => {
    bin = await installLanggraphCli();
    world = await startWorld(inject('kubeconfigPath'), {
      namespaces: 1,
      apiKey: API_KEY,
      namespaceAnnotations: REAL_NODE_NAMESPACE_ANNOTATIONS,
    });
    [ns = ''] = world.namespaces;
    const stores = realNodeRender(realNode);
    agent = await startAgent(world, {
      allowedNamespaces: world.namespaces,
      // The CLI sends an empty resource spec: the listener's defaults give every deployment the
      // PostgreSQL and Redis a LangGraph server needs.
      render: {
        ...stores,
        database: { ...stores.database, provision: 'always' },
        kvstore: { ...stores.kvstore, provision: 'always' },
      },
      reconcile: { failureGraceMs: 120_000 },
    });
    dir = await mkdtemp(join(tmpdir(), 'k8s-listener-langgraph-server-'));
    await writeFile(join(dir, 'langgraph.json'), NODE_LANGGRAPH_JSON);
  }, 600_000);
  afterAll(async () => {
    await agent?.stop();
    await world?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('deploy --image-uri: the CLI’s wait ends DEPLOYED once the server answers GET /ok', async () => {
    const created = await cli(
      `langgraph deploy --image-uri ${image(realNode, 'langgraph-server')} --listener-id "$LISTENER_ID" --k8s-namespace "$NAMESPACE" --name ${NAME} --no-input`,
    );
    expect(created.code, `${created.stdout}\n${created.stderr}`).toBe(0);
    expect(created.stdout).toContain('Deployment successful!');
    deploymentId = /Deployment ID: (\S+)/.exec(created.stdout)?.[1] ?? '';
    const pods = await world.kube.core.listNamespacedPod({
      namespace: ns,
      labelSelector: 'app.kubernetes.io/component=main',
    });
    expect(pods.items.length).toBeGreaterThan(0);
    for (const pod of pods.items) {
      expect(pod.spec?.nodeName).toBe('real-node');
      expect(pod.spec?.containers[0]?.readinessProbe?.httpGet?.path).toBe('/ok');
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }
    expect((await server('GET', '/ok')).status).toBe(200);
  }, 300_000);

  it('runs the graph through the Service, and keeps its thread in the agent’s PostgreSQL', async () => {
    const thread = await server('POST', '/threads', {});
    expect(thread.status).toBe(200);
    threadId = (thread.body as { thread_id: string }).thread_id;
    const run = () =>
      server('POST', `/threads/${threadId}/runs/wait`, { assistant_id: 'counter', input: {} });
    expect((await run()).body).toEqual({ count: 1 });
    expect((await run()).body).toEqual({ count: 2 });
    expect(await psql(`select values->>'count' from threads where thread_id = '${threadId}'`)).toBe('2');
  });

  it('runs long_run for its set time, recording its one execution by run id in the agent’s PostgreSQL', async () => {
    const thread = await server('POST', '/threads', {});
    const longThread = (thread.body as { thread_id: string }).thread_id;
    const started = Date.now();
    const created = await server('POST', `/threads/${longThread}/runs`, {
      assistant_id: 'long_run',
      input: { seconds: 3 },
    });
    expect(created.status).toBe(200);
    const runId = (created.body as { run_id: string }).run_id;
    const joined = await server('GET', `/threads/${longThread}/runs/${runId}/join`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    expect(joined.body).toMatchObject({ seconds: 3, run_id: runId, attempt: 1 });
    // Started and finished once, on the API server (no queue group yet), never cut.
    expect(
      await psql(
        `select attempt, seconds, finished_at - started_at >= interval '3 seconds', cut_at is null, pod like '${NAME}-%' from long_run_executions where run_id = '${runId}'`,
      ),
    ).toBe('1|3|t|t|t');
  });

  it('has pgvector in the agent’s PostgreSQL, as LangGraph’s own data plane’s pgvector/pgvector:pg15 has', async () => {
    await psql('create extension if not exists vector');
    expect(await psql("select extversion from pg_extension where extname = 'vector'")).toBe('0.8.1');
    // A nearest neighbour by L2 distance: the extension's operators and index access work.
    await psql('create table if not exists embeddings (id int primary key, v vector(3))');
    await psql(
      "insert into embeddings values (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0,0,1]') on conflict do nothing",
    );
    await psql('create index if not exists embeddings_hnsw on embeddings using hnsw (v vector_l2_ops)');
    expect(await psql("select id from embeddings order by v <-> '[0.1,0.9,0]' limit 1")).toBe('2');
  });

  it('with a queue group: the API leaves runs to the queue worker, which takes a queued run', async () => {
    const deployment = (await world.client.listAllDeployments({ deployment_ids: [deploymentId] })).items[0];
    if (!deployment) throw new Error('deployment gone');
    const patched = await world.client.patchDeployment(deploymentId, {
      source_config: {
        resource_spec: { ...deployment.source_config.resource_spec, queue_min_scale: 1, queue_max_scale: 1 },
      },
      // A new image makes a new revision, whose DEPLOYED comes once both workloads rolled out.
      source_revision_config: { image_uri: image(realNode, 'langgraph-server-2') },
    });
    expect(patched.latest_revision_id).not.toBe(deployment.latest_revision_id);
    await waitForRevision(world, patched, 'DEPLOYED', 240_000);
    const main = await world.kube.apps.readNamespacedDeployment({ name: NAME, namespace: ns });
    expect(main.spec?.template.spec?.containers[0]?.env).toContainEqual({
      name: 'N_JOBS_PER_WORKER',
      value: '0',
    });
    // The previous revision's API pod runs jobs until it is gone (its preStop sleep, then its
    // graceful stop): the run is queued once only the new API pod, which runs none, is left.
    await eventually(
      'the previous revision’s API pod gone',
      async () => {
        const pods = await world.kube.core.listNamespacedPod({
          namespace: ns,
          labelSelector: 'app.kubernetes.io/component=main',
        });
        return pods.items.length === 1 && !pods.items[0]?.metadata?.deletionTimestamp ? true : undefined;
      },
      120_000,
    );
    const queued = await server('POST', `/threads/${threadId}/runs`, { assistant_id: 'counter', input: {} });
    expect(queued.status).toBe(200);
    const runId = (queued.body as { run_id: string }).run_id;
    const done = await eventually(
      'the queued run taken and finished',
      async () => {
        const status = (await server('GET', `/threads/${threadId}/runs/${runId}`)).body as { status: string };
        return status.status === 'success' ? status : undefined;
      },
      120_000,
      500,
    );
    expect(done.status).toBe('success');
    const workers = await world.kube.core.listNamespacedPod({
      namespace: ns,
      labelSelector: 'app.kubernetes.io/component=queue',
    });
    const worker = workers.items.find((pod) => pod.status?.phase === 'Running')?.metadata?.name ?? '';
    const workerLogs = await kubectl(inject('clusterBinDir'), world.kubeconfigPath, [
      'logs',
      '-n',
      ns,
      worker,
    ]);
    expect(workerLogs).toContain(runId);
    expect(((await server('GET', `/threads/${threadId}/state`)).body as { values: unknown }).values).toEqual({
      count: 3,
    });
  }, 300_000);

  it('rolls a new revision out behind real readiness while a client calls the Service every 100 ms', async () => {
    let calls = 0;
    const failures: string[] = [];
    let calling = true;
    const client = (async () => {
      while (calling) {
        calls += 1;
        try {
          const answer = await server('GET', `/threads/${threadId}`);
          if (answer.status !== 200) failures.push(`HTTP ${answer.status}`);
        } catch (error) {
          failures.push(
            error instanceof Error
              ? ((error.cause as Error | undefined)?.message ?? error.message)
              : String(error),
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const updated = await cli(
      `langgraph deploy --deployment-id "$DEPLOYMENT_ID" --image-uri ${image(realNode, 'langgraph-server')} --no-input`,
    );
    calling = false;
    await client;
    console.log(
      `rollout under load: ${calls} calls, ${failures.length} failed ${JSON.stringify(failures.slice(0, 5))}`,
    );
    expect(updated.code, `${updated.stdout}\n${updated.stderr}`).toBe(0);
    expect(updated.stdout).toContain('Deployment successful!');
    const main = await world.kube.apps.readNamespacedDeployment({ name: NAME, namespace: ns });
    expect(main.spec?.template.spec?.containers[0]?.image).toBe(image(realNode, 'langgraph-server'));
    expect(calls).toBeGreaterThan(20);
    expect(failures).toEqual([]);
    // The thread made before is still there, with its count.
    expect(((await server('GET', `/threads/${threadId}/state`)).body as { values: unknown }).values).toEqual({
      count: 3,
    });
  }, 300_000);

  it('deploy delete: the pods go, the database volume stays', async () => {
    const deleted = await cli(`langgraph deploy delete "$DEPLOYMENT_ID" --force`);
    expect(deleted.code, deleted.stderr).toBe(0);
    await eventually(
      'the pods gone',
      async () =>
        (await world.kube.core.listNamespacedPod({ namespace: ns })).items.length === 0 ? true : undefined,
      120_000,
    );
    const claims = await world.kube.core.listNamespacedPersistentVolumeClaim({ namespace: ns });
    expect(claims.items.map((c) => c.metadata?.name)).toEqual([`data-${NAME}-db-0`]);
  });
});
