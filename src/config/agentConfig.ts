// The agent's configuration: a file (the Helm chart's ConfigMap), overridden by environment
// variables and flags. Invalid configuration is a typed error naming the field; every section is
// strict, so a misspelled key is refused (with its nearest valid key), never silently ignored.

import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { formatPath } from '../controlplane/parse.ts';
import { ReconcileConfig } from '../reconcile/policy/reconcileConfig.ts';
import { RenderConfig, tenantReachableSources } from '../render/renderConfig.ts';
import { unknownSchedulingNamespaces } from '../render/scheduling.ts';
import { ReportConfig } from '../report/reportConfig.ts';
import { schemaKeyPaths, suggestKey } from './keySuggestion.ts';

/** Chosen with bench:sync (README, "Benchmarks"): a cold sync is not slowed, a resync storm is capped. */
export const KUBE_API_DEFAULTS = { qps: 500, burst: 1000 } as const;

export const AgentConfig = z.strictObject({
  listenerId: z.guid().describe('The listener this agent serves: its id at the control plane.'),
  controlPlane: z
    .strictObject({
      baseUrl: z
        .url({ protocol: /^https?$/ })
        .describe('Base URL of the deployment management service (`/v2/…` paths are relative to it).'),
      apiKey: z
        .string()
        .min(1)
        .optional()
        .describe('The API key, sent as `X-Api-Key`. Exclusive with `apiKeyFile`; prefer the file.'),
      apiKeyFile: z
        .string()
        .min(1)
        .optional()
        .describe(
          'A file holding the API key (a mounted Secret, as the chart does), read again when it changes: a rotated Secret is used without a restart.',
        ),
      tenantId: z.string().min(1).optional().describe('Sent as `X-Tenant-Id` when set.'),
      timeoutMs: z
        .number()
        .int()
        .positive()
        .default(10_000)
        .describe('Timeout of one attempt of a control-plane request (retries come on top).'),
      maxResponseBytes: z
        .number()
        .int()
        .min(1024)
        .default(16 * 2 ** 20)
        .describe(
          'The largest control-plane response body read; a larger one fails its request unread (what the control plane sends is untrusted input).',
        ),
      maxPages: z
        .number()
        .int()
        .min(1)
        .default(1_000)
        .describe(
          'The most pages one listing may have (pages of 100); a longer listing fails, concluding nothing.',
        ),
      maxListingBytes: z
        .number()
        .int()
        .min(1024)
        .default(64 * 2 ** 20)
        .describe(
          "The most bytes one listing's pages may hold together (they are held until it completes); a larger listing fails, concluding nothing.",
        ),
    })
    .describe('How the agent reaches the control plane.'),
  namespaces: z
    .array(z.string().min(1))
    .min(1)
    .describe(
      "The namespaces the agent may write to: required, so that no listener can send it elsewhere. The listener's `k8s_namespaces` only narrow it; never the agent's own namespace.",
    ),
  kubeconfig: z
    .string()
    .optional()
    .describe(
      "A kubeconfig file. Unset: in-cluster credentials, else `$KUBECONFIG`, else `~/.kube/config` (client-go's merge rules; exec plugins, token files; `auth-provider` users are refused).",
    ),
  kubeApi: z
    .strictObject({
      qps: z
        .number()
        .min(0)
        .default(KUBE_API_DEFAULTS.qps)
        .describe(
          'Sustained requests per second to the API server (watches are not limited); 0 turns the limit off.',
        ),
      burst: z
        .number()
        .int()
        .min(1)
        .default(KUBE_API_DEFAULTS.burst)
        .describe('Requests let through at once after a quiet period.'),
    })
    .prefault({})
    .describe(
      "Client-side rate limit of requests to the API server (client-go's `--kube-api-qps`/`--kube-api-burst`), chosen with `bench:sync`.",
    ),
  identity: z
    .string()
    .min(1)
    .default(() => process.env.POD_NAME || hostname())
    .meta({
      description: 'Who holds the leader Lease: the pod name.',
      defaultText: '`$POD_NAME`, else the host name',
    }),
  agentNamespace: z
    .string()
    .min(1)
    .default(() => process.env.POD_NAMESPACE || 'default')
    .meta({
      description:
        "The agent's own namespace (its Lease lives there unless `reconcile.leaderElection.leaseNamespace` says otherwise).",
      defaultText: '`$POD_NAMESPACE`, else `default`',
    }),
  log: z
    .strictObject({
      level: z
        .enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
        .default('info')
        .describe('Log level; `--log-level` wins over the file and `LOG_LEVEL`.'),
      format: z
        .enum(['json', 'pretty', 'auto'])
        .default('auto')
        .describe(
          '`auto`: human-readable lines when stdout is a terminal, JSON lines otherwise. Secret values are redacted in both.',
        ),
    })
    .prefault({})
    .describe('Logs go to stdout.'),
  probes: z
    .strictObject({
      host: z
        .string()
        .default('0.0.0.0')
        .describe('Address of the `/healthz`, `/readyz` and `/metrics` server.'),
      port: z.number().int().min(0).max(65535).default(9090).describe('Its port (0: any free port).'),
    })
    .prefault({})
    .describe('Health probes and metrics.'),
  render: RenderConfig.prefault({}).describe('How a deployment becomes Kubernetes objects.'),
  reconcile: ReconcileConfig.prefault({}).describe(
    'The loop: polling, the work queue, pruning, leader election.',
  ),
  report: ReportConfig.prefault({}).describe(
    "What the tenant is told of a failing server, through the control plane: its containers' reasons and exit codes, the last lines of a crashed container's log, the scheduler's message and the pod's warning Events, each secret value of the deployment masked.",
  ),
});
export type AgentConfig = z.infer<typeof AgentConfig>;

/** A key the schema does not know, and the valid key it was most likely meant to be. */
export interface UnknownKey {
  readonly path: string;
  readonly suggestion: string | undefined;
  /** Set when the key was one of an earlier version: the key that took its place. */
  readonly replacedBy?: string;
}

/**
 * Keys an earlier version knew, and what took their place: refused like any unknown key, but
 * with the replacement named for certain rather than guessed.
 */
export const REPLACED_KEYS: Readonly<Record<string, { readonly key: string; readonly note: string }>> = {
  'render.database.uriEnv': {
    key: 'render.database.uriEnvs',
    note: 'a list of names, each given the connection string',
  },
  'render.scheduling.byDeploymentType': {
    key: 'render.scheduling.byNamespace',
    note: "by namespace: byNamespace.<namespace>.byDeploymentType.<type>, so that a deployment's type selects only among the placements the platform gives its namespace",
  },
};

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'CONFIG_INVALID';
  readonly fields: readonly string[];
  readonly unknownKeys: readonly UnknownKey[];
  constructor(
    message: string,
    fields: readonly string[],
    options?: { cause?: unknown; unknownKeys?: readonly UnknownKey[] },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.fields = fields;
    this.unknownKeys = options?.unknownKeys ?? [];
  }
}

export interface ConfigSources {
  readonly file?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
  /** Flag values, already in the shape of the file. */
  readonly overrides?: Record<string, unknown>;
}

/** Environment variables the agent reads, and where each lands in the configuration. */
export const ENV_PATHS: readonly [string, readonly string[], (v: string) => unknown][] = [
  ['K8S_LISTENER_LISTENER_ID', ['listenerId'], (v) => v],
  ['K8S_LISTENER_CONTROL_PLANE_URL', ['controlPlane', 'baseUrl'], (v) => v],
  ['K8S_LISTENER_API_KEY', ['controlPlane', 'apiKey'], (v) => v],
  ['K8S_LISTENER_API_KEY_FILE', ['controlPlane', 'apiKeyFile'], (v) => v],
  ['K8S_LISTENER_TENANT_ID', ['controlPlane', 'tenantId'], (v) => v],
  [
    'K8S_LISTENER_NAMESPACES',
    ['namespaces'],
    (v) =>
      v
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean),
  ],
  ['K8S_LISTENER_KUBECONFIG', ['kubeconfig'], (v) => v],
  ['LOG_LEVEL', ['log', 'level'], (v) => v],
];

export async function loadAgentConfig(sources: ConfigSources): Promise<AgentConfig> {
  const base = sources.file ? await readConfigDocument(sources.file) : {};
  const env = sources.env ?? process.env;
  for (const [name, path, convert] of ENV_PATHS) {
    const value = env[name];
    if (value !== undefined && value !== '') setPath(base, path, convert(value));
  }
  for (const [key, value] of Object.entries(sources.overrides ?? {})) {
    if (value !== undefined) setPath(base, key.split('.'), value);
  }
  const result = AgentConfig.safeParse(base);
  if (!result.success) throw configError(result.error.issues, sources.file);
  if (result.data.namespaces?.includes(result.data.agentNamespace)) {
    throw new ConfigError(
      `invalid configuration: namespaces holds the agent's own namespace ${result.data.agentNamespace}: a deployment there could name the agent's ServiceAccount or mount its Secrets`,
      ['namespaces'],
    );
  }
  // Settings that depend on which namespaces are the agent's: checked together, named each.
  const namespaceProblems = [
    ...tenantReachableSources(result.data.render, result.data.namespaces ?? []),
    ...unknownSchedulingNamespaces(result.data.render.scheduling, result.data.namespaces ?? []),
  ];
  if (namespaceProblems.length > 0) {
    throw new ConfigError(
      `invalid configuration: ${namespaceProblems.map(({ key, message }) => `${key}: ${message}`).join('; ')}`,
      namespaceProblems.map(({ key }) => key),
    );
  }
  const { apiKey, apiKeyFile } = result.data.controlPlane;
  if (apiKey !== undefined && apiKeyFile !== undefined) {
    throw new ConfigError(
      'invalid configuration: controlPlane.apiKey and controlPlane.apiKeyFile are mutually exclusive (K8S_LISTENER_API_KEY sets controlPlane.apiKey)',
      ['controlPlane.apiKey', 'controlPlane.apiKeyFile'],
    );
  }
  return result.data;
}

/** A configuration file as a mapping (an empty file is an empty mapping). */
export async function readConfigDocument(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new ConfigError(`cannot read the configuration file ${file}`, [], { cause });
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (cause) {
    throw new ConfigError(`${file} is not valid YAML`, [], { cause });
  }
  if (parsed !== null && (typeof parsed !== 'object' || Array.isArray(parsed)))
    throw new ConfigError(`${file} is not a mapping`, []);
  return (parsed ?? {}) as Record<string, unknown>;
}

/**
 * The render section of an agent configuration document, for commands that only render: the whole
 * document is held to the same strictness (an unknown key anywhere is refused, with the same
 * message as at the agent's start), but the settings render does not use may be absent.
 */
export function parseRenderSection(document: Record<string, unknown>, file?: string): RenderConfig {
  const whole = AgentConfig.safeParse(document);
  const issues = whole.success
    ? []
    : whole.error.issues.filter((issue) => issue.code === 'unrecognized_keys' || issue.path[0] === 'render');
  if (issues.length > 0) throw configError(issues, file);
  const render = RenderConfig.safeParse(document.render ?? {});
  if (!render.success) throw configError(render.error.issues, file, ['render']);
  return render.data;
}

const VALID_KEY_PATHS = schemaKeyPaths(AgentConfig);

/** One error for every problem: unknown keys first, each with its nearest valid key. */
function configError(
  issues: readonly z.core.$ZodIssue[],
  file: string | undefined,
  prefix: readonly PropertyKey[] = [],
): ConfigError {
  const unknownKeys: UnknownKey[] = [];
  const others: string[] = [];
  const otherFields: string[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const keyPath = formatPath([...path, key]);
        const replaced = REPLACED_KEYS[keyPath];
        unknownKeys.push(
          replaced
            ? { path: keyPath, suggestion: replaced.key, replacedBy: replaced.key }
            : { path: keyPath, suggestion: suggestKey(keyPath, VALID_KEY_PATHS) },
        );
      }
    } else {
      // Messages name fields and rules, never values (the API key is one).
      others.push(`${formatPath(path)}: ${issue.message}`);
      otherFields.push(formatPath(path));
    }
  }
  const detail = [
    ...unknownKeys.map(({ path, suggestion, replacedBy }) =>
      replacedBy
        ? `unknown key ${path} (replaced by ${replacedBy}: ${REPLACED_KEYS[path]?.note})`
        : `unknown key ${path}${suggestion ? ` (did you mean ${suggestion}?)` : ''}`,
    ),
    ...others,
  ].join('; ');
  const fields = [...unknownKeys.map((key) => key.path), ...otherFields];
  return new ConfigError(`invalid configuration${file ? ` in ${file}` : ''}: ${detail}`, fields, {
    unknownKeys,
  });
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let current = target;
  for (const key of path.slice(0, -1)) {
    const next = current[key];
    if (typeof next !== 'object' || next === null) current[key] = {};
    current = current[key] as Record<string, unknown>;
  }
  const last = path.at(-1);
  if (last !== undefined) current[last] = value;
}
