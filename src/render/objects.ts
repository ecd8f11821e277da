// Builds the Kubernetes objects of a valid render plan (docs/architecture.md, "Render", has the
// table). Everything here is total: validation happened in plan.ts.
import type { Container, VolumeMount } from '../controlplane/schemas/index.ts';
import { kindEnabled } from '../objects/kinds.ts';
import type { KubeObject } from '../objects/kubeObject.ts';
import {
  AGENT_NAME,
  ANNOTATION_CONFIG_CHECKSUM,
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_DEPLOYMENT_NAME,
  ANNOTATION_GENERATED_KEYS,
  ANNOTATION_REVISION_ID,
  ANNOTATION_SPEC_HASH,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_INSTANCE,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
  LABEL_NAME,
} from '../objects/ownership.ts';
import { canonicalHash } from './canonicalHash.ts';
import { type PodDrain, podDrain, runsJobs, scaleDownBehavior, stopHook } from './drain.ts';
import type { AppRole, AppWorkloadPlan, RenderPlan, ResolvedResources } from './plan.ts';
import { cpuQuantity, memoryQuantity, storageQuantity } from './quantities.ts';
import { queueScalerObjects } from './queueScaling.ts';
import type { RenderConfig } from './renderConfig.ts';
import { httpRouteSpec, routeKindOf } from './routes.ts';
import { placementFields, resolvePlacement } from './scheduling.ts';

type Json = Record<string, unknown>;
type Component = AppRole | 'database' | 'kvstore' | 'config' | 'network';

export function buildObjects(plan: RenderPlan, config: RenderConfig, digestKey?: Uint8Array): KubeObject[] {
  const names = objectNames(plan.base);
  const objects: KubeObject[] = [];
  const hasSecrets = plan.secrets.length > 0;

  if (hasSecrets) {
    objects.push(
      object(plan, 'v1', 'Secret', names.secrets, 'config', {
        type: 'Opaque',
        data: Object.fromEntries(
          plan.secrets.map((s) => [s.name, Buffer.from(s.value, 'utf8').toString('base64')]),
        ),
      }),
    );
  }
  if (plan.database) {
    // Created once by the reconciler, which generates the password; never overwritten.
    const credentials = object(plan, 'v1', 'Secret', names.databaseCredentials, 'database', {
      type: 'Opaque',
      stringData: { username: config.database.user, database: config.database.database, password: '' },
    });
    credentials.metadata.annotations[ANNOTATION_CREATE_ONLY] = 'true';
    credentials.metadata.annotations[ANNOTATION_GENERATED_KEYS] = 'password';
    objects.push(credentials);
  }
  if (plan.kvstore) {
    // The store answers only with a password, generated once as the database's is.
    const credentials = object(plan, 'v1', 'Secret', names.kvstoreCredentials, 'kvstore', {
      type: 'Opaque',
      stringData: { password: '' },
    });
    credentials.metadata.annotations[ANNOTATION_CREATE_ONLY] = 'true';
    credentials.metadata.annotations[ANNOTATION_GENERATED_KEYS] = 'password';
    objects.push(credentials);
  }

  objects.push(
    object(plan, 'v1', 'Service', plan.base, 'main', {
      type: 'ClusterIP',
      selector: selectorLabels(plan, 'main'),
      ports: [{ name: 'http', port: config.app.servicePort, targetPort: 'http', protocol: 'TCP' }],
    }),
  );
  if (plan.database) {
    objects.push(
      object(plan, 'v1', 'Service', names.database, 'database', {
        clusterIP: 'None',
        // Its name resolves once its pod has an address, not only once ready: a name looked up
        // before it resolves is cached as absent by the cluster's DNS (CoreDNS: `ttl 30`), and a
        // new deployment's server and store wait would see no database for 30 s after it answers.
        // A connection is refused until PostgreSQL listens, which `wait-for-stores` waits for.
        publishNotReadyAddresses: true,
        selector: selectorLabels(plan, 'database'),
        ports: [{ name: 'postgres', port: config.database.port, targetPort: 'postgres', protocol: 'TCP' }],
      }),
      databaseStatefulSet(plan, config, names),
    );
  }
  if (plan.kvstore) {
    objects.push(
      object(plan, 'v1', 'Service', names.kvstore, 'kvstore', {
        type: 'ClusterIP',
        selector: selectorLabels(plan, 'kvstore'),
        ports: [{ name: 'redis', port: config.kvstore.port, targetPort: 'redis', protocol: 'TCP' }],
      }),
      kvstoreWorkload(plan, config, names),
    );
  }

  const checksum = configChecksum(plan, digestKey);
  for (const workload of plan.workloads) {
    const name = workload.role === 'main' ? plan.base : `${plan.base}-${workload.role}`;
    const jobs = runsJobs(workload.role, hasQueue(plan));
    const drain = podDrain(jobs, plan.runGraceSeconds, config);
    const template = appPodTemplate(plan, workload, config, names, checksum, drain);
    if (workload.role === 'executor' || !workload.scale) {
      objects.push(object(plan, 'v1', 'PodTemplate', name, workload.role, { template }));
      continue;
    }
    const autoscaled = workload.scale.max > workload.scale.min;
    objects.push(
      object(plan, 'apps/v1', 'Deployment', name, workload.role, {
        // With an HPA the replica count is the HPA's: leaving it out of the applied body keeps
        // server-side apply from fighting it.
        ...(autoscaled ? {} : { replicas: workload.scale.min }),
        selector: { matchLabels: selectorLabels(plan, workload.role) },
        revisionHistoryLimit: 5,
        progressDeadlineSeconds: 600,
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
        template,
      }),
    );
    // Queue workers on KEDA scale on the runs that need them, and KEDA makes the HPA itself.
    const onRuns = workload.role === 'queue' ? plan.queueScaler : undefined;
    if (autoscaled && onRuns) {
      objects.push(
        ...queueScalerObjects(
          onRuns,
          {
            namespace: plan.namespace,
            workloadName: name,
            minReplicas: workload.scale.min,
            maxReplicas: workload.scale.max,
            databaseService: names.database,
            databaseCredentials: names.databaseCredentials,
            deploymentSecrets: names.secrets,
            behavior: scaleDownBehavior(config),
            make: (apiVersion, kind, objectName, body) =>
              object(plan, apiVersion, kind, objectName, workload.role, body),
          },
          config,
        ),
      );
    } else if (autoscaled) {
      objects.push(
        object(plan, 'autoscaling/v2', 'HorizontalPodAutoscaler', name, workload.role, {
          scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
          // An HPA cannot scale to zero without a feature gate: min_scale 0 autoscales from 1.
          minReplicas: Math.max(1, workload.scale.min),
          maxReplicas: workload.scale.max,
          metrics: [
            {
              type: 'Resource',
              resource: {
                name: 'cpu',
                target: { type: 'Utilization', averageUtilization: config.autoscaling.targetCpuUtilization },
              },
            },
          ],
          // A pod that runs jobs waits out its runs when taken away: take them one at a time.
          ...(jobs ? { behavior: scaleDownBehavior(config) } : {}),
        }),
      );
    }
    // An eviction takes one pod at a time: a prod API server's, and every deployment's queue
    // workers', whose runs the drain waits for.
    const budget =
      workload.role === 'main'
        ? plan.deploymentType === 'prod' && config.prod.podDisruptionBudget
        : workload.role === 'queue' && config.queue.podDisruptionBudget;
    if (budget) {
      objects.push(
        object(plan, 'policy/v1', 'PodDisruptionBudget', name, workload.role, {
          maxUnavailable: 1,
          selector: { matchLabels: selectorLabels(plan, workload.role) },
        }),
      );
    }
  }

  if (plan.host && config.ingress.className) {
    const ingress = object(plan, 'networking.k8s.io/v1', 'Ingress', plan.base, 'main', {
      ingressClassName: config.ingress.className,
      rules: [
        {
          host: plan.host,
          http: {
            paths: [
              {
                path: '/',
                pathType: 'Prefix',
                backend: { service: { name: plan.base, port: { name: 'http' } } },
              },
            ],
          },
        },
      ],
      ...(config.ingress.tlsSecretName
        ? { tls: [{ hosts: [plan.host], secretName: config.ingress.tlsSecretName }] }
        : {}),
    });
    Object.assign(ingress.metadata.annotations, config.ingress.annotations);
    objects.push(ingress);
  }
  if (plan.host && routeKindOf(config) === 'HTTPRoute') {
    const route = object(
      plan,
      'gateway.networking.k8s.io/v1',
      'HTTPRoute',
      plan.base,
      'main',
      httpRouteSpec(plan.host, plan.pathPrefix, { name: plan.base, port: config.app.servicePort }, config),
    );
    Object.assign(route.metadata.annotations, config.gateway.annotations);
    objects.push(route);
  }

  if (kindEnabled('NetworkPolicy', config)) objects.push(...networkPolicies(plan, config));

  for (const item of objects)
    item.metadata.annotations[ANNOTATION_SPEC_HASH] = canonicalHash(item, digestKey);
  return objects;
}

const DATA_COMPONENTS = ['database', 'kvstore'];

/**
 * The deployment's network fence: its database and key-value store accept only its own pods; its
 * application workloads accept its own pods, the ingress controller's and the sources the platform
 * team names. Egress is left open (DNS, the control plane's model APIs): ingress is the fence.
 */
function networkPolicies(plan: RenderPlan, config: RenderConfig): KubeObject[] {
  const own = { podSelector: { matchLabels: { [LABEL_DEPLOYMENT_ID]: plan.deploymentId } } };
  const pods = (operator: 'In' | 'NotIn') => ({
    matchLabels: { [LABEL_DEPLOYMENT_ID]: plan.deploymentId },
    matchExpressions: [{ key: LABEL_COMPONENT, operator, values: DATA_COMPONENTS }],
  });
  const { ingressControllerNamespace, allowFrom } = config.networkPolicy;
  const app = object(plan, 'networking.k8s.io/v1', 'NetworkPolicy', plan.base, 'network', {
    podSelector: pods('NotIn'),
    policyTypes: ['Ingress'],
    ingress: [
      {
        from: [
          own,
          ...(ingressControllerNamespace
            ? [
                {
                  namespaceSelector: {
                    matchLabels: { 'kubernetes.io/metadata.name': ingressControllerNamespace },
                  },
                },
              ]
            : []),
          ...allowFrom,
        ],
      },
    ],
  });
  if (!plan.database && !plan.kvstore) return [app];
  // KEDA's operator counts the runs of a queue scaled on them: the database's port, and no more.
  const keda =
    plan.database && plan.queueScaler?.connection.kind === 'generated'
      ? config.autoscaling.keda.operatorNamespace
      : undefined;
  const data = object(plan, 'networking.k8s.io/v1', 'NetworkPolicy', `${plan.base}-data`, 'network', {
    podSelector: pods('In'),
    policyTypes: ['Ingress'],
    ingress: [
      { from: [own] },
      ...(keda
        ? [
            {
              from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': keda } } }],
              ports: [{ protocol: 'TCP', port: config.database.port }],
            },
          ]
        : []),
    ],
  });
  return [app, data];
}

export interface ObjectNames {
  readonly secrets: string;
  readonly database: string;
  readonly databaseCredentials: string;
  readonly kvstore: string;
  readonly kvstoreCredentials: string;
}

export function objectNames(base: string): ObjectNames {
  return {
    secrets: `${base}-secrets`,
    database: `${base}-db`,
    databaseCredentials: `${base}-db-credentials`,
    kvstore: `${base}-kvstore`,
    kvstoreCredentials: `${base}-kvstore-credentials`,
  };
}

export function commonLabels(plan: RenderPlan, component: Component): Record<string, string> {
  return {
    [LABEL_NAME]: plan.base,
    [LABEL_INSTANCE]: plan.base,
    [LABEL_COMPONENT]: component,
    [LABEL_MANAGED_BY]: AGENT_NAME,
    [LABEL_LISTENER_ID]: plan.listenerId,
    [LABEL_DEPLOYMENT_ID]: plan.deploymentId,
  };
}

/** Immutable once created (a Deployment's selector cannot change), so only stable identity. */
function selectorLabels(plan: RenderPlan, component: Component): Record<string, string> {
  return {
    [LABEL_INSTANCE]: plan.base,
    [LABEL_COMPONENT]: component,
    [LABEL_DEPLOYMENT_ID]: plan.deploymentId,
  };
}

function object(
  plan: RenderPlan,
  apiVersion: string,
  kind: string,
  name: string,
  component: Component,
  body: Json,
): KubeObject {
  const annotations: Record<string, string> = { [ANNOTATION_DEPLOYMENT_NAME]: plan.deploymentName };
  if (plan.revisionId) annotations[ANNOTATION_REVISION_ID] = plan.revisionId;
  const specKey = kind === 'Secret' || kind === 'PodTemplate' ? undefined : 'spec';
  return {
    apiVersion,
    kind,
    metadata: { name, namespace: plan.namespace, labels: commonLabels(plan, component), annotations },
    ...(specKey ? { [specKey]: body } : body),
  };
}

const EPHEMERAL_STORAGE = 'ephemeral-storage';

/** Requests and limits of a container the agent defines itself (application, database, store). */
function resources(resolved: ResolvedResources, config: RenderConfig): Json {
  const limits: Json = {};
  if (resolved.cpuLimit !== undefined) limits.cpu = cpuQuantity(resolved.cpuLimit);
  if (resolved.memoryLimitMb !== undefined) limits.memory = memoryQuantity(resolved.memoryLimitMb);
  limits[EPHEMERAL_STORAGE] = memoryQuantity(config.limits.ephemeralStorageMb);
  return {
    requests: {
      cpu: cpuQuantity(resolved.cpu),
      memory: memoryQuantity(resolved.memoryMb),
      [EPHEMERAL_STORAGE]: memoryQuantity(config.limits.ephemeralStorageRequestMb),
    },
    limits,
  };
}

function containerHardening(config: RenderConfig): Json {
  const h = config.hardening;
  return {
    allowPrivilegeEscalation: h.allowPrivilegeEscalation,
    ...(h.dropAllCapabilities ? { capabilities: { drop: ['ALL'] } } : {}),
    ...(h.readOnlyRootFilesystem ? { readOnlyRootFilesystem: true } : {}),
  };
}

function podHardening(config: RenderConfig, runAs?: number): Json {
  const h = config.hardening;
  return {
    ...(h.runAsNonRoot ? { runAsNonRoot: true } : {}),
    ...(runAs === undefined ? {} : { runAsUser: runAs, runAsGroup: runAs, fsGroup: runAs }),
    ...(h.seccompRuntimeDefault ? { seccompProfile: { type: 'RuntimeDefault' } } : {}),
  };
}

function mounts(list: readonly VolumeMount[] | null | undefined): Json[] | undefined {
  if (!list?.length) return undefined;
  return list.map((m) => compact({ ...m }));
}

/** Drops null and undefined fields: the interface sends null for "not set". */
function compact<T extends Json>(value: T): Json {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined));
}

function userContainer(container: Container, config: RenderConfig): Json {
  return compact({
    name: container.name,
    image: container.image,
    imagePullPolicy: container.imagePullPolicy,
    workingDir: container.workingDir,
    restartPolicy: container.restartPolicy,
    command: container.command,
    args: container.args,
    env: container.env?.map((e) => compact({ ...e })),
    envFrom: container.envFrom,
    resources: extraContainerResources(container.resources, config),
    volumeMounts: mounts(container.volumeMounts),
    // The user's settings win over the hardening defaults; the policy was checked in plan.ts.
    securityContext: { ...containerHardening(config), ...(container.securityContext ?? {}) },
  });
}

/**
 * A sidecar's or init container's own requests and limits, what is missing filled from the
 * config by the rules of the agent's own containers: a request where neither is given, and a limit
 * where only a request is (memory and cpu as `render.limits` says; ephemeral storage always). A
 * limit without a request is left so: the API server takes the limit as the request.
 */
function extraContainerResources(given: Container['resources'], config: RenderConfig): Json {
  const requests: Json = { ...(given?.requests ?? {}) };
  const limits: Json = { ...(given?.limits ?? {}) };
  const defaults = config.extraContainers;
  const fill = (resource: string, request: string, limitFollows: boolean, defaultLimit?: string) => {
    if (limits[resource] != null) return;
    requests[resource] ??= request;
    if (limitFollows) limits[resource] = given?.requests?.[resource] ?? defaultLimit ?? requests[resource];
  };
  fill('cpu', cpuQuantity(defaults.cpu), config.limits.cpuWhenOnlyRequest === 'request');
  fill('memory', memoryQuantity(defaults.memoryMb), config.limits.memoryWhenOnlyRequest === 'request');
  fill(
    EPHEMERAL_STORAGE,
    memoryQuantity(config.limits.ephemeralStorageRequestMb),
    true,
    memoryQuantity(config.limits.ephemeralStorageMb),
  );
  return compact({ ...(given ?? {}), requests, limits });
}

/** True when the deployment has queue workers: the main workload then runs no jobs itself. */
function hasQueue(plan: RenderPlan): boolean {
  return plan.workloads.some((workload) => workload.role === 'queue');
}

/**
 * The LangGraph server's environment, then the deployment's secrets, then the data stores'. The
 * revision id changes with every revision, as the pod template's revision annotation already
 * does: a new revision rolls every application pod either way.
 */
function appEnv(
  plan: RenderPlan,
  role: AppRole,
  config: RenderConfig,
  names: ObjectNames,
  drain: PodDrain,
): Json[] {
  const { app } = config;
  const env: Json[] = [{ name: app.roleEnv, value: role }];
  const set = (name: string | null, value: string | undefined) => {
    if (name !== null && value !== undefined) env.push({ name, value });
  };
  set(app.portEnv, String(app.containerPort));
  set(app.deploymentIdEnv, plan.deploymentId);
  set(app.revisionIdEnv, plan.revisionId);
  set(app.deploymentTypeEnv, plan.deploymentType);
  // With queue workers the API server takes no runs; the deployment's own value is theirs.
  const jobsEnv = role === 'main' && hasQueue(plan) ? config.queue.jobsPerWorkerEnv : null;
  set(jobsEnv, '0');
  // Queue workers scaled on runs take as many at once as KEDA's target counts for each.
  if (role === 'queue' && plan.queueScaler?.setsJobsEnv)
    set(config.queue.jobsPerWorkerEnv, String(plan.queueScaler.jobsPerWorker));
  // The wait the pod's grace was made for; the deployment's own value, if any, is in it.
  set(app.runGraceEnv, String(drain.runGraceSeconds));
  for (const secret of plan.secrets) {
    if (secret.name === jobsEnv || secret.name === app.runGraceEnv) continue;
    env.push({ name: secret.name, valueFrom: { secretKeyRef: { name: names.secrets, key: secret.name } } });
  }
  for (const reference of plan.secretReferences) {
    if (reference.name === jobsEnv) continue;
    env.push({
      name: reference.name,
      valueFrom: { secretKeyRef: { name: reference.secret_name, key: reference.secret_key } },
    });
  }
  // A store the deployment brings under another name reaches the server under the names it reads.
  for (const store of [plan.brought.database, plan.brought.kvstore]) {
    if (!store) continue;
    const reference = plan.secretReferences.find((r) => r.name === store.from);
    const source = reference
      ? { name: reference.secret_name, key: reference.secret_key }
      : { name: names.secrets, key: store.from };
    for (const name of store.to) env.push({ name, valueFrom: { secretKeyRef: { ...source } } });
  }
  if (plan.database) {
    const db = config.database;
    env.push({
      name: db.passwordEnv,
      valueFrom: { secretKeyRef: { name: names.databaseCredentials, key: 'password' } },
    });
    // $(VAR) expansion keeps the password out of the pod spec.
    const uri = `postgresql://${db.user}:$(${db.passwordEnv})@${names.database}.${plan.namespace}.svc:${db.port}/${db.database}`;
    for (const name of db.uriEnvs) env.push({ name, value: uri });
  }
  if (plan.kvstore) {
    const kv = config.kvstore;
    env.push({
      name: kv.passwordEnv,
      valueFrom: { secretKeyRef: { name: names.kvstoreCredentials, key: 'password' } },
    });
    env.push({
      name: kv.uriEnv,
      value: `redis://:$(${kv.passwordEnv})@${names.kvstore}.${plan.namespace}.svc:${kv.port}/0`,
    });
  }
  return env;
}

function appPodTemplate(
  plan: RenderPlan,
  workload: AppWorkloadPlan,
  config: RenderConfig,
  names: ObjectNames,
  checksum: string,
  drain: PodDrain,
): Json {
  const spec = plan.spec;
  // The main container serves the API; a queue worker serves only `/ok` and `/metrics` on the
  // same port, which no Service selects. Orchestrators and executors keep the image's defaults.
  const probes = workload.role === 'main' ? config.app : workload.role === 'queue' ? config.queue : undefined;
  const app = compact({
    name: config.app.containerName,
    image: plan.image,
    command: workload.role === 'queue' && config.queue.command ? [...config.queue.command] : undefined,
    env: appEnv(plan, workload.role, config, names, drain),
    ports: probes ? [{ name: 'http', containerPort: config.app.containerPort, protocol: 'TCP' }] : undefined,
    readinessProbe: probes?.readinessProbe ? structuredClone(probes.readinessProbe) : undefined,
    livenessProbe: probes?.livenessProbe ? structuredClone(probes.livenessProbe) : undefined,
    startupProbe: probes?.startupProbe ? structuredClone(probes.startupProbe) : undefined,
    // Kept serving until the Service has dropped the pod from its endpoints: the server stops
    // accepting on SIGTERM, and a request routed to it meanwhile would be refused.
    // A pod that runs jobs then waits for its runs: the server may cut them at SIGTERM.
    lifecycle: stopHook(drain, workload.role === 'main' ? config.app.preStopSleepSeconds : 0, config),
    resources: resources(workload.resources, config),
    volumeMounts: mounts(spec.volume_mounts),
    securityContext: containerHardening(config),
  });
  const annotations: Record<string, string> = {};
  for (const [key, value] of Object.entries(spec.annotations ?? {})) annotations[key] = String(value);
  if (plan.revisionId) annotations[ANNOTATION_REVISION_ID] = plan.revisionId;
  annotations[ANNOTATION_CONFIG_CHECKSUM] = checksum;
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(spec.labels ?? {})) labels[key] = String(value);
  Object.assign(labels, commonLabels(plan, workload.role));
  const placement = resolvePlacement(config.scheduling, 'apps', plan.deploymentType, plan.namespace);
  // The platform's own spread constraints, when it sets them, replace the built-in one.
  const spread =
    placement.topologySpreadConstraints === undefined &&
    plan.deploymentType === 'prod' &&
    config.prod.topologySpread &&
    workload.role !== 'executor'
      ? ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'].map((topologyKey) => ({
          maxSkew: 1,
          topologyKey,
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: selectorLabels(plan, workload.role) },
        }))
      : undefined;
  return {
    metadata: { labels, annotations },
    spec: compact({
      serviceAccountName: spec.service_account_name,
      // A named ServiceAccount's token only when the policy allows tokens.
      automountServiceAccountToken: spec.service_account_name
        ? config.policy.serviceAccountTokens
        : config.hardening.automountServiceAccountToken,
      imagePullSecrets: spec.image_pull_secrets?.length ? spec.image_pull_secrets : undefined,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: drain.terminationGracePeriodSeconds,
      securityContext: podHardening(config),
      topologySpreadConstraints: spread,
      ...placementFields(placement, selectorLabels(plan, workload.role)),
      initContainers: initContainers(plan, workload, config, names),
      containers: [app, ...(spec.sidecars ?? []).map((c) => userContainer(c, config))],
      volumes: spec.volumes?.length ? spec.volumes.map((v) => compact({ ...v })) : undefined,
    }),
  };
}

/** The init container that waits for the stores (`render.app.waitForStores`). */
export const STORE_WAIT_CONTAINER = 'wait-for-stores';

// Until each `host:port` argument accepts a connection, in order: Redis's Service (a cluster IP)
// refuses until its pod is ready; the database's name resolves once its pod has an address, and
// it refuses until PostgreSQL listens. A line every 10 s says what it waits for; the timeout
// keeps a Service that drops packets from hanging it.
const STORE_WAIT_SCRIPT = `import socket, sys, time
said = 0.0
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            break
        except OSError as error:
            if time.monotonic() - said >= 10:
                print(f"waiting for {target}: {error}", flush=True)
                said = time.monotonic()
            time.sleep(0.25)
`;

/**
 * The pod's init containers: first the wait for the stores the agent provisions (a server started
 * before them would exit and back off), then the deployment's own. Stores it brings are not waited
 * for: the agent does not run them, and nothing tells when they answer. Executors neither: their
 * pods are made for runs, once the stores answer, and each would start later for it.
 */
function initContainers(
  plan: RenderPlan,
  workload: AppWorkloadPlan,
  config: RenderConfig,
  names: ObjectNames,
): Json[] | undefined {
  // Redis first: its name always resolves, and by the time it answers the database's pod has an
  // address, so the database's name is not looked up (and cached as absent) before it has one.
  const targets = [
    plan.kvstore ? `${names.kvstore}.${plan.namespace}.svc:${config.kvstore.port}` : undefined,
    plan.database ? `${names.database}.${plan.namespace}.svc:${config.database.port}` : undefined,
  ].filter((target) => target !== undefined);
  const wait =
    config.app.waitForStores && targets.length > 0 && workload.role !== 'executor'
      ? [
          {
            name: STORE_WAIT_CONTAINER,
            image: plan.image,
            command: ['python3', '-c', STORE_WAIT_SCRIPT, ...targets],
            env: [{ name: 'PYTHONDONTWRITEBYTECODE', value: '1' }],
            // The main container's: the pod's requests are the larger of the two, so unchanged.
            resources: resources(workload.resources, config),
            securityContext: containerHardening(config),
          },
        ]
      : [];
  const all = [...wait, ...(plan.spec.init_containers ?? []).map((c) => userContainer(c, config))];
  return all.length > 0 ? all : undefined;
}

/** Where the platform puts the deployment's database or key-value store (`render.scheduling`). */
function storePlacement(plan: RenderPlan, config: RenderConfig, component: 'database' | 'kvstore'): Json {
  const placement = resolvePlacement(config.scheduling, 'stores', plan.deploymentType, plan.namespace);
  return placementFields(placement, selectorLabels(plan, component));
}

function databaseStatefulSet(plan: RenderPlan, config: RenderConfig, names: ObjectNames): KubeObject {
  const db = config.database;
  const database = plan.database;
  const fromSecret = (key: string) => ({ secretKeyRef: { name: names.databaseCredentials, key } });
  const labels = commonLabels(plan, 'database');
  return object(plan, 'apps/v1', 'StatefulSet', names.database, 'database', {
    serviceName: names.database,
    replicas: 1,
    selector: { matchLabels: selectorLabels(plan, 'database') },
    persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
    template: {
      metadata: { labels },
      spec: {
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        securityContext: podHardening(config, db.runAsUser),
        ...storePlacement(plan, config, 'database'),
        containers: [
          compact({
            name: 'postgres',
            image: db.image,
            args: database?.maxConnections ? ['-c', `max_connections=${database.maxConnections}`] : undefined,
            env: [
              { name: 'POSTGRES_USER', valueFrom: fromSecret('username') },
              { name: 'POSTGRES_DB', valueFrom: fromSecret('database') },
              { name: 'POSTGRES_PASSWORD', valueFrom: fromSecret('password') },
              { name: 'PGDATA', value: '/var/lib/postgresql/data/pgdata' },
            ],
            ports: [{ name: 'postgres', containerPort: db.port, protocol: 'TCP' }],
            readinessProbe: {
              exec: { command: ['pg_isready', '-U', db.user, '-d', db.database] },
              periodSeconds: 5,
            },
            resources: database ? resources(database.resources, config) : undefined,
            volumeMounts: [{ name: 'data', mountPath: '/var/lib/postgresql/data' }],
            securityContext: containerHardening(config),
          }),
        ],
      },
    },
    volumeClaimTemplates: [
      {
        metadata: { name: 'data', labels },
        spec: compact({
          accessModes: ['ReadWriteOnce'],
          storageClassName: db.storageClassName,
          resources: { requests: { storage: storageQuantity(database?.storageGi ?? db.defaults.storageGi) } },
        }),
      },
    ],
  });
}

function kvstoreWorkload(plan: RenderPlan, config: RenderConfig, names: ObjectNames): KubeObject {
  const kv = config.kvstore;
  const name = names.kvstore;
  const template = {
    metadata: { labels: commonLabels(plan, 'kvstore') },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: podHardening(config, kv.runAsUser),
      ...storePlacement(plan, config, 'kvstore'),
      containers: [
        compact({
          name: 'redis',
          image: kv.image,
          // A cache: no snapshots, no append-only file; a password ($(VAR): kept out of the spec).
          args: ['--save', '', '--appendonly', 'no', '--requirepass', '$(REDIS_PASSWORD)'],
          env: [
            {
              name: 'REDIS_PASSWORD',
              valueFrom: { secretKeyRef: { name: names.kvstoreCredentials, key: 'password' } },
            },
          ],
          ports: [{ name: 'redis', containerPort: kv.port, protocol: 'TCP' }],
          readinessProbe: {
            exec: { command: ['sh', '-c', 'REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli ping'] },
            periodSeconds: 5,
          },
          resources: plan.kvstore ? resources(plan.kvstore.resources, config) : undefined,
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
          securityContext: containerHardening(config),
        }),
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  };
  const selector = { matchLabels: selectorLabels(plan, 'kvstore') };
  return kv.kind === 'StatefulSet'
    ? object(plan, 'apps/v1', 'StatefulSet', name, 'kvstore', {
        serviceName: name,
        replicas: 1,
        selector,
        template,
      })
    : object(plan, 'apps/v1', 'Deployment', name, 'kvstore', { replicas: 1, selector, template });
}

/** A one-way hash of what the pods read from Secrets this agent writes: changes roll the pods. */
function configChecksum(plan: RenderPlan, digestKey: Uint8Array | undefined): string {
  return canonicalHash(
    plan.secrets.map((s) => [s.name, s.value]),
    digestKey,
  );
}
