// Deployment, as `GET /v2/deployments` lists it, and everything nested in it.
import { z } from 'zod';
import {
  DateTime,
  DeploymentStatus,
  DeploymentType,
  FreeFormObject,
  RevisionSource,
  Source,
  Uuid,
} from './common.ts';
import { capped, INPUT_CAPS } from './inputCaps.ts';

const num = z.number().nullish();
const str = z.string().nullish();

export const VolumeMount = z.object({
  name: z.string(),
  mountPath: z.string(),
  subPath: str,
  mountPropagation: str,
  subPathExpr: str,
  readOnly: z.boolean().nullish(),
});
export type VolumeMount = z.infer<typeof VolumeMount>;

export const VOLUME_SOURCES = [
  'configMap',
  'secret',
  'emptyDir',
  'persistentVolumeClaim',
  'nfs',
  'projected',
  'downwardAPI',
  'csi',
] as const;
export type VolumeSourceName = (typeof VOLUME_SOURCES)[number];

// Strict: a volume source outside the interface's list (hostPath, …) is rejected, not dropped.
export const Volume = z
  .strictObject({
    name: z.string(),
    configMap: FreeFormObject.nullish(),
    secret: FreeFormObject.nullish(),
    emptyDir: FreeFormObject.nullish(),
    persistentVolumeClaim: FreeFormObject.nullish(),
    nfs: FreeFormObject.nullish(),
    projected: FreeFormObject.nullish(),
    downwardAPI: FreeFormObject.nullish(),
    csi: FreeFormObject.nullish(),
  })
  .superRefine((volume, ctx) => {
    const set = VOLUME_SOURCES.filter((source) => volume[source] != null);
    if (set.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `a volume needs exactly one source of ${VOLUME_SOURCES.join(', ')}; got ${set.length === 0 ? 'none' : set.join(', ')}`,
      });
    }
  });
export type Volume = z.infer<typeof Volume>;

export const EnvVar = z.object({
  name: z.string(),
  value: str,
  valueFrom: FreeFormObject.nullish(),
});
export type EnvVar = z.infer<typeof EnvVar>;

export const Container = z.object({
  name: z.string(),
  image: str,
  imagePullPolicy: str,
  workingDir: str,
  restartPolicy: str,
  command: capped(z.array(z.string()), INPUT_CAPS.commandOrArgs).nullish(),
  args: capped(z.array(z.string()), INPUT_CAPS.commandOrArgs).nullish(),
  env: capped(z.array(EnvVar), INPUT_CAPS.env).nullish(),
  envFrom: capped(z.array(FreeFormObject), INPUT_CAPS.envFrom).nullish(),
  resources: z.object({ limits: FreeFormObject.nullish(), requests: FreeFormObject.nullish() }).nullish(),
  volumeMounts: capped(z.array(VolumeMount), INPUT_CAPS.volumeMounts).nullish(),
  securityContext: FreeFormObject.nullish(),
});
export type Container = z.infer<typeof Container>;

export const ResourceSpec = z.object({
  min_scale: num,
  max_scale: num,
  cpu: num,
  cpu_limit: num,
  memory_mb: num,
  memory_limit_mb: num,
  queue_min_scale: num,
  queue_max_scale: num,
  queue_cpu: num,
  queue_cpu_limit: num,
  queue_memory_mb: num,
  queue_memory_limit_mb: num,
  orchestrator_cpu: num,
  orchestrator_cpu_limit: num,
  orchestrator_memory_mb: num,
  orchestrator_memory_limit_mb: num,
  orchestrator_min_scale: num,
  orchestrator_max_scale: num,
  executor_cpu: num,
  executor_cpu_limit: num,
  executor_memory_mb: num,
  executor_memory_limit_mb: num,
  kvstore_cpu: num,
  kvstore_cpu_limit: num,
  kvstore_memory_mb: num,
  kvstore_memory_limit_mb: num,
  db_cpu: num,
  db_cpu_limit: num,
  db_memory_mb: num,
  db_memory_limit_mb: num,
  db_storage_gi: num,
  db_max_connections: num,
  labels: capped(FreeFormObject, INPUT_CAPS.labels).nullish(),
  annotations: capped(FreeFormObject, INPUT_CAPS.annotations).nullish(),
  service_account_name: str,
  image_pull_secrets: capped(z.array(z.object({ name: z.string() })), INPUT_CAPS.imagePullSecrets).nullish(),
  volumes: capped(z.array(Volume), INPUT_CAPS.volumes).nullish(),
  volume_mounts: capped(z.array(VolumeMount), INPUT_CAPS.volumeMounts).nullish(),
  init_containers: capped(z.array(Container), INPUT_CAPS.initContainers).nullish(),
  sidecars: capped(z.array(Container), INPUT_CAPS.sidecars).nullish(),
});
export type ResourceSpec = z.infer<typeof ResourceSpec>;

export const ListenerConfig = z.object({ k8s_namespace: str });

export const SourceConfig = z.object({
  integration_id: Uuid.nullish(),
  repo_url: str,
  deployment_type: DeploymentType.nullish(),
  build_on_push: z.boolean().nullish(),
  custom_url: str,
  resource_spec: ResourceSpec.nullish(),
  listener_id: Uuid.nullish(),
  listener_config: ListenerConfig.nullish(),
  install_command: str,
  build_command: str,
});
export type SourceConfig = z.infer<typeof SourceConfig>;

/** Request form (the bodies that create or patch a deployment): `repo_commit_sha` is response-only. */
export const SourceRevisionConfigRequest = z.object({
  repo_ref: str,
  graph_config_path: str,
  image_uri: str,
  source_tarball_path: str,
});
export const SourceRevisionConfig = SourceRevisionConfigRequest.extend({ repo_commit_sha: str });
export type SourceRevisionConfig = z.infer<typeof SourceRevisionConfig>;

export const SecretReference = z.object({
  name: z.string(),
  secret_name: z.string(),
  secret_key: z.string(),
});
export type SecretReference = z.infer<typeof SecretReference>;

export const Secret = z.object({ name: z.string(), value: z.string() });
export type Secret = z.infer<typeof Secret>;

export const Deployment = z.object({
  name: z.string(),
  source: Source,
  source_config: SourceConfig,
  source_revision_config: SourceRevisionConfig,
  secrets: capped(z.array(Secret), INPUT_CAPS.secrets),
  id: Uuid,
  tenant_id: Uuid,
  created_at: DateTime,
  updated_at: DateTime,
  status: DeploymentStatus,
  latest_revision_id: Uuid.nullable(),
  active_revision_id: Uuid.nullable(),
  secret_references: capped(z.array(SecretReference), INPUT_CAPS.secretReferences).nullish(),
  image_version: str,
});
export type Deployment = z.infer<typeof Deployment>;

const lenientString = z.string().optional().catch(undefined);

/**
 * What can be read of a deployment that fails validation (an enum value this agent does not
 * know, a wrong type): whose it is, where it goes, its latest revision. Each field on its own.
 */
export const DeploymentIdentity = z
  .object({
    name: lenientString,
    source_config: z
      .object({
        listener_id: lenientString,
        listener_config: z.object({ k8s_namespace: lenientString }).optional().catch(undefined),
      })
      .optional()
      .catch(undefined),
    latest_revision_id: lenientString,
  })
  .transform((d) => ({
    name: d.name,
    listenerId: d.source_config?.listener_id,
    namespace: d.source_config?.listener_config?.k8s_namespace,
    latestRevisionId: d.latest_revision_id,
  }));

/** Body of POST /v2/deployments: the writable fields of a Deployment. */
export const DeploymentCreate = z.object({
  name: z.string().min(1),
  source: Source,
  source_config: SourceConfig.nullish(),
  source_revision_config: SourceRevisionConfigRequest.nullish(),
  secrets: z.array(Secret).nullish(),
  secret_references: z.array(SecretReference).nullish(),
});
export type DeploymentCreate = z.infer<typeof DeploymentCreate>;

/** Body of `PATCH /v2/deployments/{deployment_id}`. */
export const DeploymentPatch = z.object({
  revision_source: RevisionSource.nullish(),
  source_config: SourceConfig.nullish(),
  source_revision_config: SourceRevisionConfigRequest.nullish(),
  secrets: z.array(Secret).nullish(),
  secret_references: z.array(SecretReference).nullish(),
});
export type DeploymentPatch = z.infer<typeof DeploymentPatch>;
