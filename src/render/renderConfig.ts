// The render part of the agent configuration: every default a platform team may want to change,
// with values that work out of the box (`RenderConfig.parse({})`).
import { z } from 'zod';

const Resources = z.strictObject({
  /** cores */
  cpu: z.number().positive(),
  memoryMb: z.number().positive(),
});

const FreeForm = z.record(z.string(), z.unknown());

export const RenderConfig = z.strictObject({
  app: z
    .strictObject({
      containerName: z.string().default('app'),
      containerPort: z.number().int().min(1).max(65535).default(8000),
      servicePort: z.number().int().min(1).max(65535).default(80),
      /** Tells one image which role it runs as: main, queue, orchestrator or executor. */
      roleEnv: z.string().default('WORKLOAD_ROLE'),
      /** Readiness probe of the main container; null for none. */
      readinessProbe: FreeForm.nullable().default({ tcpSocket: { port: 'http' }, periodSeconds: 10 }),
      terminationGracePeriodSeconds: z.number().int().min(0).default(30),
    })
    .prefault({}),
  /** Requests used when a deployment gives none, by deployment_type ("lean" for dev). */
  defaults: z
    .strictObject({
      dev_free: Resources.default({ cpu: 0.1, memoryMb: 256 }),
      dev: Resources.default({ cpu: 0.25, memoryMb: 512 }),
      prod: Resources.default({ cpu: 0.5, memoryMb: 1024 }),
    })
    .prefault({}),
  /**
   * The limit when only a request is given, applied the same way to every workload:
   * memory limit = request (memory is not compressible; a higher limit invites OOM kills under
   * pressure), and no cpu limit (cpu limits throttle; requests already reserve the share).
   */
  limits: z
    .strictObject({
      memoryWhenOnlyRequest: z.enum(['request', 'none']).default('request'),
      cpuWhenOnlyRequest: z.enum(['request', 'none']).default('none'),
    })
    .prefault({}),
  /**
   * Requests for a sidecar or init container that gives none (or only some): a namespace with a
   * cpu/memory ResourceQuota rejects a pod any of whose containers has no request. Filled key by
   * key, so what the deployment sets always wins; the memory limit follows `limits`.
   */
  extraContainers: z
    .strictObject({
      cpu: z.number().positive().default(0.05),
      memoryMb: z.number().positive().default(64),
    })
    .prefault({}),
  autoscaling: z
    .strictObject({ targetCpuUtilization: z.number().int().min(1).max(100).default(70) })
    .prefault({}),
  prod: z
    .strictObject({
      podDisruptionBudget: z.boolean().default(true),
      topologySpread: z.boolean().default(true),
    })
    .prefault({}),
  database: z
    .strictObject({
      image: z.string().default('postgres:17-alpine'),
      port: z.number().int().default(5432),
      user: z.string().default('app'),
      database: z.string().default('app'),
      uriEnv: z.string().default('DATABASE_URI'),
      passwordEnv: z.string().default('DATABASE_PASSWORD'),
      /** A deployment whose secrets or secret references carry one of these names brings its own. */
      bringYourOwnNames: z.array(z.string()).default(['DATABASE_URI', 'POSTGRES_URI']),
      storageClassName: z.string().optional(),
      defaults: z
        .strictObject({
          cpu: z.number().positive().default(0.25),
          memoryMb: z.number().positive().default(512),
          storageGi: z.number().positive().default(1),
        })
        .prefault({}),
      /** The alpine postgres image's postgres user. */
      runAsUser: z.number().int().default(70),
    })
    .prefault({}),
  kvstore: z
    .strictObject({
      image: z.string().default('redis:7-alpine'),
      port: z.number().int().default(6379),
      uriEnv: z.string().default('REDIS_URI'),
      bringYourOwnNames: z.array(z.string()).default(['REDIS_URI']),
      kind: z.enum(['StatefulSet', 'Deployment']).default('StatefulSet'),
      defaults: z
        .strictObject({
          cpu: z.number().positive().default(0.1),
          memoryMb: z.number().positive().default(128),
        })
        .prefault({}),
      runAsUser: z.number().int().default(999),
    })
    .prefault({}),
  hardening: z
    .strictObject({
      runAsNonRoot: z.boolean().default(true),
      allowPrivilegeEscalation: z.boolean().default(false),
      dropAllCapabilities: z.boolean().default(true),
      seccompRuntimeDefault: z.boolean().default(true),
      readOnlyRootFilesystem: z.boolean().default(false),
      /** The token is mounted only when a deployment names its service account. */
      automountServiceAccountToken: z.boolean().default(false),
    })
    .prefault({}),
  /**
   * Only what the interface can express: host namespaces (pod-level hostNetwork/hostPID/hostIPC),
   * host ports (containers carry no ports) and hostPath volumes cannot be asked for at all, so
   * there is no setting for them.
   */
  policy: z
    .strictObject({
      forbidPrivilegedContainers: z.boolean().default(true),
    })
    .prefault({}),
  ingress: z
    .strictObject({
      /** custom_url becomes an Ingress only when a class is configured. */
      className: z.string().optional(),
      annotations: z.record(z.string(), z.string()).default({}),
      tlsSecretName: z.string().optional(),
    })
    .prefault({}),
});
export type RenderConfig = z.infer<typeof RenderConfig>;
export type RenderConfigInput = z.input<typeof RenderConfig>;
