// Resolves one deployment into a render plan, collecting every problem with its field path:
// namespace, names, image, scales, resources, containers, volumes, env, policy.
import type {
  Container,
  Deployment,
  DeploymentType,
  Listener,
  ResourceSpec,
  Revision,
  Secret,
  SecretReference,
  VolumeMount,
} from '../controlplane/schemas/index.ts';
import { sourceMeaning } from '../controlplane/schemas/index.ts';
import { isAgentAnnotation, isBoundTo } from '../objects/ownership.ts';
import { inputExcerpt as excerpt } from '../report/terminalText.ts';
import { planRunGrace } from './drain.ts';
import type { RenderProblem } from './errors.ts';
import { inputBoundsProblems } from './inputBounds.ts';
import {
  baseName,
  isDnsLabel,
  isEnvVarName,
  isHostname,
  isLabelValue,
  isQualifiedKey,
  isSecretKey,
} from './names.ts';
import { objectNames, STORE_WAIT_CONTAINER } from './objects.ts';
import { patternList } from './patterns.ts';
import { cpuMillis } from './quantities.ts';
import { planQueueScaler, type QueueScalerPlan } from './queueScaling.ts';
import { referenceRefusal } from './referencePolicy.ts';
import type { RenderConfig } from './renderConfig.ts';
import { containerResourceProblems } from './resourceLimits.ts';
import { routeKindOf, routePathPrefix } from './routes.ts';

export type AppRole = 'main' | 'queue' | 'orchestrator' | 'executor';

export interface ResolvedResources {
  readonly cpu: number;
  readonly cpuLimit: number | undefined;
  readonly memoryMb: number;
  readonly memoryLimitMb: number | undefined;
}

export interface AppWorkloadPlan {
  readonly role: AppRole;
  readonly resources: ResolvedResources;
  /** Absent for the executor, which is a PodTemplate. */
  readonly scale: { readonly min: number; readonly max: number } | undefined;
}

export interface RenderPlan {
  readonly deploymentId: string;
  readonly deploymentName: string;
  readonly revisionId: string | undefined;
  readonly listenerId: string;
  readonly namespace: string;
  readonly base: string;
  readonly image: string;
  /** As rendered: `dev_zero` runs as `dev`. */
  readonly deploymentType: Exclude<DeploymentType, 'dev_zero'>;
  readonly workloads: readonly AppWorkloadPlan[];
  readonly database:
    | {
        readonly resources: ResolvedResources;
        readonly storageGi: number;
        readonly maxConnections: number | undefined;
      }
    | undefined;
  readonly kvstore: { readonly resources: ResolvedResources } | undefined;
  /** The stores the deployment brings itself (`bringYourOwnNames`), none of them rendered. */
  readonly brought: { readonly database?: BroughtStore; readonly kvstore?: BroughtStore };
  readonly secrets: readonly Secret[];
  readonly secretReferences: readonly SecretReference[];
  readonly spec: ResourceSpec;
  readonly host: string | undefined;
  /** The path an HTTPRoute of `host` matches as a prefix (`/`: every path). */
  readonly pathPrefix: string;
  /** The KEDA ScaledObject of the queue workers (render.autoscaling.queue: keda), if any. */
  readonly queueScaler: QueueScalerPlan | undefined;
  /** How long the server of a pod that runs jobs waits for its runs when stopped (drain.ts). */
  readonly runGraceSeconds: number;
  /** What an operator should know that is not an error (e.g. a database brought by the user). */
  readonly notes: readonly string[];
  /** What the deployment's owner should know: carried by its status message (notes too). */
  readonly statusNotes: readonly string[];
}

/**
 * A store the deployment brings: the variable it brought it by (its secret or secret reference),
 * and the variables the server reads that the agent sets from it — those the deployment does not
 * set itself, so `POSTGRES_URI_CUSTOM` reaches the server as `DATABASE_URI` and `POSTGRES_URI`.
 */
export interface BroughtStore {
  readonly from: string;
  readonly to: readonly string[];
}

function broughtStore(
  ownNames: readonly string[],
  serverNames: readonly string[],
  envNames: ReadonlySet<string>,
): BroughtStore | undefined {
  const from = ownNames.find((name) => envNames.has(name));
  return from === undefined ? undefined : { from, to: serverNames.filter((name) => !envNames.has(name)) };
}

export const DEV_ZERO_NOTE =
  'deployment_type dev_zero runs as dev: scaling to zero needs an activator in front of the Service, which this agent does not provide';

export interface PlanInput {
  readonly deployment: Deployment;
  readonly revision: Revision | undefined;
  readonly listener: Listener;
  readonly allowedNamespaces: readonly string[] | undefined;
}

const SPEC = 'source_config.resource_spec';
const RESERVED_LABEL_PREFIXES = ['k8s-listener.io/', 'app.kubernetes.io/'];

type NumericKey = {
  [K in keyof ResourceSpec]-?: NonNullable<ResourceSpec[K]> extends number ? K : never;
}[keyof ResourceSpec];

const GROUP_FIELDS = {
  queue: [
    'queue_min_scale',
    'queue_max_scale',
    'queue_cpu',
    'queue_cpu_limit',
    'queue_memory_mb',
    'queue_memory_limit_mb',
  ],
  orchestrator: [
    'orchestrator_min_scale',
    'orchestrator_max_scale',
    'orchestrator_cpu',
    'orchestrator_cpu_limit',
    'orchestrator_memory_mb',
    'orchestrator_memory_limit_mb',
  ],
  executor: ['executor_cpu', 'executor_cpu_limit', 'executor_memory_mb', 'executor_memory_limit_mb'],
  kvstore: ['kvstore_cpu', 'kvstore_cpu_limit', 'kvstore_memory_mb', 'kvstore_memory_limit_mb'],
  database: [
    'db_cpu',
    'db_cpu_limit',
    'db_memory_mb',
    'db_memory_limit_mb',
    'db_storage_gi',
    'db_max_connections',
  ],
} as const satisfies Record<string, readonly NumericKey[]>;

/** A tenant's string in a message, cut and escaped (inputExcerpt), in quotes. */
const quoted = (text: string) => `"${excerpt(text)}"`;

class Problems {
  readonly list: RenderProblem[] = [];
  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
}

export function planDeployment(
  input: PlanInput,
  config: RenderConfig,
): { plan?: RenderPlan; problems: RenderProblem[] } {
  const { deployment, revision, listener } = input;
  // The caps first: past one, nothing else is read (inputBounds.ts).
  const bounded = inputBoundsProblems(deployment, revision);
  if (bounded.length > 0) return { problems: bounded };
  const problems = new Problems();
  const spec: ResourceSpec = deployment.source_config.resource_spec ?? {};
  const notes: string[] = [];

  if (sourceMeaning(deployment.source) !== 'external_container') {
    problems.add(
      'source',
      `unsupported source ${deployment.source}: a self-hosted listener runs only external_container (external_docker) deployments`,
    );
  }
  if (!isBoundTo(deployment, listener.id)) {
    problems.add(
      'source_config.listener_id',
      `the deployment is bound to ${deployment.source_config.listener_id ?? 'no listener'}, not to this listener ${listener.id}`,
    );
  }
  const namespace = resolveNamespace(input, problems);
  const base = baseName(deployment.name, deployment.id);
  if (base === undefined)
    problems.add('name', 'cannot be made a valid Kubernetes name (no letters or digits)');

  const image = (
    revision?.source_revision_config.image_uri ?? deployment.source_revision_config.image_uri
  )?.trim();
  if (!image) problems.add('source_revision_config.image_uri', 'an image is required');
  else if (/\s/.test(image))
    problems.add('source_revision_config.image_uri', 'an image reference cannot contain white space');

  const asked = deployment.source_config.deployment_type ?? 'dev';
  const deploymentType = asked === 'dev_zero' ? 'dev' : asked;
  const statusNotes = asked === 'dev_zero' ? [DEV_ZERO_NOTE] : [];
  const defaults = config.defaults[deploymentType];
  const numbers = checkNumbers(spec, problems);

  const workloads: AppWorkloadPlan[] = [
    {
      role: 'main',
      resources: resolveResources(numbers, '', defaults, config, problems),
      scale: resolveScale(numbers, 'min_scale', 'max_scale', problems),
    },
  ];
  for (const role of ['queue', 'orchestrator'] as const) {
    if (!groupSet(spec, GROUP_FIELDS[role])) continue;
    workloads.push({
      role,
      resources: resolveResources(numbers, `${role}_`, defaults, config, problems),
      scale: resolveScale(numbers, `${role}_min_scale`, `${role}_max_scale`, problems),
    });
  }
  if (groupSet(spec, GROUP_FIELDS.executor)) {
    workloads.push({
      role: 'executor',
      resources: resolveResources(numbers, 'executor_', defaults, config, problems),
      scale: undefined,
    });
  }

  const secrets = deployment.secrets;
  const secretReferences = deployment.secret_references ?? [];
  const envNames = new Set([...secrets.map((s) => s.name), ...secretReferences.map((r) => r.name)]);
  // Brought or not, whether a store is asked for: the server reads its variables either way.
  const brought = {
    database: broughtStore(config.database.bringYourOwnNames, config.database.uriEnvs, envNames),
    kvstore: broughtStore(config.kvstore.bringYourOwnNames, [config.kvstore.uriEnv], envNames),
  };
  let database: RenderPlan['database'];
  if (config.database.provision === 'always' || groupSet(spec, GROUP_FIELDS.database)) {
    if (brought.database) {
      notes.push(`no database provisioned: the deployment brings its own (${brought.database.from})`);
    } else {
      const maxConnections = numbers.get('db_max_connections');
      if (maxConnections !== undefined && (!Number.isInteger(maxConnections) || maxConnections < 1)) {
        problems.add(`${SPEC}.db_max_connections`, 'must be a whole number of at least 1');
      }
      database = {
        resources: resolveResources(numbers, 'db_', config.database.defaults, config, problems),
        storageGi: numbers.get('db_storage_gi') ?? config.database.defaults.storageGi,
        maxConnections,
      };
    }
  }
  let kvstore: RenderPlan['kvstore'];
  if (config.kvstore.provision === 'always' || groupSet(spec, GROUP_FIELDS.kvstore)) {
    if (brought.kvstore)
      notes.push(`no key-value store provisioned: the deployment brings its own (${brought.kvstore.from})`);
    else
      kvstore = {
        resources: resolveResources(numbers, 'kvstore_', config.kvstore.defaults, config, problems),
      };
  }

  // The Secrets render generates for this deployment: its own to name, whatever the policy says.
  const generated = base === undefined ? undefined : objectNames(base);
  const ownSecrets = new Set(
    generated
      ? [
          ...(secrets.length > 0 ? [generated.secrets] : []),
          ...(database ? [generated.databaseCredentials] : []),
          ...(kvstore ? [generated.kvstoreCredentials] : []),
        ]
      : [],
  );
  checkSecrets(secrets, secretReferences, ownSecrets, config, problems);
  checkReservedEnv(deployment, agentEnv(config, database !== undefined, kvstore !== undefined), problems);
  checkPodMetadata(spec, config, problems);
  checkVolumesAndContainers(spec, config, problems);
  const host = resolveHost(deployment.source_config.custom_url, config, problems);
  const routeKind = routeKindOf(config);
  let pathPrefix = '/';
  if (host && routeKind === 'HTTPRoute') {
    const prefix = routePathPrefix(deployment.source_config.custom_url ?? '');
    if ('problem' in prefix) problems.add('source_config.custom_url', prefix.problem);
    else pathPrefix = prefix.path;
  }
  if (host && !routeKind)
    notes.push('custom_url is not exposed: the agent has neither an ingress class nor a Gateway configured');
  const queueScaler = planQueueScaler(
    {
      queueScale: workloads.find((workload) => workload.role === 'queue')?.scale,
      database: database !== undefined,
      secrets,
      secretReferences,
    },
    config,
    problems.list,
    notes,
  );
  const runGraceSeconds = planRunGrace({ secrets, secretReferences }, config, problems.list);

  if (problems.list.length > 0 || base === undefined || namespace === undefined || !image) {
    return { problems: problems.list };
  }
  return {
    problems: [],
    plan: {
      deploymentId: deployment.id,
      deploymentName: deployment.name,
      revisionId: revision?.id ?? deployment.latest_revision_id ?? undefined,
      listenerId: listener.id,
      namespace,
      base,
      image,
      deploymentType,
      workloads,
      database,
      kvstore,
      brought: {
        ...(brought.database ? { database: brought.database } : {}),
        ...(brought.kvstore ? { kvstore: brought.kvstore } : {}),
      },
      secrets,
      secretReferences,
      spec,
      host: routeKind ? host : undefined,
      pathPrefix,
      queueScaler,
      runGraceSeconds,
      notes: [...notes, ...statusNotes],
      statusNotes,
    },
  };
}

function resolveNamespace(input: PlanInput, problems: Problems): string | undefined {
  const path = 'source_config.listener_config.k8s_namespace';
  const namespace = input.deployment.source_config.listener_config?.k8s_namespace ?? undefined;
  if (!namespace) {
    problems.add(path, 'a target namespace is required');
    return undefined;
  }
  if (!isDnsLabel(namespace)) problems.add(path, `${excerpt(namespace)} is not a valid namespace name`);
  const listenerNamespaces = input.listener.compute_config?.k8s_namespaces ?? [];
  if (!listenerNamespaces.includes(namespace)) {
    problems.add(
      path,
      `namespace ${excerpt(namespace)} is not one of the listener's k8s_namespaces (${listenerNamespaces.join(', ') || 'none'})`,
    );
  }
  if (input.allowedNamespaces && !input.allowedNamespaces.includes(namespace)) {
    problems.add(
      path,
      `namespace ${excerpt(namespace)} is not in the agent's allow-list (${input.allowedNamespaces.join(', ') || 'empty'})`,
    );
  }
  return namespace;
}

/**
 * Every numeric field must be a finite number ≥ 0, below 1e21: from there JavaScript writes it
 * with an exponent ("1e+300Gi"), which no quantity parses — the API server answers such an apply
 * with a 500, not a refusal, and it would be retried for ever. The valid ones are returned by name.
 */
function checkNumbers(spec: ResourceSpec, problems: Problems): Map<NumericKey, number> {
  const numbers = new Map<NumericKey, number>();
  for (const [key, value] of Object.entries(spec)) {
    if (typeof value !== 'number') continue;
    if (!Number.isFinite(value) || value < 0) {
      problems.add(`${SPEC}.${key}`, 'must be a non-negative number');
      continue;
    }
    if (value >= 1e21) {
      problems.add(`${SPEC}.${key}`, 'is too large for a Kubernetes quantity (at most 1e21)');
      continue;
    }
    numbers.set(key as NumericKey, value);
  }
  return numbers;
}

function groupSet(spec: ResourceSpec, fields: readonly NumericKey[]): boolean {
  return fields.some((field) => spec[field] != null);
}

function resolveScale(
  numbers: Map<NumericKey, number>,
  minKey: NumericKey,
  maxKey: NumericKey,
  problems: Problems,
) {
  const minGiven = numbers.get(minKey);
  const maxGiven = numbers.get(maxKey);
  for (const [key, value] of [
    [minKey, minGiven],
    [maxKey, maxGiven],
  ] as const) {
    if (value !== undefined && !Number.isInteger(value))
      problems.add(`${SPEC}.${key}`, 'must be a whole number');
  }
  const min = minGiven ?? Math.min(1, maxGiven ?? 1);
  const max = maxGiven ?? Math.max(min, 1);
  if (min > max) problems.add(`${SPEC}.${minKey}`, `${minKey} (${min}) is above ${maxKey} (${max})`);
  return { min, max };
}

function resolveResources(
  numbers: Map<NumericKey, number>,
  prefix: '' | 'queue_' | 'orchestrator_' | 'executor_' | 'kvstore_' | 'db_',
  defaults: { cpu: number; memoryMb: number },
  config: RenderConfig,
  problems: Problems,
): ResolvedResources {
  const key = (name: string) => `${prefix}${name}` as NumericKey;
  const positive = (name: string) => {
    const value = numbers.get(key(name));
    if (value === 0) {
      problems.add(`${SPEC}.${key(name)}`, 'must be greater than zero');
      return undefined;
    }
    return value;
  };
  const cpuGiven = positive('cpu');
  const cpuLimitGiven = positive('cpu_limit');
  const memoryGiven = positive('memory_mb');
  const memoryLimitGiven = positive('memory_limit_mb');
  for (const name of ['memory_mb', 'memory_limit_mb'] as const) {
    const value = numbers.get(key(name));
    if (value !== undefined && value > config.limits.maxMemoryMb)
      problems.add(
        `${SPEC}.${key(name)}`,
        `must be at most ${config.limits.maxMemoryMb} MiB (render.limits.maxMemoryMb); got ${value}`,
      );
  }
  for (const name of ['cpu', 'cpu_limit'] as const) {
    const value = numbers.get(key(name));
    if (value !== undefined && value > 0 && cpuMillis(value) === 0)
      problems.add(`${SPEC}.${key(name)}`, 'is below one millicore');
  }
  // Only a limit given: the request equals it, as Kubernetes' own defaulting would do.
  const cpu = cpuGiven ?? cpuLimitGiven ?? defaults.cpu;
  const memoryMb = memoryGiven ?? memoryLimitGiven ?? defaults.memoryMb;
  const cpuLimit = cpuLimitGiven ?? (config.limits.cpuWhenOnlyRequest === 'request' ? cpu : undefined);
  const memoryLimitMb =
    memoryLimitGiven ?? (config.limits.memoryWhenOnlyRequest === 'request' ? memoryMb : undefined);
  if (cpuLimit !== undefined && cpuMillis(cpuLimit) < cpuMillis(cpu)) {
    problems.add(`${SPEC}.${key('cpu_limit')}`, `the cpu limit (${cpuLimit}) is below its request (${cpu})`);
  }
  if (memoryLimitMb !== undefined && Math.ceil(memoryLimitMb) < Math.ceil(memoryMb)) {
    problems.add(
      `${SPEC}.${key('memory_limit_mb')}`,
      `the memory limit (${memoryLimitMb}) is below its request (${memoryMb})`,
    );
  }
  return { cpu, cpuLimit, memoryMb, memoryLimitMb };
}

function checkSecrets(
  secrets: readonly Secret[],
  references: readonly SecretReference[],
  ownSecrets: ReadonlySet<string>,
  config: RenderConfig,
  problems: Problems,
): void {
  const seen = new Set<string>();
  secrets.forEach((secret, i) => {
    if (!isEnvVarName(secret.name) || !isSecretKey(secret.name)) {
      problems.add(`secrets[${i}].name`, `${quoted(secret.name)} is not a valid environment variable name`);
    }
    if (seen.has(secret.name)) problems.add(`secrets[${i}].name`, `duplicate name ${excerpt(secret.name)}`);
    seen.add(secret.name);
  });
  references.forEach((reference, i) => {
    if (!isEnvVarName(reference.name)) {
      problems.add(
        `secret_references[${i}].name`,
        `${quoted(reference.name)} is not a valid environment variable name`,
      );
    }
    if (seen.has(reference.name))
      problems.add(`secret_references[${i}].name`, `duplicate name ${excerpt(reference.name)}`);
    seen.add(reference.name);
    // The same policy as every other route to a Secret (referencePolicy.ts), named at this field.
    const refused = isHostname(reference.secret_name)
      ? referenceRefusal('Secret', reference.secret_name, { Secret: ownSecrets }, config)
      : 'is not a valid Secret name';
    if (refused) problems.add(`secret_references[${i}].secret_name`, refused);
    if (!isSecretKey(reference.secret_key))
      problems.add(`secret_references[${i}].secret_key`, 'is not a valid Secret key');
  });
}

/** An environment variable the agent sets, with the setting that names it. */
interface AgentEnv {
  readonly name: string;
  readonly setting: string;
  /** The platform's own: reserved in every container of the deployment, as its control plane does. */
  readonly platform: boolean;
}

/** The variables the agent sets in the application containers of this deployment. */
function agentEnv(config: RenderConfig, database: boolean, kvstore: boolean): AgentEnv[] {
  const { app } = config;
  const list: [string | null, string, boolean][] = [
    [app.roleEnv, 'render.app.roleEnv', false],
    [app.portEnv, 'render.app.portEnv', false],
    [app.deploymentIdEnv, 'render.app.deploymentIdEnv', true],
    [app.revisionIdEnv, 'render.app.revisionIdEnv', true],
    [app.deploymentTypeEnv, 'render.app.deploymentTypeEnv', true],
  ];
  if (database) {
    list.push([config.database.passwordEnv, 'render.database.passwordEnv', false]);
    for (const name of config.database.uriEnvs) list.push([name, 'render.database.uriEnvs', false]);
  }
  if (kvstore) {
    list.push([config.kvstore.passwordEnv, 'render.kvstore.passwordEnv', false]);
    list.push([config.kvstore.uriEnv, 'render.kvstore.uriEnv', false]);
  }
  return list.flatMap(([name, setting, platform]) => (name === null ? [] : [{ name, setting, platform }]));
}

/**
 * A deployment cannot set what the agent sets: its secrets and secret references reach the
 * application containers, where a second value would override the agent's (or make the apply
 * fail on a duplicate). The platform's names are refused in its own containers' `env` too. An
 * `envFrom`'s keys are a Secret's or ConfigMap's, unknown until the pod starts; application
 * containers take none from a deployment, so those keys never reach the agent's variables.
 */
function checkReservedEnv(deployment: Deployment, reserved: readonly AgentEnv[], problems: Problems): void {
  const byName = new Map(reserved.map((env) => [env.name, env]));
  const refuse = (path: string, name: string, where: string) => {
    const env = byName.get(name);
    if (env) problems.add(path, `${name} is set by the agent (${env.setting}) and cannot be ${where}`);
  };
  deployment.secrets.forEach((secret, i) => {
    refuse(`secrets[${i}].name`, secret.name, 'a secret');
  });
  deployment.secret_references?.forEach((reference, i) => {
    refuse(`secret_references[${i}].name`, reference.name, 'a secret reference');
  });
  const spec = deployment.source_config.resource_spec ?? {};
  for (const group of ['init_containers', 'sidecars'] as const) {
    spec[group]?.forEach((container, i) => {
      container.env?.forEach((variable, j) => {
        if (byName.get(variable.name)?.platform)
          refuse(`${SPEC}.${group}[${i}].env[${j}].name`, variable.name, "a container's variable");
      });
    });
  }
}

function checkPodMetadata(spec: ResourceSpec, config: RenderConfig, problems: Problems): void {
  for (const [kind, map] of [
    ['labels', spec.labels],
    ['annotations', spec.annotations],
  ] as const) {
    for (const [key, value] of Object.entries(map ?? {})) {
      const path = `${SPEC}.${kind}.${excerpt(key, { escape: false })}`;
      // Validity first: no policy pattern runs over a key that is not one.
      if (!isQualifiedKey(key)) {
        problems.add(path, `${quoted(key)} is not a valid ${kind === 'labels' ? 'label' : 'annotation'} key`);
        continue;
      }
      if (
        RESERVED_LABEL_PREFIXES.some((prefix) => key.startsWith(prefix)) &&
        (kind === 'labels' || isAgentAnnotation(key))
      ) {
        problems.add(path, 'is reserved for the agent');
      } else {
        const refused = metadataKeyRefusal(key, kind, config);
        if (refused) problems.add(path, refused);
      }
      if (typeof value !== 'string') problems.add(path, 'must be a string');
      else if (kind === 'labels' && !isLabelValue(value)) problems.add(path, 'is not a valid label value');
    }
  }
  const account = spec.service_account_name;
  if (account != null && !isHostname(account)) {
    problems.add(`${SPEC}.service_account_name`, 'is not a valid ServiceAccount name');
  } else if (account != null && !patternList(config.policy.serviceAccounts).matches(account)) {
    // A ServiceAccount is its permissions: only those the platform team lets deployments name.
    problems.add(
      `${SPEC}.service_account_name`,
      `ServiceAccount ${excerpt(account)} is not allowed by render.policy.serviceAccounts (${config.policy.serviceAccounts.join(', ') || 'none'})`,
    );
  }
  spec.image_pull_secrets?.forEach((secret, i) => {
    if (!isHostname(secret.name))
      problems.add(`${SPEC}.image_pull_secrets[${i}].name`, 'is not a valid Secret name');
  });
}

/**
 * Why the platform refuses a pod annotation or label key, or undefined: it must be unprefixed (when
 * `allowUnprefixed`) or match an allow pattern, and match no deny pattern of
 * `render.policy.podAnnotations` / `podLabels`. Case is ignored, so that a key spelt otherwise
 * than its webhook reads it is refused all the same.
 */
function metadataKeyRefusal(
  key: string,
  kind: 'labels' | 'annotations',
  config: RenderConfig,
): string | undefined {
  const setting = kind === 'labels' ? 'podLabels' : 'podAnnotations';
  const { allowUnprefixed, allow, deny } = config.policy[setting];
  const denied = patternList(deny, { ignoreCase: true }).find(key);
  if (denied !== undefined)
    return `${kind === 'labels' ? 'label' : 'annotation'} ${excerpt(key)} is refused by render.policy.${setting}.deny (${denied}): it changes what the cluster does to the pod`;
  // Kubernetes leaves a key without a prefix to the pod's owner: components act on keys under
  // their own prefix (`deny`, checked above, holds the exceptions known).
  if (allowUnprefixed && !key.includes('/')) return undefined;
  if (!patternList(allow, { ignoreCase: true }).matches(key))
    return `${kind === 'labels' ? 'label' : 'annotation'} ${excerpt(key)} is not allowed by render.policy.${setting}.allow (${allow.join(', ') || 'none'})`;
  return undefined;
}

/**
 * The projected volume sources a deployment may use, by allow-list: a source added to Kubernetes
 * later (`podCertificate`, `clusterTrustBundle`, …) issues or reads what the platform has not
 * vouched for, so it is refused until listed. `serviceAccountToken` only with
 * `render.policy.serviceAccountTokens`.
 */
const PROJECTED_SOURCES: ReadonlySet<string> = new Set([
  'secret',
  'configMap',
  'downwardAPI',
  'serviceAccountToken',
]);

function checkVolumesAndContainers(spec: ResourceSpec, config: RenderConfig, problems: Problems): void {
  const volumes = new Set<string>();
  spec.volumes?.forEach((volume, i) => {
    if (!isDnsLabel(volume.name))
      problems.add(`${SPEC}.volumes[${i}].name`, `${quoted(volume.name)} is not a valid volume name`);
    if (volumes.has(volume.name))
      problems.add(`${SPEC}.volumes[${i}].name`, `duplicate volume name ${excerpt(volume.name)}`);
    volumes.add(volume.name);
    if (volume.csi != null) {
      // An inline CSI volume mounts whatever its driver's configuration and credentials reach.
      const driver = volume.csi.driver;
      const drivers = config.policy.csiDrivers;
      if (typeof driver !== 'string' || driver === '')
        problems.add(`${SPEC}.volumes[${i}].csi.driver`, 'a CSI driver name is required');
      else if (!patternList(drivers).matches(driver))
        problems.add(
          `${SPEC}.volumes[${i}].csi.driver`,
          `CSI driver ${excerpt(driver)} is not allowed by render.policy.csiDrivers (${drivers.join(', ') || 'none'})`,
        );
    }
    const sources = volume.projected?.sources;
    (Array.isArray(sources) ? sources : []).forEach((source: unknown, j) => {
      const at = `${SPEC}.volumes[${i}].projected.sources[${j}]`;
      for (const key of typeof source === 'object' && source !== null ? Object.keys(source) : []) {
        if (key === 'serviceAccountToken' && !config.policy.serviceAccountTokens)
          problems.add(
            `${at}.serviceAccountToken`,
            'service-account tokens are not allowed by render.policy.serviceAccountTokens',
          );
        else if (!PROJECTED_SOURCES.has(key))
          // A field name is quoted only when it reads as one: the key is tenant input.
          problems.add(
            /^[A-Za-z]{1,64}$/.test(key) ? `${at}.${key}` : at,
            `is not a projected source a deployment may use (${[...PROJECTED_SOURCES].join(', ')})`,
          );
      }
    });
  });
  checkMounts(spec.volume_mounts ?? [], `${SPEC}.volume_mounts`, volumes, problems);

  // The store wait's name is the agent's, whether or not this deployment has stores of it.
  const names = new Set<string>([
    config.app.containerName,
    ...(config.app.waitForStores ? [STORE_WAIT_CONTAINER] : []),
  ]);
  for (const [group, containers] of [
    ['init_containers', spec.init_containers ?? []],
    ['sidecars', spec.sidecars ?? []],
  ] as const) {
    containers.forEach((container, i) => {
      checkContainer(container, `${SPEC}.${group}[${i}]`, names, volumes, problems);
      problems.list.push(
        ...containerResourceProblems(container.resources, `${SPEC}.${group}[${i}]`, config.limits),
      );
    });
  }
}

function checkMounts(
  mounts: readonly VolumeMount[],
  path: string,
  volumes: Set<string>,
  problems: Problems,
): void {
  const paths = new Set<string>();
  mounts.forEach((mount, i) => {
    if (!volumes.has(mount.name))
      problems.add(
        `${path}[${i}].name`,
        `mounts ${excerpt(mount.name)}, which is not a volume of this deployment`,
      );
    if (mount.mountPath === '') problems.add(`${path}[${i}].mountPath`, 'is required');
    if (paths.has(mount.mountPath))
      problems.add(`${path}[${i}].mountPath`, `duplicate mount path ${excerpt(mount.mountPath)}`);
    paths.add(mount.mountPath);
  });
}

function checkContainer(
  container: Container,
  path: string,
  names: Set<string>,
  volumes: Set<string>,
  problems: Problems,
): void {
  if (!isDnsLabel(container.name))
    problems.add(`${path}.name`, `${quoted(container.name)} is not a valid container name`);
  if (names.has(container.name))
    problems.add(`${path}.name`, `duplicate container name ${excerpt(container.name)}`);
  names.add(container.name);
  if (!container.image?.trim()) problems.add(`${path}.image`, 'an image is required');
  const env = new Set<string>();
  container.env?.forEach((variable, j) => {
    if (!isEnvVarName(variable.name))
      problems.add(
        `${path}.env[${j}].name`,
        `${quoted(variable.name)} is not a valid environment variable name`,
      );
    if (env.has(variable.name))
      problems.add(`${path}.env[${j}].name`, `duplicate environment variable ${excerpt(variable.name)}`);
    env.add(variable.name);
  });
  checkMounts(container.volumeMounts ?? [], `${path}.volumeMounts`, volumes, problems);
}

function resolveHost(
  customUrl: string | null | undefined,
  config: RenderConfig,
  problems: Problems,
): string | undefined {
  if (!customUrl) return undefined;
  let host = customUrl.trim().toLowerCase();
  if (host.includes('://')) {
    try {
      host = new URL(host).hostname;
    } catch {
      host = '';
    }
  }
  if (!isHostname(host)) {
    problems.add('source_config.custom_url', 'is not a valid host name or URL');
    return undefined;
  }
  // On a shared ingress controller or Gateway a host is a claim on traffic: only under the
  // platform's domains, whichever kind of route it becomes.
  const suffixes = config.ingress.allowedHostSuffixes;
  if (routeKindOf(config) && !suffixes.some((suffix) => hostUnder(host, suffix))) {
    problems.add(
      'source_config.custom_url',
      suffixes.length === 0
        ? `host ${excerpt(host)} is not allowed: render.ingress.allowedHostSuffixes allows none`
        : `host ${excerpt(host)} is not under an allowed domain (${suffixes.join(', ')})`,
    );
    return undefined;
  }
  return host;
}

/** `app.example.com` is under `example.com` and `.example.com`; `example.com` itself only under the former. */
function hostUnder(host: string, suffix: string): boolean {
  const domain = suffix.toLowerCase().replace(/^\./, '');
  return suffix.startsWith('.')
    ? host.endsWith(`.${domain}`)
    : host === domain || host.endsWith(`.${domain}`);
}
