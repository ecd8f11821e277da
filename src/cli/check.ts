// `k8s-listener check`: a preflight checklist of everything the agent needs before it can work —
// its configuration, the control plane, its listener, the cluster, its namespaces, its permissions.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { type AgentConfig, ConfigError } from '../config/agentConfig.ts';
import { isControlPlaneError } from '../controlplane/errors.ts';
import type { Listener } from '../controlplane/schemas/index.ts';
import { type AccessQuestion, reviewAccess, selfUserName } from '../kube/accessReview.ts';
import { isForbidden, isNotFound, KubeApiError } from '../kube/errors.ts';
import type { KubeClient, KubeObject } from '../kube/index.ts';
import { formatMicroTime } from '../kube/microTime.ts';
import { resourceTypeOf } from '../kube/resources.ts';
import { isSupportedVersion, readServerVersion, SUPPORTED_RANGE } from '../kube/serverVersion.ts';
import { statusPhase } from '../objects/fields.ts';
import { AGENT_NAME, LABEL_MANAGED_BY } from '../objects/ownership.ts';
import { managedNamespaces } from '../reconcile/policy/managedNamespaces.ts';
import { customKinds } from '../reconcile/policy/watchedKinds.ts';
import { terminalJson, terminalText } from '../report/terminalText.ts';
import { AGENT_VERSION } from '../version.ts';
import { type CommandSetup, commandSetup } from './commandSetup.ts';
import { CONFIG_FLAGS, CONFIG_FLAGS_USAGE, type ConfigFlagValues } from './configFlags.ts';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './exitCodes.ts';
import {
  agentNamespaceAccess,
  leaseAccess,
  namespaceAccess,
  qualifiedResource,
  type RequiredAccess,
} from './requiredAccess.ts';

export const CHECK_USAGE = `Usage: k8s-listener check [options] [--output text|json]

Checks, one line each (✓ or ✗ with the reason and the fix), that the agent can work: the
configuration loads; the control plane answers and accepts the API key; the listener exists, is
k8s, and shares namespaces with the allow-list; each namespace exists; every permission the agent
uses is granted (SelfSubjectAccessReview) in each namespace it manages, and its Lease in its own
namespace; the Kubernetes version is supported (${SUPPORTED_RANGE}); the custom resources the
configuration has it write (an HTTPRoute, KEDA's ScaledObject) are served.
Exit code 0 when every check passes, 1 otherwise, 2 for a usage error.
${CONFIG_FLAGS_USAGE}
  --output FORMAT        text (default) or json
`;

/** One line of the checklist; `--output json` prints a `CheckReport`, a documented shape. */
export const CheckLine = z.object({
  /** Stable identifier, e.g. `control-plane`, `namespace/apps`, `access/apps/secrets`. */
  id: z.string(),
  ok: z.boolean(),
  title: z.string(),
  reason: z.string().optional(),
  fix: z.string().optional(),
});
export type CheckLine = z.infer<typeof CheckLine>;

export const CheckReport = z.object({
  ok: z.boolean(),
  /** The agent version that checked. */
  version: z.string(),
  checks: z.array(CheckLine),
});
export type CheckReport = z.infer<typeof CheckReport>;

export interface CheckIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr?: NodeJS.WritableStream;
}

export async function runCheckCommand(
  argv: readonly string[],
  io: CheckIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const usage = (message: string): number => {
    (io.stderr ?? process.stderr).write(`${AGENT_NAME} check: ${terminalText(message)}\n\n${CHECK_USAGE}`);
    return EXIT_USAGE;
  };
  let values: ReturnType<typeof parseFlags>['values'];
  try {
    ({ values } = parseFlags(argv));
  } catch (error) {
    return usage(error instanceof Error ? error.message : String(error));
  }
  if (values.help) {
    io.stdout.write(CHECK_USAGE);
    return 0;
  }
  if (values.output !== 'text' && values.output !== 'json') {
    return usage(`--output must be text or json, not ${values.output}`);
  }
  const report = await runPreflight(values);
  io.stdout.write(values.output === 'json' ? `${terminalJson(report, 2)}\n` : formatChecklist(report));
  return report.ok ? EXIT_OK : EXIT_FAILED;
}

function parseFlags(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    options: {
      ...CONFIG_FLAGS,
      output: { type: 'string', default: 'text' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

/** Runs every check it can; a check that depends on one that failed is reported as not checked. */
export async function runPreflight(flags: ConfigFlagValues): Promise<CheckReport> {
  const lines: CheckLine[] = [];
  let setup: CommandSetup;
  try {
    setup = await commandSetup(flags, 'check', { kubeTimeoutMs: 10_000 });
    const { config } = setup;
    lines.push({
      id: 'config',
      ok: true,
      title: `configuration loads: listener ${config.listenerId}, control plane ${config.controlPlane.baseUrl}, kubeconfig ${config.kubeconfig ?? 'in-cluster'}`,
    });
  } catch (error) {
    lines.push({
      id: 'config',
      ok: false,
      title: 'configuration does not load',
      reason: error instanceof Error ? error.message : String(error),
      fix:
        error instanceof ConfigError
          ? 'correct the named fields in the --config file, the environment or the flags'
          : 'see the reason',
    });
    return report(lines);
  }
  try {
    const listener = await checkControlPlane(setup, lines);
    const managed = servedBy(setup.config, listener);
    await checkCluster(setup, managed, lines);
  } finally {
    await setup.close();
  }
  return report(lines);
}

function report(lines: readonly CheckLine[]): CheckReport {
  return { ok: lines.every((line) => line.ok), version: AGENT_VERSION, checks: [...lines] };
}

/** The control plane line and the listener line; returns the listener when it could be read. */
async function checkControlPlane(setup: CommandSetup, lines: CheckLine[]): Promise<Listener | undefined> {
  const { config, controlPlane: client } = setup;
  const { baseUrl, apiKey, apiKeyFile } = config.controlPlane;
  const id = config.listenerId;
  try {
    const listener = await client.getListener(id);
    lines.push({
      id: 'control-plane',
      ok: true,
      title: `control plane answers at ${baseUrl} and accepts the API key`,
    });
    lines.push(listenerLine(config, listener));
    return listener;
  } catch (error) {
    if (isControlPlaneError(error, 404)) {
      lines.push({
        id: 'control-plane',
        ok: true,
        title: `control plane answers at ${baseUrl} and accepts the API key`,
      });
      lines.push({
        id: 'listener',
        ok: false,
        title: `listener ${id} does not exist at the control plane`,
        reason: 'GET /v2/listeners/{id} answered 404',
        fix: 'correct listenerId (K8S_LISTENER_LISTENER_ID, the chart value listenerId), or create the listener (POST /v2/listeners, compute_type k8s)',
      });
      return undefined;
    }
    const refused = isControlPlaneError(error, 401) || isControlPlaneError(error, 403);
    lines.push({
      id: 'control-plane',
      ok: false,
      title: refused
        ? `control plane at ${baseUrl} refuses the API key`
        : `control plane does not answer at ${baseUrl}`,
      reason: error instanceof Error ? error.message : String(error),
      fix: refused
        ? `set controlPlane.apiKey (K8S_LISTENER_API_KEY, or the chart's API key Secret) to a key the control plane accepts${apiKey || apiKeyFile ? '' : ' — none is set'}`
        : 'correct controlPlane.baseUrl (K8S_LISTENER_CONTROL_PLANE_URL), and check that the agent can reach it (DNS, proxy, NetworkPolicy egress)',
    });
    lines.push({
      id: 'listener',
      ok: false,
      title: `listener ${id} not checked`,
      reason: 'the control plane could not be asked',
      fix: 'fix the control plane line first',
    });
    return undefined;
  }
}

function listenerLine(config: AgentConfig, listener: Listener): CheckLine {
  const id = `listener ${listener.id}`;
  if (listener.compute_type !== 'k8s') {
    return {
      id: 'listener',
      ok: false,
      title: `${id} has compute type ${listener.compute_type}, not k8s`,
      reason: 'this agent serves only listeners of compute type k8s',
      fix: 'point listenerId at a k8s listener',
    };
  }
  const listed = listener.compute_config?.k8s_namespaces ?? [];
  const managed = servedBy(config, listener);
  const allowText = `agent allow-list: ${config.namespaces.join(', ')}`;
  if (managed.length === 0) {
    return {
      id: 'listener',
      ok: false,
      title: `${id} leaves no namespace to manage`,
      reason: `listener k8s_namespaces: ${listed.join(', ') || 'none'}; ${allowText}`,
      fix: "add a namespace to both the listener's compute_config.k8s_namespaces and the agent's namespaces (K8S_LISTENER_NAMESPACES, the chart value namespaces)",
    };
  }
  const ignored = listed.filter((namespace) => !managed.includes(namespace));
  return {
    id: 'listener',
    ok: true,
    title: `${id} is k8s and shares namespaces with the agent: ${managed.join(', ')} (${allowText}${ignored.length > 0 ? `; not managed: ${ignored.join(', ')}` : ''})`,
  };
}

async function checkCluster(
  setup: CommandSetup,
  managed: readonly string[],
  lines: CheckLine[],
): Promise<void> {
  const { config } = setup;
  let kube: KubeClient;
  try {
    kube = await setup.kube();
  } catch (error) {
    lines.push({
      id: 'kube-api',
      ok: false,
      title: 'Kubernetes client configuration does not load',
      reason: error instanceof Error ? error.message : String(error),
      fix: 'correct kubeconfig (K8S_LISTENER_KUBECONFIG), or run in a Pod with a service account token',
    });
    return;
  }
  const reachable = await checkApiServer(kube, lines);
  if (reachable) lines.push(...(await servedKindLines(kube, config.render)));
  if (!reachable) {
    lines.push({
      id: 'namespaces',
      ok: false,
      title: 'namespaces and permissions not checked',
      reason: 'the Kubernetes API server could not be asked',
      fix: 'fix the Kubernetes API line first',
    });
    return;
  }
  const user = await selfUserName(kube);
  const election = config.reconcile.leaderElection;
  const leaseNamespace = election.leaseNamespace ?? config.agentNamespace;
  // No managed namespace: the listener line has failed already and says why.
  for (const namespace of managed) lines.push(await namespaceLine(kube, namespace, 'managed'));
  // The agent's own namespace matters only for its Lease (it writes nothing else there).
  if (election.enabled && !managed.includes(leaseNamespace)) {
    lines.push(await namespaceLine(kube, leaseNamespace, "the agent's own, for its Lease"));
  }

  const wanted = mergeAccess([
    ...managed.flatMap((namespace) => namespaceAccess(config).map((access) => ({ namespace, access }))),
    ...leaseAccess(config).map((access) => ({ namespace: leaseNamespace, access })),
    ...agentNamespaceAccess().map((access) => ({ namespace: config.agentNamespace, access })),
  ]);
  const questions: AccessQuestion[] = wanted.flatMap(({ namespace, access }) =>
    access.verbs.map((verb) => ({
      namespace,
      group: access.group,
      resource: access.resource,
      name: access.name,
      verb,
    })),
  );
  let answers: Awaited<ReturnType<typeof reviewAccess>>;
  try {
    answers = await reviewAccess(kube, questions);
  } catch (error) {
    lines.push({
      id: 'access',
      ok: false,
      title: 'permissions could not be checked',
      reason: error instanceof Error ? error.message : String(error),
      fix: 'the API server must serve authorization.k8s.io/v1 SelfSubjectAccessReview to every authenticated user (it does by default)',
    });
    return;
  }
  const allowed = new Set(answers.filter((a) => a.allowed).map((a) => accessKey(a.namespace, a, a.verb)));
  for (const { namespace, access } of wanted) {
    lines.push(accessLine(namespace, access, allowed, user));
  }
}

function accessKey(
  namespace: string,
  access: Pick<RequiredAccess, 'group' | 'resource' | 'name'>,
  verb: string,
) {
  return `${namespace} ${qualifiedResource(access)} ${verb}`;
}

/** One line per namespace and resource: the Lease's namespace may also be a managed one. */
function mergeAccess(
  wanted: readonly { namespace: string; access: RequiredAccess }[],
): { namespace: string; access: RequiredAccess }[] {
  const merged = new Map<string, { namespace: string; access: RequiredAccess }>();
  for (const { namespace, access } of wanted) {
    const key = accessKey(namespace, access, '');
    const seen = merged.get(key);
    const verbs = seen ? [...new Set([...seen.access.verbs, ...access.verbs])] : access.verbs;
    merged.set(key, { namespace, access: { ...(seen?.access ?? access), verbs } });
  }
  return [...merged.values()];
}

/**
 * One line per custom resource the configuration has render write (an HTTPRoute, KEDA's kinds):
 * served by the API server, or not — its CRDs are not installed, and every deployment would fail
 * to apply.
 */
export async function servedKindLines(
  kube: Pick<KubeClient, 'requestJson'>,
  render: AgentConfig['render'],
): Promise<CheckLine[]> {
  const lines: CheckLine[] = [];
  for (const { kind, setting, from } of customKinds(render)) {
    const type = resourceTypeOf(kind);
    if (!type) continue;
    const resource = `${type.plural}.${type.group}/${type.version}`;
    let served = false;
    let reason = `${type.group}/${type.version} lists no ${type.plural}`;
    try {
      const list = await kube.requestJson('GET', `/apis/${type.group}/${type.version}`, {
        kind: 'APIResourceList',
      });
      const resources = (list as { resources?: unknown }).resources;
      served =
        Array.isArray(resources) &&
        resources.some((r) => (r as { name?: unknown } | null)?.name === type.plural);
    } catch (error) {
      reason = isNotFound(error)
        ? `the API server does not serve ${type.group}/${type.version}`
        : error instanceof Error
          ? error.message
          : String(error);
    }
    lines.push(
      served
        ? { id: `kind/${resource}`, ok: true, title: `the API server serves ${resource} (${kind})` }
        : {
            id: `kind/${resource}`,
            ok: false,
            title: `the API server does not serve ${resource}, which ${setting} has the agent write`,
            reason,
            fix: `install ${from} in the cluster, or unset ${setting}`,
          },
    );
  }
  return lines;
}

/** The API server line and the version line; false when the server could not be asked at all. */
async function checkApiServer(kube: KubeClient, lines: CheckLine[]): Promise<boolean> {
  try {
    const version = await readServerVersion(kube);
    lines.push({ id: 'kube-api', ok: true, title: `Kubernetes API server answers at ${kube.server}` });
    lines.push(
      isSupportedVersion(version)
        ? {
            id: 'kube-version',
            ok: true,
            title: `Kubernetes ${version.gitVersion} is supported (${SUPPORTED_RANGE})`,
          }
        : {
            id: 'kube-version',
            ok: false,
            title: `Kubernetes ${version.gitVersion} is not supported (${SUPPORTED_RANGE})`,
            reason: 'the agent uses APIs that are GA only from the oldest supported version on',
            fix: `upgrade the cluster to Kubernetes ${SUPPORTED_RANGE.replace('≥ ', '')} or later`,
          },
    );
    return true;
  } catch (error) {
    const unauthorized = error instanceof KubeApiError && error.status === 401;
    lines.push({
      id: 'kube-api',
      ok: false,
      title: unauthorized
        ? `Kubernetes API server at ${kube.server} refuses the credentials`
        : `Kubernetes API server does not answer at ${kube.server}`,
      reason: error instanceof Error ? error.message : String(error),
      fix: unauthorized
        ? 'renew the token or certificate of the kubeconfig (or the Pod service account token)'
        : 'correct the server of the kubeconfig, and check that the agent can reach it',
    });
    return false;
  }
}

/**
 * A namespace exists when it can be read, or — the agent may not read namespaces, the chart grants
 * no cluster-wide permission — when a dry-run create of what the agent creates there (an Event in a
 * managed namespace, a Lease in its own) is accepted: the API server answers 404 for a missing one.
 */
async function namespaceLine(kube: KubeClient, namespace: string, role: string): Promise<CheckLine> {
  const probe = role === 'managed' ? eventProbe(namespace) : leaseProbe(namespace);
  const id = `namespace/${namespace}`;
  const missing: CheckLine = {
    id,
    ok: false,
    title: `namespace ${namespace} (${role}) does not exist`,
    reason: 'the API server answered 404 for it',
    fix: `kubectl create namespace ${namespace}${role === 'managed' ? ", or remove it from the listener's k8s_namespaces" : ''}`,
  };
  try {
    const live = await kube.getNamespace(namespace);
    if (live === undefined) return missing;
    const phase = statusPhase(live);
    if (phase === 'Terminating' || live.metadata.deletionTimestamp !== undefined) {
      return {
        id,
        ok: false,
        title: `namespace ${namespace} (${role}) is being deleted`,
        reason: 'nothing new can be created in a terminating namespace',
        fix: `wait for the deletion to finish, then kubectl create namespace ${namespace}`,
      };
    }
    return { id, ok: true, title: `namespace ${namespace} (${role}) exists` };
  } catch (error) {
    if (!isForbidden(error)) return unknownNamespace(id, namespace, role, error);
  }
  try {
    await kube.create(probe, { dryRun: true });
    return { id, ok: true, title: `namespace ${namespace} (${role}) exists` };
  } catch (error) {
    if (isNotFound(error)) return missing;
    return unknownNamespace(id, namespace, role, error);
  }
}

/** An Event, as the agent creates in every namespace it manages (never stored: a dry run). */
function eventProbe(namespace: string): KubeObject {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: {
      name: `${AGENT_NAME}-check`,
      namespace,
      labels: { [LABEL_MANAGED_BY]: AGENT_NAME },
      annotations: {},
    },
    eventTime: formatMicroTime(Date.now()),
    reportingController: AGENT_NAME,
    reportingInstance: `${AGENT_NAME}-check`,
    action: 'Check',
    reason: 'Preflight',
    note: 'dry run of k8s-listener check: never stored',
    type: 'Normal',
    // An Event must concern an object of its own namespace; this one need not exist.
    regarding: { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: `${AGENT_NAME}-check` },
  };
}

/** A Lease, as leader election creates in its namespace (never stored: a dry run). */
function leaseProbe(namespace: string): KubeObject {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: `${AGENT_NAME}-check`,
      namespace,
      labels: { [LABEL_MANAGED_BY]: AGENT_NAME },
      annotations: {},
    },
    spec: {},
  };
}

function unknownNamespace(id: string, namespace: string, role: string, error: unknown): CheckLine {
  return {
    id,
    ok: false,
    title: `namespace ${namespace} (${role}) could not be checked`,
    reason: error instanceof Error ? error.message : String(error),
    fix: 'see the reason; the permission lines below show what the agent may do there',
  };
}

function accessLine(
  namespace: string,
  access: RequiredAccess,
  allowed: ReadonlySet<string>,
  user: string | undefined,
): CheckLine {
  const resource = qualifiedResource(access);
  const id = `access/${namespace}/${resource}`;
  const denied = access.verbs.filter((verb) => !allowed.has(accessKey(namespace, access, verb)));
  if (denied.length === 0) {
    return { id, ok: true, title: `may ${access.verbs.join(', ')} ${resource} in ${namespace}` };
  }
  return {
    id,
    ok: false,
    title: `may not ${denied.join(', ')} ${resource} in ${namespace}`,
    reason: `denied by the API server (SelfSubjectAccessReview) to ${user ?? 'the configured user'}; needed for ${access.why}`,
    fix: `grant it in a Role bound in ${namespace}: apiGroups: ["${access.group}"], resources: [${access.resource}]${access.name === undefined ? '' : `, resourceNames: [${access.name}]`}, verbs: [${denied.join(', ')}] (the Helm chart's Role does)`,
  };
}

/**
 * The checklist as text: one line per check, its reason and fix indented below a failure. Titles
 * and reasons quote the control plane's listener and servers' errors: each is escaped to one line.
 */
export function formatChecklist(report: CheckReport): string {
  const out: string[] = [];
  for (const line of report.checks) {
    out.push(`${line.ok ? '✓' : '✗'} ${terminalText(line.title)}`);
    if (!line.ok && line.reason) out.push(`    reason: ${terminalText(line.reason)}`);
    if (!line.ok && line.fix) out.push(`    fix:    ${terminalText(line.fix)}`);
  }
  const failed = report.checks.filter((line) => !line.ok).length;
  out.push(
    failed === 0
      ? `all ${report.checks.length} checks passed`
      : `${failed} of ${report.checks.length} checks failed`,
  );
  return `${out.join('\n')}\n`;
}

/** As the agent registers; before the listener is known, the allow-list alone is what can be checked. */
const servedBy = (config: AgentConfig, listener: Listener | undefined): string[] =>
  listener === undefined
    ? [...config.namespaces]
    : managedNamespaces(listener, config.namespaces, config.agentNamespace);
