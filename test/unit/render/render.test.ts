import { describe, expect, it } from 'vitest';
import type { ResourceSpec, Revision } from '../../../src/controlplane/schemas/index.ts';
import {
  ANNOTATION_CONFIG_CHECKSUM,
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_REVISION_ID,
  ANNOTATION_SPEC_HASH,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../../src/objects/ownership.ts';
import {
  type KubeObject,
  RenderError,
  type RenderInput,
  renderDeployment,
} from '../../../src/render/index.ts';
import type { AppRole } from '../../../src/render/plan.ts';
import type { RenderConfig } from '../../../src/render/renderConfig.ts';
import {
  config,
  goldenConfig,
  listener,
  maximalDeployment,
  minimalDeployment,
  withSpec,
} from '../../support/renderFixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered objects freely
type Json = Record<string, any>;

function render(input: RenderInput, cfg: RenderConfig = config()): KubeObject[] {
  const result = renderDeployment(input, cfg);
  if (!result.ok) throw result.error;
  return result.value.objects;
}

function problems(input: RenderInput, cfg: RenderConfig = config()): Record<string, string> {
  const result = renderDeployment(input, cfg);
  expect(result.ok).toBe(false);
  if (result.ok) return {};
  expect(result.error).toBeInstanceOf(RenderError);
  expect(result.error.code).toBe('RENDER_INVALID');
  return Object.fromEntries(result.error.problems.map((p) => [p.path, p.message]));
}

const find = (objects: KubeObject[], kind: string, suffix = ''): Json | undefined =>
  objects.find((o) => o.kind === kind && o.metadata.name.endsWith(suffix)) as Json | undefined;
const kinds = (objects: KubeObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);
const podSpec = (workload: Json | undefined): Json =>
  workload?.spec?.template?.spec ?? workload?.template?.spec;
const appContainer = (workload: Json | undefined): Json => podSpec(workload).containers[0];

describe('scales', () => {
  it.each([
    ['fixed at min = max', { min_scale: 3, max_scale: 3 }, 3, undefined],
    ['default of one replica', {}, 1, undefined],
    ['scaled to zero', { min_scale: 0, max_scale: 0 }, 0, undefined],
    ['autoscaled between min and max', { min_scale: 2, max_scale: 5 }, undefined, [2, 5]],
    ['autoscaled from zero starts at one', { min_scale: 0, max_scale: 4 }, undefined, [1, 4]],
  ])('%s', (_name, spec, replicas, hpa) => {
    const objects = render(withSpec(spec));
    const deployment = find(objects, 'Deployment');
    expect(deployment?.spec.replicas).toBe(replicas);
    expect('replicas' in (deployment?.spec ?? {})).toBe(replicas !== undefined);
    const autoscaler = find(objects, 'HorizontalPodAutoscaler');
    expect(autoscaler ? [autoscaler.spec.minReplicas, autoscaler.spec.maxReplicas] : undefined).toEqual(hpa);
    if (autoscaler)
      expect(autoscaler.spec.scaleTargetRef).toEqual({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: 'hello',
      });
  });

  it('refuses min above max, and fractional scales', () => {
    expect(problems(withSpec({ min_scale: 4, max_scale: 2 }))).toEqual({
      'source_config.resource_spec.min_scale': 'min_scale (4) is above max_scale (2)',
    });
    expect(Object.keys(problems(withSpec({ queue_min_scale: 1.5 })))).toEqual([
      'source_config.resource_spec.queue_min_scale',
    ]);
  });
});

// Every container's ephemeral storage, by default (render.limits.ephemeralStorage*).
const DISK_REQUEST = { 'ephemeral-storage': '64Mi' };
const DISK_LIMIT = { 'ephemeral-storage': '1024Mi' };

describe('cpu and memory', () => {
  it.each([
    [
      'request and limit',
      { cpu: 0.25, cpu_limit: 1, memory_mb: 256, memory_limit_mb: 512 },
      { cpu: '250m', memory: '256Mi' },
      { cpu: '1', memory: '512Mi' },
    ],
    [
      'request only: memory limit = request, no cpu limit',
      { cpu: 2, memory_mb: 300 },
      { cpu: '2', memory: '300Mi' },
      { memory: '300Mi' },
    ],
    [
      'limit only: request = limit',
      { cpu_limit: 0.5, memory_limit_mb: 128 },
      { cpu: '500m', memory: '128Mi' },
      { cpu: '500m', memory: '128Mi' },
    ],
    ['nothing: the dev defaults', {}, { cpu: '250m', memory: '512Mi' }, { memory: '512Mi' }],
  ])('%s', (_name, spec, requests, limits) => {
    const resources = appContainer(find(render(withSpec(spec)), 'Deployment')).resources;
    expect(resources).toEqual({
      requests: { ...requests, ...DISK_REQUEST },
      limits: { ...limits, ...DISK_LIMIT },
    });
  });

  it('applies the configured limit rule the same way to every workload', () => {
    const cfg = config({ limits: { cpuWhenOnlyRequest: 'request', memoryWhenOnlyRequest: 'none' } });
    const objects = render(
      withSpec({
        cpu: 1,
        memory_mb: 100,
        queue_cpu: 0.5,
        queue_memory_mb: 50,
        db_cpu: 0.25,
        db_memory_mb: 64,
      }),
      cfg,
    );
    expect(appContainer(find(objects, 'Deployment', 'hello')).resources.limits).toEqual({
      cpu: '1',
      ...DISK_LIMIT,
    });
    expect(appContainer(find(objects, 'Deployment', '-queue')).resources.limits).toEqual({
      cpu: '500m',
      ...DISK_LIMIT,
    });
    expect(appContainer(find(objects, 'StatefulSet', '-db')).resources.limits).toEqual({
      cpu: '250m',
      ...DISK_LIMIT,
    });
  });

  it('refuses a limit below its request, negative and zero quantities, naming each field', () => {
    expect(
      problems(
        withSpec({
          cpu: 1,
          cpu_limit: 0.5,
          memory_mb: 512,
          memory_limit_mb: 256,
          queue_cpu: -1,
          db_memory_mb: 0,
        }),
      ),
    ).toEqual({
      'source_config.resource_spec.cpu_limit': 'the cpu limit (0.5) is below its request (1)',
      'source_config.resource_spec.memory_limit_mb': 'the memory limit (256) is below its request (512)',
      'source_config.resource_spec.queue_cpu': 'must be a non-negative number',
      'source_config.resource_spec.db_memory_mb': 'must be greater than zero',
    });
  });

  it('refuses a number too large to be written as a quantity, which the API server would answer with a 500', () => {
    expect(problems(withSpec({ db_storage_gi: 1e300, memory_mb: 1e21 }))).toEqual({
      'source_config.resource_spec.db_storage_gi': 'is too large for a Kubernetes quantity (at most 1e21)',
      'source_config.resource_spec.memory_mb': 'is too large for a Kubernetes quantity (at most 1e21)',
    });
  });
});

describe('workload groups', () => {
  it('renders only the main workload when no other group is set', () => {
    expect(kinds(render(withSpec({})))).toEqual(['Service/hello', 'Deployment/hello', 'NetworkPolicy/hello']);
  });

  it('renders queue and orchestrator Deployments and an executor PodTemplate from the same image, each with its role', () => {
    const objects = render(withSpec({ queue_cpu: 0.5, orchestrator_min_scale: 1, executor_memory_mb: 256 }));
    expect(kinds(objects)).toEqual([
      'Service/hello',
      'Deployment/hello',
      'Deployment/hello-queue',
      'PodDisruptionBudget/hello-queue',
      'Deployment/hello-orchestrator',
      'PodTemplate/hello-executor',
      'NetworkPolicy/hello',
    ]);
    for (const [kind, suffix, role] of [
      ['Deployment', '-queue', 'queue'],
      ['Deployment', '-orchestrator', 'orchestrator'],
      ['PodTemplate', '-executor', 'executor'],
    ] as const) {
      const container = appContainer(find(objects, kind, suffix));
      expect(container.image).toBe('nginx:1.27');
      expect(container.env[0]).toEqual({ name: 'WORKLOAD_ROLE', value: role });
      // Only a queue worker listens (for its probes); orchestrators and executors keep the image's ways.
      expect(container.ports === undefined).toBe(role !== 'queue');
    }
    expect(appContainer(find(objects, 'PodTemplate')).resources.requests.memory).toBe('256Mi');
  });
});

describe('the LangGraph server contract', () => {
  const groups = { queue_cpu: 0.5, orchestrator_min_scale: 1, executor_memory_mb: 256 };
  const revision: Revision = {
    id: '9a1b2c3d-4e5f-4a6b-8c7d-000000000777',
    created_at: '2026-11-01T00:00:00Z',
    updated_at: '2026-11-01T00:00:00Z',
    status: 'AWAITING_DEPLOY',
    source: 'external_container',
    source_revision_config: { image_uri: 'nginx:1.27' },
  };
  const envOf = (container: Json): Record<string, Json> =>
    Object.fromEntries((container.env ?? []).map((e: Json) => [e.name, e]));
  const applicationContainers = (objects: KubeObject[]): Record<AppRole, Json> => ({
    main: appContainer(find(objects, 'Deployment', 'hello')),
    queue: appContainer(find(objects, 'Deployment', '-queue')),
    orchestrator: appContainer(find(objects, 'Deployment', '-orchestrator')),
    executor: appContainer(find(objects, 'PodTemplate', '-executor')),
  });

  it('probes the main container with GET /ok on its http port, and gives a first start two minutes', () => {
    const container = appContainer(find(render(withSpec({})), 'Deployment'));
    expect(container.ports).toEqual([{ name: 'http', containerPort: 8000, protocol: 'TCP' }]);
    expect(envOf(container).PORT).toEqual({ name: 'PORT', value: '8000' });
    expect(container.readinessProbe).toEqual({
      httpGet: { path: '/ok', port: 'http' },
      periodSeconds: 10,
      timeoutSeconds: 5,
    });
    expect(container.livenessProbe).toEqual({
      httpGet: { path: '/ok', port: 'http' },
      initialDelaySeconds: 30,
      periodSeconds: 15,
      timeoutSeconds: 5,
      failureThreshold: 6,
    });
    const { initialDelaySeconds, periodSeconds, failureThreshold } = container.livenessProbe;
    expect(initialDelaySeconds + periodSeconds * failureThreshold).toBeGreaterThanOrEqual(120);
  });

  it('keeps the main container serving for a preStop sleep while the Service drops it, the queue workers not', () => {
    const objects = render(withSpec({ queue_min_scale: 1 }));
    expect(appContainer(find(objects, 'Deployment', 'hello')).lifecycle).toEqual({
      preStop: { sleep: { seconds: 5 } },
    });
    // The queue workers serve no Service: their preStop is the drain alone (render/drain).
    expect(
      appContainer(find(objects, 'Deployment', '-queue')).lifecycle.preStop.exec.command.slice(3),
    ).toEqual(['0', '180', '8000']);
    const none = render(withSpec({ queue_min_scale: 1 }), config({ app: { preStopSleepSeconds: 0 } }));
    expect(appContainer(find(none, 'Deployment', 'hello')).lifecycle).toBeUndefined();
    expect(() => config({ app: { preStopSleepSeconds: 30 } })).toThrow(/terminationGracePeriodSeconds/);
  });

  it('turns each probe off with null, and follows the configured port', () => {
    const cfg = config({
      app: { containerPort: 9000, readinessProbe: null, livenessProbe: null },
      queue: { readinessProbe: null },
    });
    const objects = render(withSpec({ queue_cpu: 0.5 }), cfg);
    const main = appContainer(find(objects, 'Deployment', 'hello'));
    expect(main.readinessProbe).toBeUndefined();
    expect(main.livenessProbe).toBeUndefined();
    expect(envOf(main).PORT?.value).toBe('9000');
    const queue = appContainer(find(objects, 'Deployment', '-queue'));
    expect(queue.readinessProbe).toBeUndefined();
    expect(queue.livenessProbe?.httpGet).toEqual({ path: '/ok', port: 'http' });
    expect(queue.ports).toEqual([{ name: 'http', containerPort: 9000, protocol: 'TCP' }]);
  });

  it('with queue workers: N_JOBS_PER_WORKER=0 on the main workload only, the queue entrypoint on the workers', () => {
    const objects = render(withSpec(groups));
    const byRole = applicationContainers(objects);
    expect(envOf(byRole.main).N_JOBS_PER_WORKER).toEqual({ name: 'N_JOBS_PER_WORKER', value: '0' });
    for (const role of ['queue', 'orchestrator', 'executor'] as const)
      expect(envOf(byRole[role]).N_JOBS_PER_WORKER, role).toBeUndefined();
    expect(byRole.queue.command).toEqual(['/storage/queue_entrypoint.sh']);
    for (const role of ['main', 'orchestrator', 'executor'] as const)
      expect(byRole[role].command, role).toBeUndefined();
    // The workers answer /ok for their probes, but no Service sends them traffic.
    expect(byRole.queue.readinessProbe.httpGet).toEqual({ path: '/ok', port: 'http' });
    expect(byRole.queue.livenessProbe.httpGet).toEqual({ path: '/ok', port: 'http' });
    for (const role of ['orchestrator', 'executor'] as const) {
      expect(byRole[role].readinessProbe, role).toBeUndefined();
      expect(byRole[role].livenessProbe, role).toBeUndefined();
    }
    const services = objects.filter((o) => o.kind === 'Service') as Json[];
    expect(services.map((o) => o.spec.selector[LABEL_COMPONENT])).toEqual(['main']);
  });

  it('sets no N_JOBS_PER_WORKER without queue workers, and takes the configured queue command', () => {
    expect(envOf(appContainer(find(render(withSpec({})), 'Deployment'))).N_JOBS_PER_WORKER).toBeUndefined();
    const legacy = config({ queue: { command: ['python', '-m', 'langgraph_api.queue_entrypoint'] } });
    expect(appContainer(find(render(withSpec(groups), legacy), 'Deployment', '-queue')).command).toEqual([
      'python',
      '-m',
      'langgraph_api.queue_entrypoint',
    ]);
    const own = config({ queue: { command: null } });
    expect(appContainer(find(render(withSpec(groups), own), 'Deployment', '-queue')).command).toBeUndefined();
  });

  it("gives a deployment's own N_JOBS_PER_WORKER to the queue workers, and 0 to the main workload", () => {
    const own = (extra: Partial<RenderInput['deployment']>, spec: ResourceSpec = groups) => {
      const objects = render(withSpec(spec, extra));
      const jobs = (workload: Json | undefined) =>
        workload && (appContainer(workload).env as Json[]).filter((e) => e.name === 'N_JOBS_PER_WORKER');
      return {
        main: jobs(find(objects, 'Deployment', 'hello')),
        queue: jobs(find(objects, 'Deployment', '-queue')),
      };
    };
    const fromSecret = { secrets: [{ name: 'N_JOBS_PER_WORKER', value: '4' }] };
    expect(own(fromSecret)).toEqual({
      main: [{ name: 'N_JOBS_PER_WORKER', value: '0' }],
      queue: [
        {
          name: 'N_JOBS_PER_WORKER',
          valueFrom: { secretKeyRef: { name: 'hello-secrets', key: 'N_JOBS_PER_WORKER' } },
        },
      ],
    });
    const fromReference = {
      secret_references: [{ name: 'N_JOBS_PER_WORKER', secret_name: 'tuning', secret_key: 'jobs' }],
    };
    expect(own(fromReference).main).toEqual([{ name: 'N_JOBS_PER_WORKER', value: '0' }]);
    // Without queue workers the main workload runs the jobs, as many as the deployment says.
    expect(own(fromSecret, {}).main).toEqual([
      {
        name: 'N_JOBS_PER_WORKER',
        valueFrom: { secretKeyRef: { name: 'hello-secrets', key: 'N_JOBS_PER_WORKER' } },
      },
    ]);
  });

  it.each([
    ['dev_free', 'dev_free'],
    ['dev', 'dev'],
    ['prod', 'prod'],
    ['dev_zero', 'dev'],
  ] as const)(
    'gives every application container, not sidecars or init containers, the ids and deployment_type %s as %s',
    (asked, rendered) => {
      const spec = {
        ...groups,
        sidecars: [{ name: 'side', image: 'busybox:1.36' }],
        init_containers: [{ name: 'init', image: 'busybox:1.36' }],
      };
      const input = withSpec(spec, {
        source_config: { ...minimalDeployment.source_config, deployment_type: asked, resource_spec: spec },
      });
      const objects = render({ ...input, revision });
      for (const [role, container] of Object.entries(applicationContainers(objects))) {
        const env = envOf(container);
        expect(env.LANGSMITH_HOST_PROJECT_ID?.value, role).toBe(minimalDeployment.id);
        expect(env.LANGSMITH_HOST_REVISION_ID?.value, role).toBe(revision.id);
        expect(env.LSD_DEPLOYMENT_TYPE?.value, role).toBe(rendered);
      }
      const pod = podSpec(find(objects, 'Deployment', 'hello'));
      for (const container of [pod.containers[1], pod.initContainers[0]])
        expect(container.env, container.name).toBeUndefined();
    },
  );

  it('changes the revision id with the revision, and leaves it out when there is none', () => {
    const revisionEnv = (objects: KubeObject[]) =>
      envOf(appContainer(find(objects, 'Deployment'))).LANGSMITH_HOST_REVISION_ID;
    const next = { ...revision, id: '9a1b2c3d-4e5f-4a6b-8c7d-000000000778' };
    expect(revisionEnv(render({ ...withSpec({}), revision: next }))?.value).toBe(next.id);
    expect(revisionEnv(render(withSpec({})))).toBeUndefined();
  });

  it('names nothing whose setting is null', () => {
    const cfg = config({
      app: {
        portEnv: null,
        deploymentIdEnv: null,
        revisionIdEnv: null,
        deploymentTypeEnv: null,
        runGraceEnv: null,
      },
      queue: { jobsPerWorkerEnv: null },
    });
    const env = envOf(appContainer(find(render({ ...withSpec(groups), revision }, cfg), 'Deployment')));
    expect(Object.keys(env)).toEqual(['WORKLOAD_ROLE']);
  });
});

describe('names the agent sets are refused where a deployment sets them', () => {
  it.each([
    [
      'a secret',
      {
        secrets: [
          { name: 'OK', value: 'v' },
          { name: 'LANGSMITH_HOST_PROJECT_ID', value: 'spoofed' },
        ],
      },
      {},
      'secrets[1].name',
      'LANGSMITH_HOST_PROJECT_ID is set by the agent (render.app.deploymentIdEnv) and cannot be a secret',
    ],
    [
      'a secret reference',
      { secret_references: [{ name: 'LSD_DEPLOYMENT_TYPE', secret_name: 'kind', secret_key: 'type' }] },
      {},
      'secret_references[0].name',
      'LSD_DEPLOYMENT_TYPE is set by the agent (render.app.deploymentTypeEnv) and cannot be a secret reference',
    ],
    [
      'a secret named PORT',
      { secrets: [{ name: 'PORT', value: '80' }] },
      {},
      'secrets[0].name',
      'PORT is set by the agent (render.app.portEnv) and cannot be a secret',
    ],
    [
      'a sidecar variable',
      {},
      { sidecars: [{ name: 'side', image: 'x', env: [{ name: 'LANGSMITH_HOST_REVISION_ID', value: 'r' }] }] },
      'source_config.resource_spec.sidecars[0].env[0].name',
      "LANGSMITH_HOST_REVISION_ID is set by the agent (render.app.revisionIdEnv) and cannot be a container's variable",
    ],
    [
      'an init container variable',
      {},
      {
        init_containers: [
          {
            name: 'init',
            image: 'x',
            env: [
              { name: 'A', value: '1' },
              { name: 'LSD_DEPLOYMENT_TYPE', value: 'prod' },
            ],
          },
        ],
      },
      'source_config.resource_spec.init_containers[0].env[1].name',
      "LSD_DEPLOYMENT_TYPE is set by the agent (render.app.deploymentTypeEnv) and cannot be a container's variable",
    ],
    [
      'the generated database password',
      { secrets: [{ name: 'DATABASE_PASSWORD', value: 'mine' }] },
      { db_storage_gi: 1 },
      'secrets[0].name',
      'DATABASE_PASSWORD is set by the agent (render.database.passwordEnv) and cannot be a secret',
    ],
    [
      'the generated key-value store password',
      { secrets: [{ name: 'REDIS_PASSWORD', value: 'mine' }] },
      { kvstore_memory_mb: 64 },
      'secrets[0].name',
      'REDIS_PASSWORD is set by the agent (render.kvstore.passwordEnv) and cannot be a secret',
    ],
  ] as const)('%s', (_where, extra, spec, path, message) => {
    const input = withSpec(
      spec as ResourceSpec,
      structuredClone(extra) as Partial<RenderInput['deployment']>,
    );
    expect(problems(input)).toEqual({ [path]: message });
    const result = renderDeployment(input, config());
    expect(result.ok ? '' : result.error.message).toBe(
      `deployment ${minimalDeployment.id} cannot be rendered: ${path}: ${message}`,
    );
    expect(result.ok ? '' : result.error.message).not.toContain('spoofed');
  });

  it('leaves a sidecar its own PORT and database variables, which the agent sets only in application containers', () => {
    const sidecar = {
      name: 'proxy',
      image: 'x',
      env: [
        { name: 'PORT', value: '9090' },
        { name: 'DATABASE_URI', value: 'u' },
      ],
    };
    const objects = render(withSpec({ db_storage_gi: 1, sidecars: [sidecar] }));
    expect(podSpec(find(objects, 'Deployment')).containers[1].env).toEqual(sidecar.env);
  });

  it('frees a name whose setting is null', () => {
    const input = withSpec({}, { secrets: [{ name: 'LANGSMITH_HOST_PROJECT_ID', value: 'mine' }] });
    const env = appContainer(
      find(render(input, config({ app: { deploymentIdEnv: null } })), 'Deployment'),
    ).env;
    expect(env.filter((e: Json) => e.name === 'LANGSMITH_HOST_PROJECT_ID')).toEqual([
      {
        name: 'LANGSMITH_HOST_PROJECT_ID',
        valueFrom: { secretKeyRef: { name: 'hello-secrets', key: 'LANGSMITH_HOST_PROJECT_ID' } },
      },
    ]);
  });
});

describe('database and key-value store', () => {
  const spec = {
    db_cpu: 0.5,
    db_memory_mb: 512,
    db_storage_gi: 7,
    db_max_connections: 150,
    kvstore_memory_mb: 64,
  };

  it('provisions PostgreSQL with a claim template, max_connections, headless Service and a create-only credentials Secret', () => {
    const objects = render(withSpec(spec));
    const db = find(objects, 'StatefulSet', '-db');
    expect(db?.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('7Gi');
    expect(db?.spec.persistentVolumeClaimRetentionPolicy).toEqual({
      whenDeleted: 'Retain',
      whenScaled: 'Retain',
    });
    expect(appContainer(db).args).toEqual(['-c', 'max_connections=150']);
    expect(find(objects, 'Service', '-db')?.spec.clusterIP).toBe('None');
    const credentials = find(objects, 'Secret', '-db-credentials');
    expect(credentials?.metadata.annotations[ANNOTATION_CREATE_ONLY]).toBe('true');
    expect(credentials?.stringData.password).toBe('');
    const env = appContainer(find(objects, 'Deployment', 'hello')).env as Json[];
    const names = env.map((e) => e.name);
    expect(names.indexOf('DATABASE_PASSWORD')).toBeLessThan(names.indexOf('DATABASE_URI'));
    // LangGraph servers read either name (LangChain's own charts set POSTGRES_URI): both, the same.
    for (const name of ['DATABASE_URI', 'POSTGRES_URI']) {
      expect(env.find((e) => e.name === name)?.value, name).toBe(
        'postgresql://app:$(DATABASE_PASSWORD)@hello-db.apps.svc:5432/app',
      );
      expect(names.indexOf('DATABASE_PASSWORD'), name).toBeLessThan(names.indexOf(name));
    }
    // The key-value store answers only with its generated password.
    expect(names.indexOf('REDIS_PASSWORD')).toBeLessThan(names.indexOf('REDIS_URI'));
    expect(env.find((e) => e.name === 'REDIS_URI')?.value).toBe(
      'redis://:$(REDIS_PASSWORD)@hello-kvstore.apps.svc:6379/0',
    );
    expect(
      find(objects, 'Secret', '-kvstore-credentials')?.metadata.annotations[ANNOTATION_CREATE_ONLY],
    ).toBe('true');
    expect(find(objects, 'StatefulSet', '-kvstore')).toBeDefined();
  });

  it('uses configurable env var names and a Deployment for Redis when asked', () => {
    const objects = render(
      withSpec(spec),
      config({ database: { uriEnvs: ['PG_URL'] }, kvstore: { uriEnv: 'CACHE_URL', kind: 'Deployment' } }),
    );
    const names = (appContainer(find(objects, 'Deployment', 'hello')).env as Json[]).map((e) => e.name);
    expect(names).toContain('PG_URL');
    expect(names).not.toContain('DATABASE_URI');
    expect(names).not.toContain('POSTGRES_URI');
    expect(names).toContain('CACHE_URL');
    expect(find(objects, 'Deployment', '-kvstore')).toBeDefined();
    expect(find(objects, 'StatefulSet', '-kvstore')).toBeUndefined();
  });

  it('provisions none for a deployment that brings its own, and says so', () => {
    const input = withSpec(spec, {
      secrets: [{ name: 'DATABASE_URI', value: 'postgresql://elsewhere' }],
      secret_references: [{ name: 'REDIS_URI', secret_name: 'cache', secret_key: 'uri' }],
    });
    const result = renderDeployment(input, config());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(kinds(result.value.objects)).toEqual([
      'Secret/hello-secrets',
      'Service/hello',
      'Deployment/hello',
      'NetworkPolicy/hello',
    ]);
    expect(result.value.notes).toEqual([
      'no database provisioned: the deployment brings its own (DATABASE_URI)',
      'no key-value store provisioned: the deployment brings its own (REDIS_URI)',
    ]);
  });

  it('provisions both for an empty resource spec when configured to always, as LangGraph servers need', () => {
    const always = config({ database: { provision: 'always' }, kvstore: { provision: 'always' } });
    const objects = render(withSpec({}), always);
    expect(
      find(objects, 'StatefulSet', '-db')?.spec.volumeClaimTemplates[0].spec.resources.requests.storage,
    ).toBe('1Gi');
    expect(find(objects, 'StatefulSet', '-kvstore')).toBeDefined();
    // By default an empty resource spec asks for neither.
    expect(find(render(withSpec({})), 'StatefulSet', '-db')).toBeUndefined();
    // Always still means: unless the deployment brings its own.
    const own = renderDeployment(
      withSpec({}, { secrets: [{ name: 'POSTGRES_URI', value: 'postgresql://elsewhere' }] }),
      always,
    );
    expect(own.ok && kinds(own.value.objects).some((k) => k.endsWith('-db'))).toBe(false);
  });
});

describe('secrets and secret references', () => {
  const input = withSpec(
    {},
    {
      secrets: [{ name: 'MODEL_API_KEY', value: 'value-one' }],
      secret_references: [{ name: 'SEARCH_TOKEN', secret_name: 'search', secret_key: 'token' }],
    },
  );

  it('puts secrets in one Secret injected by secretKeyRef, and references as secretKeyRef to their Secret', () => {
    const objects = render(input);
    const secret = find(objects, 'Secret', '-secrets');
    expect(secret?.data).toEqual({ MODEL_API_KEY: Buffer.from('value-one').toString('base64') });
    const env = appContainer(find(objects, 'Deployment')).env;
    expect(env).toContainEqual({
      name: 'MODEL_API_KEY',
      valueFrom: { secretKeyRef: { name: 'hello-secrets', key: 'MODEL_API_KEY' } },
    });
    expect(env).toContainEqual({
      name: 'SEARCH_TOKEN',
      valueFrom: { secretKeyRef: { name: 'search', key: 'token' } },
    });
  });

  it('rolls the pods when a secret value changes, through the checksum annotation', () => {
    const checksum = (objects: KubeObject[]) =>
      find(objects, 'Deployment')?.spec.template.metadata.annotations[ANNOTATION_CONFIG_CHECKSUM];
    const changed = structuredClone(input);
    changed.deployment.secrets = [{ name: 'MODEL_API_KEY', value: 'value-two' }];
    expect(checksum(render(changed))).not.toBe(checksum(render(input)));
    expect(checksum(render(structuredClone(input)))).toBe(checksum(render(input)));
  });

  it('refuses invalid and duplicate env names without echoing a value', () => {
    const bad = withSpec(
      {},
      {
        secrets: [
          { name: '1BAD', value: 'top-secret-value' },
          { name: 'DUP', value: 'v' },
        ],
        secret_references: [{ name: 'DUP', secret_name: 'Not_Valid', secret_key: 'k' }],
      },
    );
    const found = problems(bad);
    expect(Object.keys(found)).toEqual([
      'secrets[0].name',
      'secret_references[0].name',
      'secret_references[0].secret_name',
    ]);
    const result = renderDeployment(bad, config());
    expect(result.ok ? '' : result.error.message).not.toContain('top-secret-value');
  });
});

describe('pod metadata, volumes and extra containers', () => {
  it('puts labels, annotations, service account, pull secrets, volumes, mounts, init containers and sidecars on every app pod template', () => {
    const objects = render(
      { deployment: maximalDeployment, revision: undefined, listener, allowedNamespaces: undefined },
      goldenConfig,
    );
    const templates = objects
      .filter((o) => o.kind === 'Deployment' && o.metadata.labels[LABEL_COMPONENT] !== 'kvstore')
      .map((o) => (o as Json).spec.template);
    templates.push((find(objects, 'PodTemplate') as Json).template);
    expect(templates).toHaveLength(4);
    for (const template of templates) {
      expect(template.metadata.labels).toMatchObject({ team: 'agents', 'cost-center': 'r-and-d' });
      expect(template.metadata.annotations).toMatchObject({ owner: 'agents-team' });
      expect(template.spec.serviceAccountName).toBe('agent-platform');
      expect(template.spec.automountServiceAccountToken).toBe(true);
      expect(template.spec.imagePullSecrets).toEqual([{ name: 'registry-credentials' }]);
      expect(template.spec.volumes).toHaveLength(8);
      expect(template.spec.containers[0].volumeMounts).toHaveLength(8);
      // The wait for the stores in all but the executors', whose pods are made for runs.
      const own = template.metadata.labels[LABEL_COMPONENT] === 'executor' ? [] : ['wait-for-stores'];
      expect(template.spec.initContainers.map((c: Json) => c.name)).toEqual([...own, 'migrate', 'proxy']);
      expect(template.spec.containers.map((c: Json) => c.name)).toEqual(['app', 'log-shipper']);
      expect(template.spec.containers[0].image).toBe('registry.example.test/agents/platform:2.4.1');
    }
  });

  it.each([
    [
      'nothing',
      undefined,
      {
        requests: { cpu: '50m', memory: '64Mi', ...DISK_REQUEST },
        limits: { memory: '64Mi', ...DISK_LIMIT },
      },
    ],
    [
      'only a cpu request',
      { requests: { cpu: '200m' } },
      {
        requests: { cpu: '200m', memory: '64Mi', ...DISK_REQUEST },
        limits: { memory: '64Mi', ...DISK_LIMIT },
      },
    ],
    [
      'only limits (the API server takes them as requests)',
      { limits: { cpu: '1', memory: '1Gi', 'ephemeral-storage': '2Gi' } },
      { requests: {}, limits: { cpu: '1', memory: '1Gi', 'ephemeral-storage': '2Gi' } },
    ],
    [
      'both',
      { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '48Mi' } },
      {
        requests: { cpu: '10m', memory: '32Mi', ...DISK_REQUEST },
        limits: { memory: '48Mi', ...DISK_LIMIT },
      },
    ],
    // A request alone is the limit too, as for the agent's own containers: never no limit.
    [
      'only a memory request',
      { requests: { memory: '1Mi' } },
      { requests: { cpu: '50m', memory: '1Mi', ...DISK_REQUEST }, limits: { memory: '1Mi', ...DISK_LIMIT } },
    ],
    [
      'only an ephemeral-storage request',
      { requests: { 'ephemeral-storage': '5Gi' } },
      {
        requests: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': '5Gi' },
        limits: { memory: '64Mi', 'ephemeral-storage': '5Gi' },
      },
    ],
  ])(
    'gives a sidecar and an init container that set %s the missing requests and limits',
    (_name, given, expected) => {
      const container = { name: 'side', image: 'busybox:1', ...(given ? { resources: given } : {}) };
      const objects = render(
        withSpec({ sidecars: [container], init_containers: [{ ...container, name: 'init' }] }),
      );
      const pod = (find(objects, 'Deployment') as Json).spec.template.spec;
      expect(pod.containers[1].resources).toEqual(expected);
      expect(pod.initContainers[0].resources).toEqual(expected);
    },
  );

  it('refuses a mount of a missing volume, duplicate names, a bad env name, a missing sidecar image', () => {
    const found = problems(
      withSpec({
        volumes: [
          { name: 'data', emptyDir: {} },
          { name: 'data', emptyDir: {} },
        ],
        volume_mounts: [{ name: 'nope', mountPath: '/x' }],
        sidecars: [
          { name: 'app', image: 'x' },
          { name: 'side', env: [{ name: 'A=B', value: '1' }] },
        ],
        init_containers: [{ name: 'side', image: 'y', volumeMounts: [{ name: 'ghost', mountPath: '/g' }] }],
      }),
    );
    expect(found).toEqual({
      'source_config.resource_spec.volumes[1].name': 'duplicate volume name data',
      'source_config.resource_spec.volume_mounts[0].name':
        'mounts nope, which is not a volume of this deployment',
      'source_config.resource_spec.init_containers[0].volumeMounts[0].name':
        'mounts ghost, which is not a volume of this deployment',
      'source_config.resource_spec.sidecars[0].name': 'duplicate container name app',
      'source_config.resource_spec.sidecars[1].name': 'duplicate container name side',
      'source_config.resource_spec.sidecars[1].image': 'an image is required',
      'source_config.resource_spec.sidecars[1].env[0].name': '"A=B" is not a valid environment variable name',
    });
  });

  it('refuses labels the agent reserves and invalid label values', () => {
    expect(
      problems(withSpec({ labels: { 'app.kubernetes.io/managed-by': 'me', ok: 'not valid!' } })),
    ).toEqual({
      'source_config.resource_spec.labels.app.kubernetes.io/managed-by': 'is reserved for the agent',
      'source_config.resource_spec.labels.ok': 'is not a valid label value',
    });
  });
});

describe('hardening and policy', () => {
  it('hardens pods by default and mounts no token without a service account', () => {
    const spec = podSpec(find(render(withSpec({})), 'Deployment'));
    expect(spec.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.containers[0].securityContext).toEqual({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
  });

  it('lets the agent configuration relax the hardening only as far as its Pod Security level allows', () => {
    const relaxed = { runAsNonRoot: false, dropAllCapabilities: false, readOnlyRootFilesystem: true };
    // restricted (the default) refuses the result, naming each field; baseline takes it.
    expect(Object.keys(problems(withSpec({}), config({ hardening: relaxed })))).toEqual(
      expect.arrayContaining([
        'Deployment/hello spec.containers[0](app).securityContext.capabilities.drop',
        'Deployment/hello spec.containers[0](app).securityContext.runAsNonRoot',
      ]),
    );
    const cfg = config({ hardening: relaxed, policy: { podSecurity: 'baseline' } });
    const spec = podSpec(find(render(withSpec({}), cfg), 'Deployment'));
    expect(spec.securityContext).toEqual({ seccompProfile: { type: 'RuntimeDefault' } });
    expect(spec.containers[0].securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
    });
  });

  it('refuses privileged sidecars and added capabilities at every Pod Security level, naming the container', () => {
    const input = withSpec({
      sidecars: [{ name: 's', image: 'x', securityContext: { privileged: true } }],
      init_containers: [{ name: 'i', image: 'x', securityContext: { capabilities: { add: ['NET_ADMIN'] } } }],
    });
    for (const podSecurity of ['restricted', 'baseline'] as const) {
      expect(Object.keys(problems(input, config({ policy: { podSecurity } })))).toEqual(
        expect.arrayContaining([
          'Deployment/hello spec.initContainers[0](i).securityContext.capabilities.add',
          'Deployment/hello spec.containers[1](s).securityContext.privileged',
        ]),
      );
    }
  });
});

describe('deployment type and custom URL', () => {
  // On a shared ingress controller, a host is only taken under the platform's domains.
  it.each([
    ['agents.example.test', ['example.test'], true],
    ['example.test', ['example.test'], true],
    ['example.test', ['.example.test'], false],
    ['a.b.example.test', ['.example.test'], true],
    ['evil-example.test', ['example.test'], false],
    ['login.bank.test', ['example.test'], false],
    ['agents.example.test', [], false],
  ])('custom_url %s with allowedHostSuffixes %j: allowed %s', (host, suffixes, allowed) => {
    const input = withSpec(
      {},
      { source_config: { ...minimalDeployment.source_config, custom_url: `https://${host}` } },
    );
    const cfg = config({ ingress: { className: 'nginx', allowedHostSuffixes: suffixes } });
    const result = renderDeployment(input, cfg);
    expect(result.ok).toBe(allowed);
    if (!result.ok)
      expect(result.error.problems).toEqual([
        { path: 'source_config.custom_url', message: expect.stringContaining(`host ${host}`) },
      ]);
  });

  it('adds a PodDisruptionBudget and topology spread for prod only', () => {
    const prod = withSpec(
      {},
      { source_config: { ...minimalDeployment.source_config, deployment_type: 'prod' } },
    );
    const objects = render(prod);
    expect(find(objects, 'PodDisruptionBudget')?.spec.maxUnavailable).toBe(1);
    expect(podSpec(find(objects, 'Deployment')).topologySpreadConstraints).toHaveLength(2);
    const dev = render(withSpec({}));
    expect(find(dev, 'PodDisruptionBudget')).toBeUndefined();
    expect(podSpec(find(dev, 'Deployment')).topologySpreadConstraints).toBeUndefined();
    expect(
      appContainer(
        find(
          render(
            withSpec(
              {},
              { source_config: { ...minimalDeployment.source_config, deployment_type: 'dev_free' } },
            ),
          ),
          'Deployment',
        ),
      ).resources.requests,
    ).toEqual({ cpu: '100m', memory: '256Mi', ...DISK_REQUEST });
  });

  it('makes an Ingress for custom_url only when an ingress class is configured', () => {
    const input = withSpec(
      {},
      {
        source_config: { ...minimalDeployment.source_config, custom_url: 'https://Hello.Example.test/path' },
      },
    );
    const ingress = find(
      render(
        input,
        config({
          ingress: { className: 'nginx', tlsSecretName: 'wildcard', allowedHostSuffixes: ['example.test'] },
        }),
      ),
      'Ingress',
    );
    expect(ingress?.spec.rules[0].host).toBe('hello.example.test');
    expect(ingress?.spec.tls).toEqual([{ hosts: ['hello.example.test'], secretName: 'wildcard' }]);
    const result = renderDeployment(input, config());
    expect(result.ok && find(result.value.objects, 'Ingress')).toBe(undefined);
    expect(result.ok && result.value.notes).toEqual([
      'custom_url is not exposed: the agent has neither an ingress class nor a Gateway configured',
    ]);
  });
});

describe('namespace, source, image and identity', () => {
  it.each([
    ['missing', { k8s_namespace: null }, undefined, 'a target namespace is required'],
    [
      'not one of the listener',
      { k8s_namespace: 'kube-system' },
      undefined,
      "namespace kube-system is not one of the listener's k8s_namespaces (apps, apps-staging)",
    ],
    [
      'outside the agent allow-list',
      { k8s_namespace: 'apps' },
      ['apps-staging'],
      "namespace apps is not in the agent's allow-list (apps-staging)",
    ],
  ])('refuses a namespace that is %s', (_name, listenerConfig, allowed, message) => {
    const input = withSpec(
      {},
      { source_config: { ...minimalDeployment.source_config, listener_config: listenerConfig } },
    );
    expect(problems({ ...input, allowedNamespaces: allowed })).toEqual({
      'source_config.listener_config.k8s_namespace': message,
    });
  });

  it('refuses an unsupported source and a missing image in one error', () => {
    const input = withSpec({}, { source: 'repohost', source_revision_config: { image_uri: null } });
    expect(Object.keys(problems(input))).toEqual(['source', 'source_revision_config.image_uri']);
  });

  it("takes the target revision's image and id", () => {
    const revision: Revision = {
      id: '9a1b2c3d-4e5f-4a6b-8c7d-000000000999',
      created_at: '2026-11-01T00:00:00Z',
      updated_at: '2026-11-01T00:00:00Z',
      status: 'AWAITING_DEPLOY',
      source: 'external_container',
      source_revision_config: { image_uri: 'nginx:1.25' },
    };
    const objects = render({ ...withSpec({}), revision });
    const deployment = find(objects, 'Deployment');
    expect(appContainer(deployment).image).toBe('nginx:1.25');
    expect(deployment?.spec.template.metadata.annotations[ANNOTATION_REVISION_ID]).toBe(revision.id);
  });

  it('marks every object with ownership labels and a spec hash, and is deterministic', () => {
    const input = {
      deployment: maximalDeployment,
      revision: undefined,
      listener,
      allowedNamespaces: undefined,
    };
    const first = renderDeployment(input, goldenConfig);
    const second = renderDeployment(structuredClone(input), goldenConfig);
    expect(first).toEqual(second);
    if (!first.ok) throw first.error;
    for (const object of first.value.objects) {
      expect(object.metadata.namespace).toBe('apps');
      expect(object.metadata.labels).toMatchObject({
        [LABEL_MANAGED_BY]: 'k8s-listener',
        [LABEL_LISTENER_ID]: listener.id,
        [LABEL_DEPLOYMENT_ID]: maximalDeployment.id,
      });
      expect(object.metadata.annotations[ANNOTATION_SPEC_HASH]).toMatch(/^[0-9a-f]{16}$/);
      expect(object.metadata.name.length).toBeLessThanOrEqual(object.kind === 'StatefulSet' ? 52 : 63);
    }
  });

  it('collects every problem of a thoroughly bad deployment at once, and never throws', () => {
    const input = withSpec(
      {
        min_scale: 5,
        max_scale: 1,
        cpu: -1,
        volumes: [{ name: 'Bad_Name', emptyDir: {} }],
        volume_mounts: [{ name: 'x', mountPath: '/x' }],
      },
      { name: '***', source: 'internal_source', source_revision_config: {} },
    );
    const found = problems({ ...input, allowedNamespaces: [] });
    expect(Object.keys(found).sort()).toEqual(
      [
        'name',
        'source',
        'source_config.listener_config.k8s_namespace',
        'source_config.resource_spec.cpu',
        'source_config.resource_spec.min_scale',
        'source_config.resource_spec.volume_mounts[0].name',
        'source_config.resource_spec.volumes[0].name',
        'source_revision_config.image_uri',
      ].sort(),
    );
  });
});

describe('both control-plane dialects', () => {
  const base = () => structuredClone(minimalDeployment);

  it('renders external_docker exactly as external_container', () => {
    const docker = withSpec(base().source_config.resource_spec ?? {}, { source: 'external_docker' });
    const container = withSpec(base().source_config.resource_spec ?? {}, { source: 'external_container' });
    expect(render(docker)).toEqual(render(container));
  });

  it.each(['internal_docker', 'internal_container', 'repohost'] as const)(
    'refuses %s, naming the source',
    (source) => {
      expect(problems(withSpec({}, { source }))).toMatchObject({
        source: expect.stringContaining(`unsupported source ${source}`),
      });
    },
  );

  it('renders dev_zero as dev and says so in a status note (not among the objects)', () => {
    const zero = base();
    zero.source_config.deployment_type = 'dev_zero';
    const dev = base();
    dev.source_config.deployment_type = 'dev';
    const input = (deployment: typeof zero): RenderInput => ({
      deployment,
      revision: undefined,
      listener,
      allowedNamespaces: undefined,
    });
    const zeroResult = renderDeployment(input(zero), config());
    const devResult = renderDeployment(input(dev), config());
    if (!zeroResult.ok || !devResult.ok) throw new Error('render failed');
    expect(zeroResult.value.objects).toEqual(devResult.value.objects);
    expect(zeroResult.value.statusNotes).toEqual([expect.stringContaining('dev_zero runs as dev')]);
    expect(zeroResult.value.notes).toEqual(zeroResult.value.statusNotes);
    expect(devResult.value.statusNotes).toEqual([]);
  });
});

// A ServiceAccount is its permissions; a token is a credential.
describe('service accounts by policy', () => {
  const named = (account: string, volumes: ResourceSpec['volumes'] = []) =>
    withSpec({ service_account_name: account, volumes });
  const tokenVolume = {
    name: 'token',
    projected: { sources: [{ serviceAccountToken: { path: 'token', audience: 'vault' } }] },
  };

  it('refuses a ServiceAccount the policy does not name (none by default), naming the field', () => {
    expect(problems(named('agent-platform'))).toEqual({
      'source_config.resource_spec.service_account_name': expect.stringContaining(
        'ServiceAccount agent-platform is not allowed by render.policy.serviceAccounts (none)',
      ),
    });
    expect(
      problems(named('payroll'), config({ policy: { serviceAccounts: ['agent-*', 'reporting'] } })),
    ).toEqual({
      'source_config.resource_spec.service_account_name': expect.stringContaining('(agent-*, reporting)'),
    });
  });

  it('runs as an allowed one without its token unless the policy allows tokens', () => {
    const allowed = config({ policy: { serviceAccounts: ['agent-*'] } });
    const spec = podSpec(find(render(named('agent-platform'), allowed), 'Deployment'));
    expect(spec.serviceAccountName).toBe('agent-platform');
    expect(spec.automountServiceAccountToken).toBe(false);
    const withTokens = config({ policy: { serviceAccounts: ['agent-*'], serviceAccountTokens: true } });
    expect(
      podSpec(find(render(named('agent-platform'), withTokens), 'Deployment')).automountServiceAccountToken,
    ).toBe(true);
  });

  it('refuses a projected service-account token unless the policy allows tokens', () => {
    const input = withSpec({ volumes: [tokenVolume] });
    expect(problems(input)).toEqual({
      'source_config.resource_spec.volumes[0].projected.sources[0].serviceAccountToken':
        expect.stringContaining('render.policy.serviceAccountTokens'),
    });
    expect(renderDeployment(input, config({ policy: { serviceAccountTokens: true } })).ok).toBe(true);
  });

  // Projected sources by allow-list: one Kubernetes adds later issues or reads what the platform
  // has not vouched for (a pod certificate, a cluster's trust bundle).
  it.each([
    ['podCertificate', { signerName: 'example.test/signer', keyType: 'ED25519', credentialBundlePath: 'c' }],
    ['clusterTrustBundle', { signerName: 'example.test/signer', path: 'bundle.pem' }],
    ['somethingNew', {}],
  ])('refuses a projected %s source, naming the field, whatever the token policy', (key, value) => {
    const input = withSpec({
      volumes: [{ name: 'p', projected: { sources: [{ configMap: { name: 'ca' } }, { [key]: value }] } }],
    });
    for (const tokens of [false, true])
      expect(problems(input, config({ policy: { serviceAccountTokens: tokens } }))).toEqual({
        [`source_config.resource_spec.volumes[0].projected.sources[1].${key}`]: expect.stringContaining(
          'is not a projected source a deployment may use (secret, configMap, downwardAPI, serviceAccountToken)',
        ),
      });
  });

  it('takes projected secret, configMap and downwardAPI sources', () => {
    const input = withSpec({
      volumes: [
        {
          name: 'p',
          projected: {
            sources: [
              { secret: { name: 'shared-ca' } },
              { configMap: { name: 'ca' } },
              { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
            ],
          },
        },
      ],
    });
    expect(renderDeployment(input, config()).ok).toBe(true);
  });
});

// What a pod names (docs/design.md, "What a pod may name"), found wherever a pod can name it.
describe('references of rendered pods', () => {
  it('lists every Secret, ConfigMap and claim a pod template names, with where', async () => {
    const { podReferences } = await import('../../../src/render/references.ts');
    const input = withSpec({
      image_pull_secrets: [{ name: 'pull' }],
      volumes: [
        { name: 'a', secret: { secretName: 's-vol' } },
        { name: 'b', configMap: { name: 'cm-vol' } },
        { name: 'c', persistentVolumeClaim: { claimName: 'data-other-db-0' } },
        {
          name: 'd',
          projected: { sources: [{ secret: { name: 's-proj' } }, { configMap: { name: 'cm-proj' } }] },
        },
      ],
      sidecars: [
        {
          name: 'side',
          image: 'busybox',
          env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's-env', key: 'k' } } }],
          envFrom: [{ secretRef: { name: 's-from' } }, { configMapRef: { name: 'cm-from' } }],
        },
      ],
    });
    const refs = podReferences(render(input)).map((r) => `${r.kind}/${r.name}`);
    for (const expected of [
      'Secret/pull',
      'Secret/s-vol',
      'ConfigMap/cm-vol',
      'PersistentVolumeClaim/data-other-db-0',
      'Secret/s-proj',
      'ConfigMap/cm-proj',
      'Secret/s-env',
      'Secret/s-from',
      'ConfigMap/cm-from',
    ])
      expect(refs).toContain(expected);
  });

  it('limits secret_references to the Secrets render.policy.secretReferences names', () => {
    const input = withSpec(
      {},
      { secret_references: [{ name: 'TOKEN', secret_name: 'payroll-db', secret_key: 'password' }] },
    );
    expect(renderDeployment(input, config()).ok).toBe(true);
    expect(problems(input, config({ policy: { secretReferences: ['shared-*'] } }))).toEqual({
      'secret_references[0].secret_name': expect.stringContaining(
        'Secret payroll-db is not allowed by render.policy.secretReferences (shared-*)',
      ),
    });
  });
});

// Each deployment's network fenced (enforced by the cluster's network plugin).
describe('network policies', () => {
  const withData = withSpec({ db_storage_gi: 1, kvstore_memory_mb: 64 });
  const id = minimalDeployment.id;

  it('lets only the deployment’s own pods reach its database and key-value store', () => {
    const data = find(render(withData), 'NetworkPolicy', '-data');
    expect(data?.spec).toEqual({
      podSelector: {
        matchLabels: { [LABEL_DEPLOYMENT_ID]: id },
        matchExpressions: [{ key: LABEL_COMPONENT, operator: 'In', values: ['database', 'kvstore'] }],
      },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { [LABEL_DEPLOYMENT_ID]: id } } }] }],
    });
  });

  it.each([
    ['its own pods only', {}, []],
    [
      'and the ingress controller’s namespace',
      { ingressControllerNamespace: 'ingress-nginx' },
      [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }],
    ],
    [
      'and the sources the platform team names',
      { allowFrom: [{ namespaceSelector: { matchLabels: { team: 'observability' } } }] },
      [{ namespaceSelector: { matchLabels: { team: 'observability' } } }],
    ],
  ])('lets the application workloads be reached by %s', (_what, networkPolicy, extra) => {
    const app = find(render(withData, config({ networkPolicy })), 'NetworkPolicy', 'hello');
    expect(app?.spec.podSelector.matchExpressions).toEqual([
      { key: LABEL_COMPONENT, operator: 'NotIn', values: ['database', 'kvstore'] },
    ]);
    expect(app?.spec.ingress).toEqual([
      { from: [{ podSelector: { matchLabels: { [LABEL_DEPLOYMENT_ID]: id } } }, ...extra] },
    ]);
  });

  it('renders none when off (a cluster whose network plugin does not enforce them)', () => {
    expect(
      find(render(withData, config({ networkPolicy: { enabled: false } })), 'NetworkPolicy'),
    ).toBeUndefined();
  });
});

describe('canonical hashes', () => {
  it('an HMAC under a key is the same whether the key is imported once or each time', async () => {
    const { createHmac } = await import('node:crypto');
    const { canonicalHash } = await import('../../../src/render/canonicalHash.ts');
    const key = new Uint8Array(32).fill(7);
    const value = { b: [1, { d: 'x', c: null }], a: 'y' };
    const expected = createHmac('sha256', key)
      .update('{"a":"y","b":[1,{"c":null,"d":"x"}]}')
      .digest('hex')
      .slice(0, 16);
    expect(canonicalHash(value, key)).toBe(expected);
    expect(canonicalHash(value, key)).toBe(expected);
  });
});
