// The render part of the agent configuration: every default a platform team may want to change,
// with values that work out of the box (`RenderConfig.parse({})`). Each key's description is the
// text of the generated configuration reference (docs/configuration.md).
import { z } from 'zod';
import { SchedulingConfig } from './scheduling.ts';

const Resources = z.strictObject({
  cpu: z.number().positive().describe('cores'),
  memoryMb: z.number().positive().describe('MiB'),
});

const FreeForm = z.record(z.string(), z.unknown());

/** An environment variable name the agent sets, or null for none. */
const EnvName = z.string().min(1).nullable();

// LangGraph servers (the API and the queue entrypoint alike) answer `GET /ok` on `$PORT`.
const OK_READINESS = { httpGet: { path: '/ok', port: 'http' }, periodSeconds: 10, timeoutSeconds: 5 };
// Every second from the container's start until the server first answers, so that its pod is
// ready within a second of it (the kubelet runs the readiness probe at once when this one passes;
// the readiness probe's own period would leave up to 10 s). Five minutes for a first start that
// runs the server's database migrations; liveness waits for it.
const OK_STARTUP = {
  httpGet: { path: '/ok', port: 'http' },
  periodSeconds: 1,
  timeoutSeconds: 1,
  failureThreshold: 300,
};
// A first start runs the server's database migrations: 30 s before the first try, then six
// misses 15 s apart, so a pod is restarted only after some two minutes without an answer.
const OK_LIVENESS = {
  httpGet: { path: '/ok', port: 'http' },
  initialDelaySeconds: 30,
  periodSeconds: 15,
  timeoutSeconds: 5,
  failureThreshold: 6,
};

/**
 * Pod annotation and label keys by which the cluster, not the pod, changes: which networks it is
 * attached to, whether a mesh proxy (and its mTLS and policies) sees its traffic, which credentials
 * or identity a webhook or node agent gives it, what code an operator injects into it, whether the
 * platform's autoscalers may drain its node, what the platform's agents run or collect for it. A
 * deployment that sets one steps around what the platform team runs. The default allow-lists take
 * none of these but the unprefixed `aadpodidbinding`; the deny list refuses them all, on a
 * platform that widens an allow-list too.
 */
export const CLUSTER_BEHAVIOUR_KEYS = [
  // Network attachment: interfaces and addresses no NetworkPolicy covers.
  'k8s.v1.cni.cncf.io/*',
  'v1.multus-cni.io/*',
  'cni.projectcalico.org/*',
  'k8s.ovn.org/*',
  'ovn.kubernetes.io/*',
  'cilium.io/*',
  '*.cilium.io/*',
  'networking.gke.io/*',
  'vpc.amazonaws.com/*',
  // Service-mesh injection and traffic capture.
  'istio.io/*',
  '*.istio.io/*',
  'linkerd.io/*',
  '*.linkerd.io/*',
  'consul.hashicorp.com/*',
  'kuma.io/*',
  '*.kuma.io/*',
  'openservicemesh.io/*',
  'appmesh.k8s.aws/*',
  'dapr.io/*',
  // Secret and identity injection: a role, a workload identity or a secret store's credentials.
  'vault.hashicorp.com/*',
  'vault.security.banzaicloud.io/*',
  '*agent-inject*',
  'secrets-store.csi.k8s.io/*',
  'akeyless/*',
  'secrets.doppler.com/*',
  'secrets.infisical.com/*',
  'operator.1password.io/*',
  'conjur.org/*',
  'azure.workload.identity/*',
  'aadpodidbinding',
  'aadpodidentity.k8s.io/*',
  'iam.amazonaws.com/*',
  'eks.amazonaws.com/*',
  'iam.gke.io/*',
  'gke-gcsfuse/*',
  'spiffe.io/*',
  // Code and sidecars an operator injects.
  'instrumentation.opentelemetry.io/*',
  'sidecar.opentelemetry.io/*',
  'sidecar.jaegertracing.io/*',
  'admission.datadoghq.com/*',
  // Node draining: whether the platform's autoscalers may evict the pod and remove its node.
  'cluster-autoscaler.kubernetes.io/*',
  'karpenter.sh/*',
  // What the platform's node agents run or collect for the pod: checks, log parsing, exclusion.
  'ad.datadoghq.com/*',
  'fluentbit.io/*',
  'co.elastic.logs/*',
];
/** What the deny list of `render.policy.podAnnotations` refuses by default, for the reference. */
const CLUSTER_BEHAVIOUR_TEXT =
  "network attachments (Multus, Calico, OVN, Cilium, GKE multi-network, AWS security groups for pods: interfaces and addresses no NetworkPolicy covers); service-mesh and runtime sidecars and traffic capture (Istio, Linkerd, Consul, Kuma, Open Service Mesh, App Mesh: out of the mesh, its mTLS and its policies; Dapr: an app id is an identity in its mTLS and access policies); secret and identity injection (Vault, Bank-Vaults, Secrets Store CSI, any `agent-inject`, Akeyless, Doppler, Infisical, 1Password, Conjur; Azure workload identity and AAD Pod Identity, kube2iam and kiam `iam.amazonaws.com/role`, EKS `eks.amazonaws.com/*`, GKE `iam.gke.io/*` and its Cloud Storage FUSE sidecar, SPIRE `spiffe.io/spiffe-id`: a cloud role or workload identity of its choosing); code an operator injects (OpenTelemetry `instrumentation.opentelemetry.io/inject-*`, which may name another namespace's Instrumentation, and `sidecar.opentelemetry.io/inject`; Jaeger; Datadog admission); node draining (`cluster-autoscaler.kubernetes.io/safe-to-evict`, `karpenter.sh/do-not-disrupt`: a pod that pins its node against scale-down); what node agents run or collect for it (Datadog autodiscovery checks, Fluent Bit and Filebeat log parsing and exclusion)";
/**
 * The runs that need a queue worker, in the LangGraph server's PostgreSQL: waiting, or being run
 * (a worker busy with a run is not idle capacity).
 */
export const PENDING_RUNS_QUERY = "SELECT count(*) FROM run WHERE status IN ('pending', 'running')";

/** The prefixes Kubernetes reserves for its own components, which platform policies select by. */
const KUBERNETES_KEYS = ['kubernetes.io/*', '*.kubernetes.io/*', 'k8s.io/*', '*.k8s.io/*'];

function podMetadataPolicy(options: {
  readonly what: 'annotation' | 'label';
  readonly unprefixed: string;
  readonly allow: readonly string[];
  readonly allowDescription: string;
  readonly deny: readonly string[];
  readonly denyDescription: string;
}) {
  const { what } = options;
  return z
    .strictObject({
      allowUnprefixed: z.boolean().default(true).describe(options.unprefixed),
      allow: z
        .array(z.string().min(1))
        .default([...options.allow])
        .describe(
          `Prefixed ${what} keys a deployment may set on its pods (\`resource_spec.${what}s\`), besides the unprefixed ones: a key is taken when it matches an \`allow\` pattern and no \`deny\` pattern (\`*\` is any run of characters, \`/\` included; case is ignored); any other is refused, naming the key. ${options.allowDescription}`,
        ),
      deny: z
        .array(z.string().min(1))
        .default([...options.deny])
        .describe(options.denyDescription),
    })
    .prefault({})
    .describe(
      `Pod ${what}s a deployment may set: by allow-list, so that a key the cluster acts on is taken only when the platform team says so.`,
    );
}

type Json = Record<string, unknown>;
const record = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/**
 * Why a NetworkPolicy peer of `allowFrom` would let a tenant in, or undefined. A pod selector is
 * evaluated in the namespaces the peer's namespace selector picks — without one, the policy's own
 * namespace, where every deployment labels its own pods as it likes. So a peer must pick its
 * namespaces positively (a label they carry): an empty selector, or one of only `NotIn` and
 * `DoesNotExist`, picks the listener's namespaces as well.
 */
function peerProblem(peer: Json): { path: string[]; message: string } | undefined {
  if (peer.ipBlock !== undefined) return undefined;
  const selector = record(peer.namespaceSelector);
  if (!selector)
    return {
      path: [],
      message:
        "a peer without a namespaceSelector selects pods of the deployment's own namespace by labels any deployment there can set on its pods: give the namespace it admits",
    };
  const labels = Object.keys(record(selector.matchLabels) ?? {});
  const expressions = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
  const positive = expressions.some((expression) => {
    const operator = record(expression)?.operator;
    return operator === 'In' || operator === 'Exists';
  });
  if (labels.length === 0 && !positive)
    return {
      path: ['namespaceSelector'],
      message:
        "selects every namespace but those it excludes, the listener's among them, where any deployment can label its pods to match: select the namespaces it admits by a label they carry",
    };
  return undefined;
}

/** The namespaces a peer's namespace selector names by `kubernetes.io/metadata.name`. */
function namedNamespaces(peer: Json): string[] {
  const selector = record(peer.namespaceSelector);
  if (!selector) return [];
  const named: string[] = [];
  const byLabel = record(selector.matchLabels)?.[NAMESPACE_NAME_LABEL];
  if (typeof byLabel === 'string') named.push(byLabel);
  for (const expression of Array.isArray(selector.matchExpressions) ? selector.matchExpressions : []) {
    const { key, operator, values } = record(expression) ?? {};
    if (key === NAMESPACE_NAME_LABEL && operator === 'In' && Array.isArray(values))
      named.push(...values.filter((value): value is string => typeof value === 'string'));
  }
  return named;
}

/**
 * The network settings that would admit the listener's own namespaces — where deployments run and
 * label their pods as they like — as sources of every deployment's application pods.
 */
export function tenantReachableSources(
  config: RenderConfig,
  namespaces: readonly string[],
): { readonly key: string; readonly message: string }[] {
  const tenant = new Set(namespaces);
  const found: { key: string; message: string }[] = [];
  const { ingressControllerNamespace, allowFrom } = config.networkPolicy;
  if (ingressControllerNamespace !== undefined && tenant.has(ingressControllerNamespace))
    found.push({
      key: 'render.networkPolicy.ingressControllerNamespace',
      message: `${ingressControllerNamespace} is one of the agent's namespaces: every deployment's pods there would reach every other's application`,
    });
  const { operatorNamespace } = config.autoscaling.keda;
  if (config.autoscaling.queue === 'keda' && tenant.has(operatorNamespace))
    found.push({
      key: 'render.autoscaling.keda.operatorNamespace',
      message: `${operatorNamespace} is one of the agent's namespaces: every deployment's pods there would reach every other's database`,
    });
  for (const [i, peer] of allowFrom.entries()) {
    const named = namedNamespaces(peer).filter((namespace) => tenant.has(namespace));
    if (named.length > 0)
      found.push({
        key: `render.networkPolicy.allowFrom[${i}].namespaceSelector`,
        message: `admits ${named.join(', ')}, of the agent's namespaces, where any deployment can label its pods to match`,
      });
  }
  return found;
}

/** A Gateway API `ParentReference`: the Gateway (or one of its listeners) a route attaches to. */
const GatewayParentRef = z.strictObject({
  group: z.string().min(1).optional(),
  kind: z.string().min(1).optional(),
  namespace: z.string().min(1).optional(),
  name: z.string().min(1),
  sectionName: z.string().min(1).optional(),
  port: z.number().int().min(1).max(65535).optional(),
});

export const RenderConfig = z
  .strictObject({
    app: z
      .strictObject({
        containerName: z.string().default('app').describe('Name of the application container.'),
        containerPort: z
          .number()
          .int()
          .min(1)
          .max(65535)
          .default(8000)
          .describe('Port the application listens on (`http`).'),
        servicePort: z
          .number()
          .int()
          .min(1)
          .max(65535)
          .default(80)
          .describe("Port of the main workload's Service."),
        roleEnv: z
          .string()
          .default('WORKLOAD_ROLE')
          .describe(
            'Environment variable that tells the one image which role it runs as: main, queue, orchestrator or executor.',
          ),
        portEnv: EnvName.default('PORT').describe(
          'Environment variable that carries `containerPort` to every application container: LangGraph servers and their queue workers listen on `$PORT`. A secret or secret reference of that name is refused. Null: not set.',
        ),
        readinessProbe: FreeForm.nullable()
          .default(OK_READINESS)
          .describe(
            'Readiness probe of the main container (a Kubernetes `Probe`): the LangGraph server answers `GET /ok`. Null for none.',
          ),
        livenessProbe: FreeForm.nullable()
          .default(OK_LIVENESS)
          .describe(
            'Liveness probe of the main container, lenient enough for a first start that runs database migrations. Null for none.',
          ),
        startupProbe: FreeForm.nullable()
          .default(OK_STARTUP)
          .describe(
            "Startup probe of the main container: `GET /ok` every second until the server first answers, so that the pod is ready within a second of the server (the readiness probe's own period would leave up to 10 s); five minutes for a first start that runs database migrations. Null for none.",
          ),
        waitForStores: z
          .boolean()
          .default(true)
          .describe(
            "When the agent provisions the deployment's PostgreSQL or Redis, every application pod but the executors' (made for runs, once the stores answer) first runs an init container (`wait-for-stores`) of the server's own image — `python3`, which every LangGraph server image has — that waits until each answers on its Service. A LangGraph server exits at once when its stores do not answer, and the kubelet restarts it only after a growing back-off (10 s, 20 s, 40 s…): the stores of a new deployment start beside it, and the back-off, not the work, made most of a first deploy's time. The init container has the main container's resources and hardening, so the pod asks for nothing more. False: none (an image without `python3`).",
          ),
        deploymentIdEnv: EnvName.default('LANGSMITH_HOST_PROJECT_ID').describe(
          "Environment variable of every application container with the deployment's id. A deployment that sets it (a secret, a secret reference, a sidecar's or init container's variable) is refused, as the platform reserves it. Null: not set.",
        ),
        revisionIdEnv: EnvName.default('LANGSMITH_HOST_REVISION_ID').describe(
          'Environment variable of every application container with the id of the revision it runs; reserved likewise. Null: not set.',
        ),
        deploymentTypeEnv: EnvName.default('LSD_DEPLOYMENT_TYPE').describe(
          'Environment variable of every application container with the `deployment_type` as rendered: `dev_free`, `dev` or `prod` (`dev_zero` runs as `dev`), the values the LangGraph server reads; reserved likewise. Null: not set.',
        ),
        preStopSleepSeconds: z
          .number()
          .int()
          .min(0)
          .default(5)
          .describe(
            'Seconds the main container keeps serving after its pod is told to stop (a `preStop` sleep), before SIGTERM: while the Service drops it from its endpoints, so that no request of a rollout is routed to a server that has stopped accepting. Part of `terminationGracePeriodSeconds`; 0: none.',
          ),
        terminationGracePeriodSeconds: z
          .number()
          .int()
          .min(0)
          .default(30)
          .describe(
            "Of every application pod, for the part of a stop that is not waiting for runs: the `preStop` sleep, then the server's own exit — once its run grace is over, putting the runs still in flight back for a retry and closing its connections. A pod that runs jobs gets its run grace on top (`runGraceSeconds`); an API server that runs none (with a queue group, `N_JOBS_PER_WORKER=0`) gets this alone.",
          ),
        runGraceSeconds: z
          .number()
          .int()
          .min(0)
          .default(180)
          .describe(
            "Seconds a LangGraph server that runs jobs is given to finish its runs when its pod is told to stop, before they are cut (a cut run is retried by another worker, running again the step it was cut in): the most the drain waits (`runDrain`) and `runGraceEnv` of the pods that run jobs (the queue workers, orchestrators and executors, and the API server when there is no queue group), whose `terminationGracePeriodSeconds` is this plus `render.app.terminationGracePeriodSeconds` — so the kubelet never kills a server still waiting for its runs. A stop of such a pod (a rollout, a scale-down, an eviction, a node drain) can so take up to 210 s by default, and takes only as long as its longest run in flight: a server with no run exits at once. The LangGraph images' own default. A deployment may set its own (`runGraceEnv` in its `secrets`), up to `maxRunGraceSeconds`.",
          ),
        maxRunGraceSeconds: z
          .number()
          .int()
          .min(0)
          .default(600)
          .describe(
            "The most a deployment may ask for as its run grace (`runGraceEnv` in its `secrets`: a whole number of seconds; a larger one, or one from a secret reference, whose value render cannot read, is refused, naming the field). A stopping pod keeps its node's resources and holds up a rollout or a node drain that long. 600: the cluster autoscaler's default `--max-graceful-termination-sec`, past which a node it removes kills the pod anyway. Raise it with that flag for runs longer than ten minutes; the LangGraph server warns above 3600, the grace LangChain's own hosting gives its pods.",
          ),
        runDrain: z
          .boolean()
          .default(true)
          .describe(
            "A `preStop` on the pods that run jobs that waits, at most their run grace, until the server holds no run, before the kubelet sends SIGTERM (after the `preStopSleepSeconds` of an API server that runs jobs). It asks the process itself (`GET 127.0.0.1:$PORT/metrics?format=json`, `workers.active`, served by LangChain's licensed runtime and the in-memory one) or, where the process does not say (the MIT `langgraph-runtime-pg`, which answers that request with an error), the deployment's database (`DATABASE_URI`: runs `running`, all workers') — with the image's own `python`, nothing else. Needed where the server cuts its runs at SIGTERM (the MIT runtime does, whatever `runGraceEnv` says); harmless where it waits (the licensed runtime). The runtimes offer no way to stop taking runs: a worker draining still takes pending runs, and those still in flight when the run grace is over are cut and retried. False: no drain (images without `python`, or servers that wait for their runs themselves).",
          ),
        runGraceEnv: EnvName.default('BG_JOB_SHUTDOWN_GRACE_PERIOD_SECS').describe(
          "Environment variable of every application container with its run grace: `runGraceSeconds` (or the deployment's own) where the pod runs jobs, 0 in an API server that runs none. Null: not set, and a deployment's own value of it is an ordinary variable the agent does not read (for images that are not LangGraph servers); the pods that run jobs still get `runGraceSeconds` on top of their grace.",
        ),
      })
      .refine(
        (app) => app.preStopSleepSeconds < app.terminationGracePeriodSeconds || app.preStopSleepSeconds === 0,
        {
          message: 'must be less than terminationGracePeriodSeconds, which it is part of',
          path: ['preStopSleepSeconds'],
        },
      )
      .refine((app) => app.runGraceSeconds <= app.maxRunGraceSeconds, {
        message: 'must not be above maxRunGraceSeconds, the most a deployment may ask for',
        path: ['runGraceSeconds'],
      })
      .prefault({})
      .describe(
        "The application containers: main, queue, orchestrator and executor, not sidecars or init containers (the deployment's own). The environment variables named here are the agent's: a deployment that sets one is refused — but `runGraceEnv`, which it may set within `maxRunGraceSeconds`.",
      ),
    queue: z
      .strictObject({
        command: z
          .array(z.string().min(1))
          .min(1)
          .nullable()
          .default(['/storage/queue_entrypoint.sh'])
          .describe(
            "Command of the queue workers: the LangGraph server image's queue entrypoint (images older than the script: `[python, -m, langgraph_api.queue_entrypoint]`). Null: the image's own entrypoint.",
          ),
        readinessProbe: FreeForm.nullable()
          .default(OK_READINESS)
          .describe(
            'Readiness probe of the queue workers: the queue entrypoint serves `GET /ok` on `$PORT` (no Service sends them traffic). Null for none.',
          ),
        livenessProbe: FreeForm.nullable()
          .default(OK_LIVENESS)
          .describe('Liveness probe of the queue workers. Null for none.'),
        startupProbe: FreeForm.nullable()
          .default(OK_STARTUP)
          .describe("Startup probe of the queue workers, as the main container's. Null for none."),
        podDisruptionBudget: z
          .boolean()
          .default(true)
          .describe(
            'A PodDisruptionBudget (`maxUnavailable: 1`) for the queue workers of every deployment: an eviction (a node drain, the cluster autoscaler) takes one worker at a time, each waiting for its runs (`render.app.runDrain`), so the deployment keeps workers taking its runs.',
          ),
        jobsPerWorkerEnv: EnvName.default('N_JOBS_PER_WORKER').describe(
          "Set to `0` on the main workload when there are queue workers, so that the API server leaves runs to them. A deployment's own value of it reaches the queue workers only. Null: not set.",
        ),
      })
      .prefault({})
      .describe('The queue workers, rendered for `queue_*` fields.'),
    defaults: z
      .strictObject({
        dev_free: Resources.default({ cpu: 0.1, memoryMb: 256 }).describe(
          'For `deployment_type` `dev_free`.',
        ),
        dev: Resources.default({ cpu: 0.25, memoryMb: 512 }).describe('For `dev` (and `dev_zero`).'),
        prod: Resources.default({ cpu: 0.5, memoryMb: 1024 }).describe('For `prod`.'),
      })
      .prefault({})
      .describe('Requests of a workload whose deployment gives none, by `deployment_type`.'),
    limits: z
      .strictObject({
        memoryWhenOnlyRequest: z
          .enum(['request', 'none'])
          .default('request')
          .describe(
            'Memory limit of a container given only a memory request (or none, and so the default request): the request (memory is not compressible; a higher limit invites OOM kills under pressure). Applied to every container kind: main, queue, orchestrator, executor, sidecars, native sidecars and init containers, database, key-value store. `none` leaves such a container without a memory limit: only for namespaces whose LimitRange gives one.',
          ),
        cpuWhenOnlyRequest: z
          .enum(['request', 'none'])
          .default('none')
          .describe(
            'Cpu limit of a container given only a cpu request, every kind alike: none (cpu limits throttle; requests already reserve the share).',
          ),
        ephemeralStorageMb: z
          .number()
          .positive()
          .default(1024)
          .describe(
            "MiB of ephemeral storage (the container's writable layer, its logs, and the disk-backed `emptyDir` volumes its pod shares) every container may use, of every kind, unless the deployment gives a sidecar or init container its own `ephemeral-storage` limit (or only a request, which is then the limit too): past it, the kubelet evicts the pod rather than let one deployment fill the node's disk.",
          ),
        ephemeralStorageRequestMb: z
          .number()
          .positive()
          .default(64)
          .describe(
            'MiB of ephemeral storage every container requests unless the deployment gives a sidecar or init container its own: what the scheduler reserves on the node (a container given only a limit requests its limit, as Kubernetes defaults it). At most `ephemeralStorageMb`.',
          ),
        maxMemoryMb: z
          .number()
          .positive()
          .default(64 * 1024)
          .describe(
            "MiB of memory at most of any container's request or limit, of every kind: the deployment's `*memory_mb` and `*memory_limit_mb` fields and a sidecar's or init container's `resources`. A larger one is refused, naming the field, as are `null`, `0` and negative ones. The default, 64 GiB, is above what a LangGraph server, its queue workers or a data store of one deployment uses, and below the allocatable memory of the nodes a shared cluster runs on: a pod asking more would hold a whole node or never schedule.",
          ),
        maxEphemeralStorageMb: z
          .number()
          .positive()
          .default(100 * 1024)
          .describe(
            "MiB of ephemeral storage at most of a sidecar's or init container's request or limit (every other container has `ephemeralStorageMb`). A larger one, `null`, `0` or a negative one is refused, naming the field. The default, 100 GiB, is under the root disk of common node images, which the kubelet, the images and every other pod of the node share.",
          ),
      })
      .refine((limits) => limits.ephemeralStorageRequestMb <= limits.ephemeralStorageMb, {
        message: 'must not be above ephemeralStorageMb, the limit it is requested under',
        path: ['ephemeralStorageRequestMb'],
      })
      .refine((limits) => limits.ephemeralStorageMb <= limits.maxEphemeralStorageMb, {
        message: 'must not be above maxEphemeralStorageMb, the most any container may have',
        path: ['ephemeralStorageMb'],
      })
      .prefault({})
      .describe(
        'Limits of every container the agent renders, of every kind: a container never runs without a memory and an ephemeral-storage limit unless this says so.',
      ),
    extraContainers: z
      .strictObject({
        cpu: z.number().positive().default(0.05).describe('cores'),
        memoryMb: z.number().positive().default(64).describe('MiB; the memory limit follows `limits`.'),
      })
      .prefault({})
      .describe(
        'Requests of a sidecar or init container that gives none (or only some), key by key: a namespace with a cpu/memory ResourceQuota rejects a pod any of whose containers has no request.',
      ),
    autoscaling: z
      .strictObject({
        targetCpuUtilization: z
          .number()
          .int()
          .min(1)
          .max(100)
          .default(70)
          .describe('Percent of the cpu request the HorizontalPodAutoscaler aims at.'),
        queue: z
          .enum(['cpu', 'keda'])
          .default('cpu')
          .describe(
            "How queue workers scale when `queue_max_scale` > `queue_min_scale`. `cpu`: a HorizontalPodAutoscaler on cpu, as the other workloads. `keda`: a KEDA ScaledObject on the runs in the deployment's PostgreSQL that need a worker, one worker per `keda.jobsPerWorker` of them, between `queue_min_scale` (0 allowed: KEDA scales to zero and back) and `queue_max_scale`; its TriggerAuthentication reads the connection from the Secret the pods read it from, never with a password in the object. Needs KEDA in the cluster. A deployment without a database KEDA could read keeps the cpu autoscaler.",
          ),
        keda: z
          .strictObject({
            pendingRunsQuery: z
              .string()
              .min(1)
              .default(PENDING_RUNS_QUERY)
              .describe(
                "The PostgreSQL query whose single number KEDA divides by the jobs per worker: the runs that need a worker, waiting (`pending`) or being run (`running`), in the LangGraph server's `run` table. Counting only waiting runs would scale away workers busy with the runs they just took. Servers on the MIT runtime (`langgraph-runtime-pg`) keep runs in `runs`.",
              ),
            jobsPerWorker: z
              .number()
              .int()
              .min(1)
              .default(10)
              .describe(
                "Runs one queue worker takes at once: KEDA's `targetQueryValue`, and `render.queue.jobsPerWorkerEnv` of the queue workers unless the deployment sets its own (a whole number of at least 1 in its `secrets`, which is then the target). Never 0: KEDA cannot aim at no runs per worker.",
              ),
            pollingIntervalSeconds: z
              .number()
              .int()
              .min(1)
              .default(15)
              .describe('Seconds between two counts of the runs.'),
            cooldownPeriodSeconds: z
              .number()
              .int()
              .min(0)
              .default(300)
              .describe('Seconds without runs before KEDA scales a `queue_min_scale` 0 queue to zero.'),
            sslMode: z
              .enum(['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'])
              .default('disable')
              .describe(
                "`sslmode` of KEDA's connection to the database the agent renders, which serves no TLS. A database the deployment brings is reached by its own connection string.",
              ),
            broughtDatabases: z
              .boolean()
              .default(false)
              .describe(
                "Count runs in a database the deployment brings too (`render.database.bringYourOwnNames`), with the connection string its pods read: KEDA's operator then connects, from its own namespace, to whatever address the deployment names — past any egress policy on the deployment's own pods. Off: such a deployment's queue workers scale on cpu, with a note.",
              ),
            operatorNamespace: z
              .string()
              .min(1)
              .default('keda')
              .describe(
                "The namespace KEDA's operator runs in, which counts the runs: the deployment's database admits connections from it to its port, and from no other namespace (`render.networkPolicy`). Never one of the agent's `namespaces`.",
              ),
          })
          .prefault({})
          .describe('The KEDA ScaledObject of `queue: keda`.'),
        scaleDown: z
          .strictObject({
            stabilizationWindowSeconds: z
              .number()
              .int()
              .min(0)
              .max(3600)
              .default(300)
              .describe(
                "Seconds of lower recommendations before the autoscaler takes a pod away: it scales down to the highest of them, so that a lull between two bursts keeps their workers. The HorizontalPodAutoscaler's own default, stated.",
              ),
            podsPerPeriod: z
              .number()
              .int()
              .min(1)
              .default(1)
              .describe(
                "Pods taken away at most per `periodSeconds`. The HorizontalPodAutoscaler's default takes them all at once: every worker of a burst would stop together, each waiting out its runs, and the next burst would find none.",
              ),
            periodSeconds: z
              .number()
              .int()
              .min(1)
              .max(1800)
              .default(60)
              .describe(
                'The period of `podsPerPeriod`: one worker a minute leaves the autoscaler time to see, before the next, whether the runs come back.',
              ),
          })
          .prefault({})
          .describe(
            "How the autoscaler of a workload whose pods run jobs (queue workers on cpu or KEDA — the ScaledObject's `advanced.horizontalPodAutoscalerConfig` — orchestrators, and the API server when there is no queue group) takes pods away (`behavior.scaleDown`): a pod taken away cuts no run, as it waits for its runs (`render.app.runGraceSeconds`), but a burst's workers should not be stopped and started again with each lull. An API server that runs no jobs keeps the Kubernetes default.",
          ),
      })
      .prefault({})
      .describe(
        'HorizontalPodAutoscalers, rendered when `max_scale` > `min_scale` (and KEDA ScaledObjects for queue workers, when `queue` says so).',
      ),
    prod: z
      .strictObject({
        podDisruptionBudget: z
          .boolean()
          .default(true)
          .describe(
            'A PodDisruptionBudget (`maxUnavailable: 1`) for the API server of a `prod` deployment (queue workers: `render.queue.podDisruptionBudget`).',
          ),
        topologySpread: z
          .boolean()
          .default(true)
          .describe(
            "Spread `prod` pods over nodes and zones, unless `render.scheduling` sets the application workloads' own `topologySpreadConstraints`.",
          ),
      })
      .prefault({})
      .describe('What `deployment_type` `prod` adds.'),
    scheduling: SchedulingConfig,
    database: z
      .strictObject({
        image: z.string().default('postgres:17-alpine').describe('PostgreSQL image.'),
        port: z.number().int().default(5432).describe('Its port.'),
        user: z.string().default('app').describe('Database user.'),
        database: z.string().default('app').describe('Database name.'),
        uriEnvs: z
          .array(z.string().min(1))
          .min(1)
          .refine((names) => new Set(names).size === names.length, 'the names must differ')
          .default(['DATABASE_URI', 'POSTGRES_URI'])
          .describe(
            'Environment variables of the application with the connection string, each the same: LangGraph servers read either name.',
          ),
        passwordEnv: z
          .string()
          .default('DATABASE_PASSWORD')
          .describe(
            'Environment variable of the application with the generated password (a `secretKeyRef`).',
          ),
        bringYourOwnNames: z
          .array(z.string())
          .default(['DATABASE_URI', 'POSTGRES_URI', 'POSTGRES_URI_CUSTOM'])
          .describe(
            "A deployment whose secrets or secret references carry one of these names brings its own database: none is rendered, and each of `uriEnvs` it does not set itself is set from the first of these it carries (`POSTGRES_URI_CUSTOM`, LangGraph's name for an external database, reaches the server as `DATABASE_URI` and `POSTGRES_URI`). A deployment that drops its in-cluster database this way loses its StatefulSet; the volume's claim (the StatefulSet retains it) and its credentials Secret stay, so that rendering the database again opens the same data, and go with the deployment only when `reconcile.prune.keepDatabaseVolumes` is false.",
          ),
        provision: z
          .enum(['whenAsked', 'always'])
          .default('whenAsked')
          .describe(
            "`whenAsked`: a database for a deployment that sets a `db_*` field. `always`: for every deployment that does not bring its own, with the defaults below — what a LangGraph server needs to start, and what clients that send an empty resource spec (the LangGraph CLI) expect of the listener's defaults.",
          ),
        storageClassName: z
          .string()
          .optional()
          .describe('Storage class of the database volume; unset: the cluster default.'),
        defaults: z
          .strictObject({
            cpu: z.number().positive().default(0.25).describe('cores, when `db_cpu` is not given'),
            memoryMb: z.number().positive().default(512).describe('MiB, when `db_memory_mb` is not given'),
            storageGi: z.number().positive().default(1).describe('GiB, when `db_storage_gi` is not given'),
          })
          .prefault({})
          .describe('Resources of a database whose deployment gives none.'),
        runAsUser: z.number().int().default(70).describe("The alpine postgres image's postgres user."),
      })
      .prefault({})
      .describe('The PostgreSQL StatefulSet rendered for `db_*` fields.'),
    kvstore: z
      .strictObject({
        image: z.string().default('redis:7-alpine').describe('Redis image.'),
        port: z.number().int().default(6379).describe('Its port.'),
        uriEnv: z
          .string()
          .default('REDIS_URI')
          .describe('Environment variable of the application with the connection string.'),
        passwordEnv: z
          .string()
          .default('REDIS_PASSWORD')
          .describe(
            'Environment variable of the application with the generated password (a `secretKeyRef`).',
          ),
        bringYourOwnNames: z
          .array(z.string())
          .default(['REDIS_URI', 'REDIS_URI_CUSTOM'])
          .describe(
            "A deployment whose secrets or secret references carry one of these names brings its own store: none is rendered, and `uriEnv`, unless it sets it itself, is set from the first of these it carries (`REDIS_URI_CUSTOM`, LangGraph's name for an external Redis, reaches the server as `REDIS_URI`).",
          ),
        provision: z
          .enum(['whenAsked', 'always'])
          .default('whenAsked')
          .describe(
            '`whenAsked`: a store for a deployment that sets a `kvstore_*` field. `always`: for every deployment that does not bring its own (LangGraph servers need one).',
          ),
        kind: z
          .enum(['StatefulSet', 'Deployment'])
          .default('StatefulSet')
          .describe('Workload kind of the store.'),
        defaults: z
          .strictObject({
            cpu: z.number().positive().default(0.1).describe('cores, when `kvstore_cpu` is not given'),
            memoryMb: z
              .number()
              .positive()
              .default(128)
              .describe('MiB, when `kvstore_memory_mb` is not given'),
          })
          .prefault({})
          .describe('Resources of a store whose deployment gives none.'),
        runAsUser: z.number().int().default(999).describe("The redis image's user."),
      })
      .prefault({})
      .describe('The key-value store (Redis) rendered for `kvstore_*` fields.'),
    hardening: z
      .strictObject({
        runAsNonRoot: z.boolean().default(true).describe('Every container runs as a non-root user.'),
        allowPrivilegeEscalation: z.boolean().default(false).describe('Set on every container.'),
        dropAllCapabilities: z.boolean().default(true).describe('Every container drops all capabilities.'),
        seccompRuntimeDefault: z
          .boolean()
          .default(true)
          .describe("The pod's seccomp profile is `RuntimeDefault`."),
        readOnlyRootFilesystem: z
          .boolean()
          .default(false)
          .describe("Every container's root filesystem is read-only."),
        automountServiceAccountToken: z
          .boolean()
          .default(false)
          .describe(
            'Mount a service-account token; the token is mounted only when a deployment names its service account.',
          ),
      })
      .prefault({})
      .describe('Security settings of every rendered pod and container.'),
    policy: z
      .strictObject({
        serviceAccounts: z
          .array(z.string().min(1))
          .default([])
          .describe(
            "ServiceAccounts a deployment may name in `service_account_name` (names, or patterns where `*` is any run of characters). Empty: none. The agent's own namespace is never managed, so its ServiceAccount can never be named.",
          ),
        secretReferences: z
          .array(z.string().min(1))
          .default(['*'])
          .describe(
            "Secrets a deployment's pods may name (names or `*` patterns), by every route a pod names one: `secret_references`, a sidecar's or init container's `env` (`secretKeyRef`) and `envFrom`, `secret` volumes and projected `secret` sources, a CSI volume's `nodePublishSecretRef`, `image_pull_secrets`. The Secrets the agent generates for the deployment itself are always its own; the Ingress TLS Secret (`render.ingress.tlsSecretName`) and the agent's digest-key Secret never, whatever this says; nor a Secret the agent manages for another deployment.",
          ),
        configMapReferences: z
          .array(z.string().min(1))
          .default(['*'])
          .describe(
            "ConfigMaps a deployment's pods may name (names or `*` patterns), by every route a pod names one: a sidecar's or init container's `env` (`configMapKeyRef`) and `envFrom`, `configMap` volumes and projected `configMap` sources. Any by default, as Secrets: what the platform team made in a deployment's namespace is there for it, and no list keeps a deployment from another's objects — a ConfigMap the agent manages for another deployment, or keeps for itself, is refused whatever this says. ConfigMaps the agent makes for the deployment itself are always its own. Narrow it to the platform's shared ones (a CA bundle, `kube-root-ca.crt`) where the namespace holds ConfigMaps that are not every deployment's to read.",
          ),
        claimReferences: z
          .array(z.string().min(1))
          .default(['*'])
          .describe(
            "PersistentVolumeClaims a deployment's pods may name in a `persistentVolumeClaim` volume (names or `*` patterns). Any by default, as Secrets: a claim the agent manages for another deployment (a database volume, kept or not) is refused whatever this says. The claims the deployment's own StatefulSets bind are always its own. Narrow it to the volumes the platform team made for deployments to share where the namespace holds others.",
          ),
        serviceAccountTokens: z
          .boolean()
          .default(false)
          .describe(
            'Mount the token of a named ServiceAccount, and allow projected serviceAccountToken volumes. Off: no deployment gets a token.',
          ),
        podAnnotations: podMetadataPolicy({
          what: 'annotation',
          unprefixed:
            "Take every annotation key without a prefix (`owner`, `runbook`, `team`). Kubernetes leaves unprefixed keys to the pod's owner: a component that acts on a pod reads keys under its own prefix. `deny` still applies. Off: only the keys `allow` takes.",
          allow: ['kubectl.kubernetes.io/default-container'],
          allowDescription:
            "The default: `kubectl.kubernetes.io/default-container`, read by kubectl alone (the container `logs`, `exec` and `attach` pick when none is named): the cluster does nothing with it. Widen it only with families your cluster leaves harmless: a domain of your tenants' own (`apps.example.com/*`); `prometheus.io/*` where the platform's Prometheus may scrape tenant pods at the port and path they name (its load and series count then follow the tenants'); `*` for every key `deny` does not refuse.",
          deny: CLUSTER_BEHAVIOUR_KEYS,
          denyDescription: `Annotation keys refused even when \`allow\` takes them (or \`allowUnprefixed\`), so that widening \`allow\` keeps them out. The default: the keys by which the cluster itself treats a pod otherwise — ${CLUSTER_BEHAVIOUR_TEXT}. Setting it replaces the whole list.`,
        }),
        podLabels: podMetadataPolicy({
          what: 'label',
          unprefixed:
            "Take every label key without a prefix (`team`, `tier`, `version`). Kubernetes leaves unprefixed keys to the pod's owner, and controllers select by keys under their own prefix; `deny` keeps the exception it knows (AAD Pod Identity's `aadpodidbinding`). A platform object that selects a tenant namespace's pods by an unprefixed label (a NetworkPolicy, a mesh's authorization policy, an EKS Fargate profile) would be satisfied by a deployment's own labels: add that key to `deny`. Off: only the keys `allow` takes.",
          allow: [],
          allowDescription:
            "The default: none. A prefixed label is a controller's or a policy's to select pods by (a mesh, an identity webhook, an autoscaler). Widen it only with families your cluster leaves harmless, such as a domain of your tenants' own (`apps.example.com/*`).",
          deny: [...CLUSTER_BEHAVIOUR_KEYS, ...KUBERNETES_KEYS],
          denyDescription:
            "Label keys refused even when `allow` takes them (or `allowUnprefixed`). The default: those of `podAnnotations.deny` (meshes, injectors and agents read labels too), and the prefixes Kubernetes reserves for its own components (`kubernetes.io/`, `k8s.io/` and their subdomains), by which platform policies select pods. The agent's own labels are refused whatever this says. Setting it replaces the whole list.",
        }),
        csiDrivers: z
          .array(z.string().min(1))
          .default([])
          .describe(
            "CSI drivers a deployment may name in an inline `csi` volume (names or `*` patterns). Empty: inline CSI volumes are refused — a driver mounts what its own configuration and credentials reach, which is the platform team's to vouch for.",
          ),
        podSecurity: z
          .enum(['restricted', 'baseline'])
          .default('restricted')
          .describe(
            'The Pod Security Standard every rendered pod must meet: a deployment asking for more (a security context, volume type, mount or annotation the level forbids) is refused, naming each field.',
          ),
      })
      .prefault({})
      .describe(
        'What a deployment may ask for. Host namespaces, host ports and hostPath volumes cannot be expressed through the interface at all; a privileged container is refused at every level.',
      ),
    networkPolicy: z
      .strictObject({
        enabled: z
          .boolean()
          .default(true)
          .describe(
            'Render a NetworkPolicy per deployment. Off for clusters whose network plugin does not enforce them (the policies would promise what nothing keeps).',
          ),
        ingressControllerNamespace: z
          .string()
          .optional()
          .describe(
            "The ingress controller's namespace (or, with `render.gateway`, that of the Gateway's proxies): its pods may reach the application workloads. Never one of the agent's `namespaces`, where every deployment's pods would then reach every other's.",
          ),
        allowFrom: z
          .array(FreeForm)
          .superRefine((peers, ctx) => {
            for (const [i, peer] of peers.entries()) {
              const problem = peerProblem(peer);
              if (problem)
                ctx.addIssue({ code: 'custom', message: problem.message, path: [i, ...problem.path] });
            }
          })
          .default([])
          .describe(
            "More sources the application workloads accept connections from: NetworkPolicyPeer objects (e.g. a monitoring namespace). Each peer names the namespaces it admits (a `namespaceSelector` with `matchLabels` or an `In`/`Exists` expression), or is an `ipBlock`: a pod selector alone would select pods of the deployment's own namespace, where every deployment sets its pods' labels, and an empty or negative namespace selector takes the listener's namespaces too; a peer naming one of the agent's `namespaces` by `kubernetes.io/metadata.name` is refused likewise. The database and key-value store accept only the deployment's own pods, whatever this says.",
          ),
      })
      .prefault({})
      .describe("Each deployment's network fenced: its data stores reachable only from its own pods."),
    ingress: z
      .strictObject({
        className: z
          .string()
          .optional()
          .describe('`custom_url` becomes an Ingress only when a class is configured.'),
        annotations: z
          .record(z.string(), z.string())
          .default({})
          .describe(
            'Annotations of every rendered Ingress, kept as rendered: one removed or changed by hand is written back at the next look.',
          ),
        tlsSecretName: z.string().optional().describe('TLS Secret of every rendered Ingress.'),
        allowedHostSuffixes: z
          .array(z.string().min(1))
          .default([])
          .describe(
            "Domains a deployment's `custom_url` may be under (`example.com` takes it and its subdomains, `.example.com` subdomains only); with an ingress class or Gateway set, any other host is refused, for an Ingress and an HTTPRoute alike. Empty: none.",
          ),
      })
      .prefault({})
      .describe('Ingresses for `custom_url`.'),
    gateway: z
      .strictObject({
        parentRefs: z
          .array(GatewayParentRef)
          .default([])
          .describe(
            "The Gateways a deployment's `custom_url` is attached to (Gateway API `ParentReference`s: `name`, and optionally `namespace`, `sectionName`, `port`, `group`, `kind`). Set, `custom_url` becomes an HTTPRoute (`gateway.networking.k8s.io/v1`) instead of an Ingress: the URL's host, under `render.ingress.allowedHostSuffixes` like an Ingress's; its path as a `PathPrefix`; the main Service as the backend. Empty: no HTTPRoute. Not together with `render.ingress.className`.",
          ),
        annotations: z
          .record(z.string(), z.string())
          .default({})
          .describe(
            'Annotations of every rendered HTTPRoute, kept as rendered: one removed or changed by hand is written back at the next look.',
          ),
        rewritePathPrefix: z
          .boolean()
          .default(true)
          .describe(
            'For a `custom_url` with a path (`https://agents.example.com/team-a`): the Gateway replaces the prefix with `/` before the request reaches the server, which serves at its root (as LangGraph servers do without a mount prefix). false: the path reaches the server as it came.',
          ),
      })
      .prefault({})
      .describe('HTTPRoutes for `custom_url`, through the Gateway API.'),
  })
  .superRefine((config, ctx) => {
    // The platform's own defaults stay under its maxima, as a deployment's values must.
    const max = config.limits.maxMemoryMb;
    for (const [path, memoryMb] of [
      [['defaults', 'dev_free', 'memoryMb'], config.defaults.dev_free.memoryMb],
      [['defaults', 'dev', 'memoryMb'], config.defaults.dev.memoryMb],
      [['defaults', 'prod', 'memoryMb'], config.defaults.prod.memoryMb],
      [['extraContainers', 'memoryMb'], config.extraContainers.memoryMb],
      [['database', 'defaults', 'memoryMb'], config.database.defaults.memoryMb],
      [['kvstore', 'defaults', 'memoryMb'], config.kvstore.defaults.memoryMb],
    ] as const)
      if (memoryMb > max)
        ctx.addIssue({
          code: 'custom',
          path: [...path],
          message: `must not be above limits.maxMemoryMb (${max})`,
        });
    // A host is routed one way: two routes to one backend would be two policies for its traffic.
    if (config.ingress.className !== undefined && config.gateway.parentRefs.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['gateway', 'parentRefs'],
        message:
          'render.ingress.className is set too: custom_url becomes an Ingress or an HTTPRoute, not both; unset one',
      });
  });
export type RenderConfig = z.infer<typeof RenderConfig>;
export type RenderConfigInput = z.input<typeof RenderConfig>;
