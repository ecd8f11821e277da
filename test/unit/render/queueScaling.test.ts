// Queue workers scaled by KEDA on the runs that need them (render.autoscaling.queue: keda): a
// ScaledObject with a PostgreSQL trigger, its target the runs one worker takes — never 0 — and a
// TriggerAuthentication that names where the connection is, never holding a password itself.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadAgentConfig } from '../../../src/config/agentConfig.ts';
import type { ResourceSpec, Secret, SecretReference } from '../../../src/controlplane/schemas/index.ts';
import { LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID, LABEL_MANAGED_BY } from '../../../src/objects/ownership.ts';
import { type KubeObject, type RenderInput, renderDeployment } from '../../../src/render/index.ts';
import { KEDA_HPA_EXCLUDED_LABELS } from '../../../src/render/queueScaling.ts';
import {
  PENDING_RUNS_QUERY,
  RenderConfig,
  type RenderConfigInput,
} from '../../../src/render/renderConfig.ts';
import { withSpec } from '../../support/renderFixtures.ts';
import { validDeployment } from '../../support/specArbitraries.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered objects freely
type Json = Record<string, any>;

const KEDA: RenderConfigInput = { autoscaling: { queue: 'keda' } };
const QUEUE: ResourceSpec = { queue_min_scale: 1, queue_max_scale: 5, db_storage_gi: 1 };

function input(spec: ResourceSpec, secrets: Secret[] = [], references: SecretReference[] = []): RenderInput {
  return withSpec(spec, { secrets, secret_references: references });
}

function render(given: RenderInput, overrides: RenderConfigInput = KEDA) {
  return renderDeployment(given, RenderConfig.parse(overrides));
}

function objects(given: RenderInput, overrides: RenderConfigInput = KEDA): KubeObject[] {
  const result = render(given, overrides);
  if (!result.ok) throw result.error;
  return result.value.objects;
}

const named = (list: KubeObject[], kind: string, name: string): Json | undefined =>
  list.find((o) => o.kind === kind && o.metadata.name === name) as Json | undefined;
const env = (workload: Json | undefined): Json[] => workload?.spec.template.spec.containers[0].env ?? [];
const envValue = (workload: Json | undefined, name: string): unknown =>
  env(workload).find((variable) => variable.name === name)?.value;

describe('queue workers scaled on runs', () => {
  it('get a ScaledObject and a TriggerAuthentication in place of the cpu autoscaler', () => {
    const list = objects(input(QUEUE));
    const scaled = named(list, 'ScaledObject', 'hello-queue');
    expect(scaled?.apiVersion).toBe('keda.sh/v1alpha1');
    expect(named(list, 'HorizontalPodAutoscaler', 'hello-queue')).toBeUndefined();
    expect(scaled?.spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'hello-queue' },
      minReplicaCount: 1,
      maxReplicaCount: 5,
      pollingInterval: 15,
      cooldownPeriod: 300,
    });
    expect(scaled?.spec.triggers).toEqual([
      {
        type: 'postgresql',
        metadata: {
          host: 'hello-db.apps.svc',
          port: '5432',
          sslmode: 'disable',
          query: PENDING_RUNS_QUERY,
          targetQueryValue: '10',
          activationTargetQueryValue: '0',
        },
        authenticationRef: { kind: 'TriggerAuthentication', name: 'hello-queue' },
      },
    ]);
    // The user, database and password from the generated credentials Secret: names, never values.
    expect(named(list, 'TriggerAuthentication', 'hello-queue')?.spec).toEqual({
      secretTargetRef: [
        { parameter: 'userName', name: 'hello-db-credentials', key: 'username' },
        { parameter: 'dbName', name: 'hello-db-credentials', key: 'database' },
        { parameter: 'password', name: 'hello-db-credentials', key: 'password' },
      ],
    });
    // The replica count is KEDA's (its HPA's): the Deployment does not set one.
    const queue = named(list, 'Deployment', 'hello-queue');
    expect(queue?.spec.replicas).toBeUndefined();
    // The workers take as many runs at once as the target counts for each; the API server none.
    expect(envValue(queue, 'N_JOBS_PER_WORKER')).toBe('10');
    expect(envValue(named(list, 'Deployment', 'hello'), 'N_JOBS_PER_WORKER')).toBe('0');
  });

  it('counts the runs in the pending and running states of the LangGraph server’s run table', () => {
    expect(PENDING_RUNS_QUERY).toMatch(/FROM run WHERE status IN \('pending', 'running'\)/);
    const custom = "SELECT count(*) FROM runs WHERE status = 'pending'";
    const list = objects(input(QUEUE), {
      autoscaling: { queue: 'keda', keda: { pendingRunsQuery: custom } },
    });
    expect(named(list, 'ScaledObject', 'hello-queue')?.spec.triggers[0].metadata.query).toBe(custom);
  });

  it('scales a queue with queue_min_scale 0 to zero (an HPA cannot)', () => {
    const list = objects(input({ ...QUEUE, queue_min_scale: 0 }));
    expect(named(list, 'ScaledObject', 'hello-queue')?.spec.minReplicaCount).toBe(0);
    const cpu = objects(input({ ...QUEUE, queue_min_scale: 0 }), {});
    expect(named(cpu, 'HorizontalPodAutoscaler', 'hello-queue')?.spec.minReplicas).toBe(1);
  });

  it.each([
    ['1', 1],
    [' 4 ', 4],
    ['25', 25],
  ])('aims at the deployment’s own N_JOBS_PER_WORKER %j', (value, target) => {
    const list = objects(input(QUEUE, [{ name: 'N_JOBS_PER_WORKER', value }]));
    const scaled = named(list, 'ScaledObject', 'hello-queue');
    expect(scaled?.spec.triggers[0].metadata.targetQueryValue).toBe(String(target));
    // The agent sets no value of its own beside the deployment's (which reaches the workers).
    const queue = named(list, 'Deployment', 'hello-queue');
    expect(env(queue).filter((variable) => variable.name === 'N_JOBS_PER_WORKER')).toEqual([
      {
        name: 'N_JOBS_PER_WORKER',
        valueFrom: { secretKeyRef: { name: 'hello-secrets', key: 'N_JOBS_PER_WORKER' } },
      },
    ]);
  });

  it.each([['0'], ['00'], ['-3'], ['2.5'], ['ten'], [''], ['1000000']])(
    'refuses N_JOBS_PER_WORKER %j: KEDA cannot aim at 0 runs a worker, and the value never reaches the message',
    (value) => {
      const result = render(input(QUEUE, [{ name: 'N_JOBS_PER_WORKER', value }]));
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.error.problems).toEqual([
        { path: 'secrets[0].value', message: expect.stringContaining('whole number of at least 1') },
      ]);
      if (value.trim() !== '') expect(result.error.message).not.toContain(`"${value}"`);
    },
  );

  it('refuses a target of 0 in the configuration', () => {
    const zero = RenderConfig.safeParse({ autoscaling: { queue: 'keda', keda: { jobsPerWorker: 0 } } });
    expect(zero.success).toBe(false);
    expect(zero.error?.issues[0]?.path).toEqual(['autoscaling', 'keda', 'jobsPerWorker']);
  });

  it('never renders a target below 1, for any valid deployment and jobs per worker', () => {
    let scaledObjects = 0;
    fc.assert(
      fc.property(validDeployment, fc.integer({ min: 1, max: 500 }), (deployment, jobsPerWorker) => {
        const config = RenderConfig.parse({
          autoscaling: { queue: 'keda', keda: { jobsPerWorker } },
          database: { provision: 'always' },
        });
        const result = renderDeployment(
          { ...withSpec({}), deployment: { ...deployment, source_config: { ...deployment.source_config } } },
          config,
        );
        if (!result.ok) return;
        for (const object of result.value.objects.filter((o) => o.kind === 'ScaledObject')) {
          scaledObjects++;
          const target = (object as Json).spec.triggers[0].metadata.targetQueryValue;
          expect(typeof target).toBe('string');
          expect(Number(target)).toBeGreaterThanOrEqual(1);
          expect(Number.isInteger(Number(target))).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
    // Not vacuous: the generated deployments do have queues scaled on runs.
    expect(scaledObjects).toBeGreaterThan(10);
  });

  it('takes the configured jobs per worker for a value from a secret reference, and says so', () => {
    const result = render(
      input(QUEUE, [], [{ name: 'N_JOBS_PER_WORKER', secret_name: 'tuning', secret_key: 'jobs' }]),
      { autoscaling: { queue: 'keda', keda: { jobsPerWorker: 3 } } },
    );
    if (!result.ok) throw result.error;
    const scaled = named(result.value.objects, 'ScaledObject', 'hello-queue');
    expect(scaled?.spec.triggers[0].metadata.targetQueryValue).toBe('3');
    expect(
      envValue(named(result.value.objects, 'Deployment', 'hello-queue'), 'N_JOBS_PER_WORKER'),
    ).toBeUndefined();
    expect(result.value.notes).toContainEqual(expect.stringContaining('from a secret reference'));
  });

  it('dials no database the deployment brings unless the platform opts in: its own address would be KEDA’s to dial', () => {
    const brought = input({ queue_min_scale: 1, queue_max_scale: 3 }, [
      { name: 'DATABASE_URI', value: 'postgresql://u:pw@10.0.0.99:5432/app' },
    ]);
    const result = render(brought);
    if (!result.ok) throw result.error;
    const kinds = result.value.objects.map((o) => o.kind);
    expect(kinds).not.toContain('ScaledObject');
    expect(kinds).not.toContain('TriggerAuthentication');
    expect(named(result.value.objects, 'HorizontalPodAutoscaler', 'hello-queue')).toBeDefined();
    expect(result.value.notes).toContainEqual(
      expect.stringContaining('only with render.autoscaling.keda.broughtDatabases'),
    );
  });

  it('with the platform’s consent, reads a database the deployment brings from the Secret its pods read it from', () => {
    const consent: RenderConfigInput = { autoscaling: { queue: 'keda', keda: { broughtDatabases: true } } };
    const own = objects(
      input({ queue_min_scale: 1, queue_max_scale: 3 }, [
        { name: 'DATABASE_URI', value: 'postgresql://u:pw@db.example.test/app' },
      ]),
      consent,
    );
    expect(named(own, 'TriggerAuthentication', 'hello-queue')?.spec.secretTargetRef).toEqual([
      { parameter: 'connection', name: 'hello-secrets', key: 'DATABASE_URI' },
    ]);
    const metadata = named(own, 'ScaledObject', 'hello-queue')?.spec.triggers[0].metadata;
    expect(Object.keys(metadata).sort()).toEqual(['activationTargetQueryValue', 'query', 'targetQueryValue']);
    // The connection string (its password) is in no object but the deployment's own Secret.
    for (const object of own.filter((o) => o.kind !== 'Secret'))
      expect(JSON.stringify(object), object.kind).not.toContain('pw@');
    // No database of the agent's: KEDA's namespace is admitted to nothing.
    expect(JSON.stringify(named(own, 'NetworkPolicy', 'hello'))).not.toContain('keda');

    const referenced = objects(
      input(
        { queue_min_scale: 1, queue_max_scale: 3 },
        [],
        [{ name: 'POSTGRES_URI', secret_name: 'platform-db', secret_key: 'uri' }],
      ),
      consent,
    );
    expect(named(referenced, 'TriggerAuthentication', 'hello-queue')?.spec.secretTargetRef).toEqual([
      { parameter: 'connection', name: 'platform-db', key: 'uri' },
    ]);
  });

  it('keeps the cpu autoscaler, with a note, for a deployment with no database to count runs in', () => {
    const result = render(input({ queue_min_scale: 1, queue_max_scale: 3 }));
    if (!result.ok) throw result.error;
    expect(result.value.objects.map((o) => o.kind)).not.toContain('ScaledObject');
    expect(named(result.value.objects, 'HorizontalPodAutoscaler', 'hello-queue')).toBeDefined();
    expect(result.value.notes).toContainEqual(expect.stringContaining('queue workers scale on cpu'));
  });

  it('renders nothing of KEDA for a queue of fixed size, or with cpu autoscaling', () => {
    const fixed = objects(input({ queue_min_scale: 2, queue_max_scale: 2, db_storage_gi: 1 }));
    expect(fixed.map((o) => o.kind)).not.toContain('ScaledObject');
    expect(named(fixed, 'Deployment', 'hello-queue')?.spec.replicas).toBe(2);
    const cpu = objects(input(QUEUE), {});
    expect(cpu.map((o) => o.kind)).not.toContain('ScaledObject');
    expect(cpu.map((o) => o.kind)).not.toContain('TriggerAuthentication');
    expect(named(cpu, 'HorizontalPodAutoscaler', 'hello-queue')).toBeDefined();
    expect(envValue(named(cpu, 'Deployment', 'hello-queue'), 'N_JOBS_PER_WORKER')).toBeUndefined();
  });

  it('keeps its labels off the HPA KEDA makes of it, so that it is never taken for the agent’s', () => {
    const scaled = named(objects(input(QUEUE)), 'ScaledObject', 'hello-queue');
    const excluded = String(scaled?.metadata.annotations[KEDA_HPA_EXCLUDED_LABELS]).split(',');
    for (const label of Object.keys(scaled?.metadata.labels ?? {})) expect(excluded).toContain(label);
    expect(excluded).toEqual(
      expect.arrayContaining([LABEL_LISTENER_ID, LABEL_DEPLOYMENT_ID, LABEL_MANAGED_BY]),
    );
  });

  it('lets KEDA’s namespace reach the database port, and only it', () => {
    const data = named(objects(input(QUEUE)), 'NetworkPolicy', 'hello-data');
    expect(data?.spec.ingress).toEqual([
      expect.objectContaining({ from: [expect.objectContaining({ podSelector: expect.any(Object) })] }),
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'keda' } } }],
        ports: [{ protocol: 'TCP', port: 5432 }],
      },
    ]);
    const cpu = named(objects(input(QUEUE), {}), 'NetworkPolicy', 'hello-data');
    expect(cpu?.spec.ingress).toHaveLength(1);
  });

  it('is refused at load when KEDA’s namespace is one of the agent’s: every deployment there would reach every database', async () => {
    const load = async (render: string) => {
      const path = join(await mkdtemp(join(tmpdir(), 'config-')), 'config.yaml');
      await writeFile(
        path,
        `listenerId: 7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11\ncontrolPlane:\n  baseUrl: http://cp.example.test\n  apiKey: k\nnamespaces: [apps, keda]\nrender:\n${render}`,
      );
      return loadAgentConfig({ file: path, env: {} }).catch((error: unknown) => error);
    };
    const refused = await load('  autoscaling:\n    queue: keda\n');
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).fields).toEqual(['render.autoscaling.keda.operatorNamespace']);
    // Elsewhere, or without KEDA queue scaling, it is taken.
    expect(
      await load('  autoscaling:\n    queue: keda\n    keda:\n      operatorNamespace: keda-system\n'),
    ).not.toBeInstanceOf(Error);
    expect(await load('  autoscaling:\n    queue: cpu\n')).not.toBeInstanceOf(Error);
  });
});
