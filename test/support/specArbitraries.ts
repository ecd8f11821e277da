// fast-check arbitraries: valid deployments (within what the interface allows) and ways to break one.
import fc from 'fast-check';
import type { Container, Deployment, ResourceSpec } from '../../src/controlplane/schemas/index.ts';
import { listener, minimalDeployment } from './renderFixtures.ts';

const dnsLabel = fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/);
/** Names the agent sets, or that bring a data store of one's own: never a valid deployment's secret. */
const AGENT_ENV = ['WORKLOAD_ROLE', 'PORT', 'DATABASE_URI', 'DATABASE_PASSWORD', 'REDIS_URI', 'POSTGRES_URI'];
const envName = fc.stringMatching(/^[A-Z][A-Z0-9_]{0,8}$/).filter((n) => !AGENT_ENV.includes(n));
const cores = fc.integer({ min: 1, max: 4000 }).map((m) => m / 1000);
const megabytes = fc.integer({ min: 16, max: 8192 });

/** A request with an optional limit at or above it. */
const requestAndLimit = (base: fc.Arbitrary<number>) =>
  fc
    .tuple(base, fc.option(fc.double({ min: 1, max: 4, noNaN: true }), { nil: undefined }))
    .map(([request, factor]) => ({
      request,
      limit: factor === undefined ? undefined : Math.ceil(request * factor * 1000) / 1000,
    }));

const scale = fc
  .tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 5 }))
  .map(([min, extra]) => ({ min, max: min + extra }));

const workload = fc.record({ cpu: requestAndLimit(cores), memory: requestAndLimit(megabytes), scale });

function container(name: string, volumes: readonly string[]): fc.Arbitrary<Container> {
  return fc.record({
    name: fc.constant(name),
    image: fc.constantFrom('busybox:1.36', 'nginx:1.27'),
    command: fc.option(fc.constant(['sh', '-c', 'sleep 3600']), { nil: undefined }),
    env: fc.option(
      fc.uniqueArray(envName, { maxLength: 3 }).map((names) => names.map((n) => ({ name: n, value: 'v' }))),
      { nil: undefined },
    ),
    volumeMounts: fc.option(
      fc
        .subarray([...volumes])
        .map((names) => names.map((n) => ({ name: n, mountPath: `/mnt/${n}`, readOnly: true }))),
      { nil: undefined },
    ),
  });
}

export const validDeployment: fc.Arbitrary<Deployment> = fc
  .record({
    name: fc.string({ minLength: 1, maxLength: 80 }).filter((n) => /[a-zA-Z0-9]/.test(n)),
    main: workload,
    queue: fc.option(workload, { nil: undefined }),
    orchestrator: fc.option(workload, { nil: undefined }),
    executor: fc.option(fc.record({ cpu: requestAndLimit(cores), memory: requestAndLimit(megabytes) }), {
      nil: undefined,
    }),
    db: fc.option(
      fc.record({ storage: fc.integer({ min: 1, max: 50 }), connections: fc.integer({ min: 10, max: 500 }) }),
      { nil: undefined },
    ),
    kvstore: fc.boolean(),
    type: fc.constantFrom('dev_free', 'dev', 'prod') as fc.Arbitrary<'dev_free' | 'dev' | 'prod'>,
    volumes: fc.uniqueArray(dnsLabel, { maxLength: 3 }),
    sidecarNames: fc.uniqueArray(
      dnsLabel.map((n) => `s${n}`),
      { maxLength: 2 },
    ),
    initNames: fc.uniqueArray(
      dnsLabel.map((n) => `i${n}`),
      { maxLength: 2 },
    ),
    secrets: fc.uniqueArray(envName, { maxLength: 3 }),
    labels: fc.dictionary(dnsLabel, dnsLabel, { maxKeys: 3 }),
    namespace: fc.constantFrom('apps', 'apps-staging'),
  })
  .chain((parts) =>
    fc
      .tuple(
        fc.tuple(...parts.sidecarNames.map((n) => container(n, parts.volumes))),
        fc.tuple(...parts.initNames.map((n) => container(n, parts.volumes))),
      )
      .map(([sidecars, initContainers]) => {
        const spec: ResourceSpec = {
          min_scale: parts.main.scale.min,
          max_scale: parts.main.scale.max,
          cpu: parts.main.cpu.request,
          cpu_limit: parts.main.cpu.limit,
          memory_mb: parts.main.memory.request,
          memory_limit_mb: parts.main.memory.limit,
          labels: parts.labels,
          volumes: parts.volumes.map((name) => ({ name, emptyDir: {} })),
          volume_mounts: parts.volumes.map((name) => ({ name, mountPath: `/data/${name}` })),
          sidecars,
          init_containers: initContainers,
        };
        for (const role of ['queue', 'orchestrator'] as const) {
          const w = parts[role];
          if (!w) continue;
          Object.assign(spec, {
            [`${role}_min_scale`]: w.scale.min,
            [`${role}_max_scale`]: w.scale.max,
            [`${role}_cpu`]: w.cpu.request,
            [`${role}_cpu_limit`]: w.cpu.limit,
            [`${role}_memory_mb`]: w.memory.request,
            [`${role}_memory_limit_mb`]: w.memory.limit,
          });
        }
        if (parts.executor)
          Object.assign(spec, {
            executor_cpu: parts.executor.cpu.request,
            executor_memory_mb: parts.executor.memory.request,
          });
        if (parts.db)
          Object.assign(spec, { db_storage_gi: parts.db.storage, db_max_connections: parts.db.connections });
        if (parts.kvstore) spec.kvstore_memory_mb = 64;
        const deployment = structuredClone(minimalDeployment);
        deployment.name = parts.name;
        deployment.source_config = {
          ...deployment.source_config,
          deployment_type: parts.type,
          listener_config: { k8s_namespace: parts.namespace },
          resource_spec: spec,
        };
        deployment.secrets = parts.secrets.map((name) => ({ name, value: `value-of-${name}` }));
        return deployment;
      }),
  );

type Breakage = { readonly path: string; readonly apply: (d: Deployment) => void };

const spec = (d: Deployment): ResourceSpec => {
  d.source_config.resource_spec ??= {};
  return d.source_config.resource_spec;
};

/** One way to break a valid deployment, and the field path the error must name. */
export const breakage: fc.Arbitrary<Breakage> = fc.constantFrom<Breakage>(
  {
    path: 'source_config.resource_spec.cpu',
    apply: (d) => {
      spec(d).cpu = -0.5;
    },
  },
  {
    path: 'source_config.resource_spec.memory_mb',
    apply: (d) => {
      spec(d).memory_mb = Number.NaN;
    },
  },
  {
    path: 'source_config.resource_spec.min_scale',
    apply: (d) => Object.assign(spec(d), { min_scale: 7, max_scale: 2 }),
  },
  {
    path: 'source_config.resource_spec.cpu_limit',
    apply: (d) => Object.assign(spec(d), { cpu: 2, cpu_limit: 1 }),
  },
  {
    path: 'source_config.resource_spec.volume_mounts[0].name',
    apply: (d) => {
      spec(d).volume_mounts = [{ name: 'missing-volume', mountPath: '/m' }];
    },
  },
  {
    path: 'source_config.resource_spec.sidecars[1].name',
    apply: (d) => {
      spec(d).sidecars = [
        { name: 'twin', image: 'x' },
        { name: 'twin', image: 'x' },
      ];
    },
  },
  {
    path: 'secrets[0].name',
    apply: (d) => {
      d.secrets = [{ name: '9-lives', value: 'x' }];
    },
  },
  {
    path: 'secrets[0].name',
    apply: (d) => {
      d.secrets = [{ name: 'LANGSMITH_HOST_PROJECT_ID', value: 'x' }];
    },
  },
  {
    path: 'source_config.resource_spec.sidecars[0].env[0].name',
    apply: (d) => {
      spec(d).sidecars = [
        { name: 'spoof', image: 'x', env: [{ name: 'LSD_DEPLOYMENT_TYPE', value: 'prod' }] },
      ];
    },
  },
  {
    path: 'source_config.listener_config.k8s_namespace',
    apply: (d) => {
      d.source_config.listener_config = { k8s_namespace: 'kube-system' };
    },
  },
  {
    path: 'source',
    apply: (d) => {
      d.source = 'internal_template';
    },
  },
  {
    path: 'source_revision_config.image_uri',
    apply: (d) => {
      d.source_revision_config = { image_uri: '' };
    },
  },
  {
    path: 'name',
    apply: (d) => {
      d.name = '___';
    },
  },
);

export { listener };

// --- Pod settings as an attacker with a control-plane account would write them ---------------

const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
const profile = (types: string[]) =>
  fc
    .constantFrom(...types)
    .map((type) => (type === 'Localhost' ? { type, localhostProfile: 'profiles/app.json' } : { type }));

/** Only what restricted allows, in every field it looks at (render must take these). */
const allowedContext = fc.record(
  {
    allowPrivilegeEscalation: fc.constant(false),
    runAsUser: fc.constantFrom(1000, 65532),
    runAsNonRoot: fc.constant(true),
    readOnlyRootFilesystem: fc.boolean(),
    capabilities: fc.record({ add: fc.constantFrom([], ['NET_BIND_SERVICE']), drop: fc.constant(['ALL']) }),
    seccompProfile: profile(['RuntimeDefault', 'Localhost']),
    appArmorProfile: profile(['RuntimeDefault', 'Localhost']),
    seLinuxOptions: fc.constantFrom({ type: 'container_t' }, { level: 's0:c123,c456' }),
    procMount: fc.constant('Default'),
  },
  { requiredKeys: [] },
);

/** A container security context: every field Pod Security looks at, safe and unsafe values. */
const anyContext = fc.record(
  {
    privileged: fc.boolean(),
    allowPrivilegeEscalation: fc.constantFrom(true, false, null),
    runAsUser: fc.constantFrom(0, 1000, 65532),
    runAsNonRoot: fc.boolean(),
    readOnlyRootFilesystem: fc.boolean(),
    capabilities: fc.record(
      {
        add: fc.subarray(['NET_BIND_SERVICE', 'NET_ADMIN', 'SYS_ADMIN', 'CHOWN', 'NET_RAW']),
        drop: fc.constantFrom([], ['ALL'], ['NET_RAW']),
      },
      { requiredKeys: [] },
    ),
    seccompProfile: profile(['RuntimeDefault', 'Unconfined', 'Localhost']),
    appArmorProfile: profile(['RuntimeDefault', 'Unconfined', 'Localhost']),
    seLinuxOptions: fc.constantFrom({ type: 'container_t' }, { type: 'spc_t' }, { level: 's0:c123,c456' }),
    procMount: fc.constantFrom('Default', 'Unmasked'),
    windowsOptions: fc.constantFrom({ hostProcess: true }, { hostProcess: false }),
  },
  { requiredKeys: [] },
);
const securityContext = fc.oneof(
  { weight: 3, arbitrary: allowedContext },
  { weight: 1, arbitrary: anyContext },
);

/** One volume of each type the interface has, with content the API server takes. */
const VOLUME_KINDS = {
  configMap: { name: 'settings' },
  secret: { secretName: 'tls' },
  emptyDir: { sizeLimit: '64Mi' },
  persistentVolumeClaim: { claimName: 'shared' },
  nfs: { server: 'files.example.test', path: '/exports' },
  projected: {
    sources: [
      { configMap: { name: 'settings' } },
      { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
    ],
  },
  downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
  csi: { driver: 'files.csi.example.test', readOnly: true },
} as const;

type VolumeKind = keyof typeof VOLUME_KINDS;
const ALL_VOLUME_KINDS = Object.keys(VOLUME_KINDS) as VolumeKind[];
/** Mostly the volume types restricted allows; at times nfs too. */
const volumeKinds: fc.Arbitrary<VolumeKind[]> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.subarray(
      ALL_VOLUME_KINDS.filter((kind) => kind !== 'nfs'),
      { minLength: 1 },
    ),
  },
  { weight: 1, arbitrary: fc.subarray(ALL_VOLUME_KINDS, { minLength: 1 }) },
);

/**
 * What a sidecar or init container gives of its resources: nothing, a lone request of one
 * resource (which must still end with a limit), or a limit alone.
 */
const containerResources = fc.constantFrom<Container['resources'] | undefined>(
  undefined,
  { requests: { memory: '1Mi' } },
  { requests: { cpu: '10m' } },
  { requests: { 'ephemeral-storage': '16Mi' } },
  { limits: { memory: '32Mi' } },
  { limits: { 'ephemeral-storage': '256Mi' } },
);

/**
 * A deployment (the minimal one) with free-form pod settings: sidecars and an init container (at
 * times a native sidecar) with any security context and any partial resources, volumes of every
 * type mounted with any propagation, and annotations that set AppArmor or seccomp the old way.
 * Pod-level fields (sysctls, host namespaces) are not part of the interface, so they cannot be
 * generated: render never renders them from input.
 */
export const hostilePodSettings: fc.Arbitrary<Deployment> = fc
  .record({
    volumes: volumeKinds,
    propagation: maybe(fc.constantFrom('None', 'HostToContainer', 'HostToContainer', 'Bidirectional')),
    sidecars: fc.array(maybe(securityContext), { minLength: 1, maxLength: 2 }),
    init: maybe(securityContext),
    resources: fc.array(containerResources, { minLength: 3, maxLength: 3 }),
    nativeSidecar: fc.boolean(),
    annotations: fc.record(
      {
        'container.apparmor.security.beta.kubernetes.io/app': fc.constantFrom(
          'runtime/default',
          'unconfined',
          'localhost/app',
        ),
        'seccomp.security.alpha.kubernetes.io/pod': fc.constantFrom('runtime/default', 'unconfined'),
        team: fc.constant('agents'),
      },
      { requiredKeys: [] },
    ),
  })
  .map(({ volumes, propagation, sidecars, init, resources, nativeSidecar, annotations }) => {
    const deployment = structuredClone(minimalDeployment);
    const volumeName = (kind: string) => kind.toLowerCase();
    const mounts = volumes.map((kind) => ({
      name: volumeName(kind),
      mountPath: `/mnt/${volumeName(kind)}`,
      ...(propagation ? { mountPropagation: propagation } : {}),
    }));
    const container = (name: string, context: object | undefined, i: number): Container => ({
      name,
      image: 'busybox:1.36',
      volumeMounts: mounts,
      ...(context ? { securityContext: { ...context } } : {}),
      ...(resources[i] ? { resources: structuredClone(resources[i]) } : {}),
    });
    deployment.source_config.resource_spec = {
      min_scale: 1,
      max_scale: 1,
      cpu: 0.1,
      memory_mb: 64,
      annotations,
      volumes: volumes.map((kind) => ({
        name: volumeName(kind),
        [kind]: structuredClone(VOLUME_KINDS[kind]),
      })),
      sidecars: sidecars.map((context, i) => container(`side${i}`, context, i)),
      ...(init === undefined
        ? {}
        : {
            init_containers: [
              { ...container('setup', init, 2), ...(nativeSidecar ? { restartPolicy: 'Always' } : {}) },
            ],
          }),
    };
    return deployment;
  });
