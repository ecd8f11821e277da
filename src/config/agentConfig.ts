// The agent's configuration: a file (the Helm chart's ConfigMap), overridden by environment
// variables and flags. Invalid configuration is a typed error naming the field.

import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { formatPath } from '../controlplane/parse.ts';
import { ReconcileConfig } from '../reconcile/reconcileConfig.ts';
import { RenderConfig } from '../render/renderConfig.ts';

export const AgentConfig = z.object({
  listenerId: z.guid(),
  controlPlane: z.object({
    baseUrl: z.url({ protocol: /^https?$/ }),
    apiKey: z.string().min(1).optional(),
    tenantId: z.string().min(1).optional(),
    timeoutMs: z.number().int().positive().default(10_000),
  }),
  /** The agent's own namespace allow-list, intersected with the listener's k8s_namespaces. */
  namespaces: z.array(z.string().min(1)).min(1).optional(),
  /** Unset: in-cluster configuration. */
  kubeconfig: z.string().optional(),
  identity: z
    .string()
    .min(1)
    .default(() => process.env.POD_NAME || hostname()),
  agentNamespace: z
    .string()
    .min(1)
    .default(() => process.env.POD_NAMESPACE || 'default'),
  log: z
    .object({ level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info') })
    .prefault({}),
  probes: z
    .object({ host: z.string().default('0.0.0.0'), port: z.number().int().min(0).max(65535).default(9090) })
    .prefault({}),
  render: RenderConfig.prefault({}),
  reconcile: ReconcileConfig.prefault({}),
});
export type AgentConfig = z.infer<typeof AgentConfig>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'CONFIG_INVALID';
  readonly fields: readonly string[];
  constructor(message: string, fields: readonly string[], options?: { cause?: unknown }) {
    super(message, options);
    this.fields = fields;
  }
}

export interface ConfigSources {
  readonly file?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
  /** Flag values, already in the shape of the file. */
  readonly overrides?: Record<string, unknown>;
}

/** Environment variables the agent reads, and where each lands in the configuration. */
const ENV_PATHS: readonly [string, readonly string[], (v: string) => unknown][] = [
  ['K8S_LISTENER_LISTENER_ID', ['listenerId'], (v) => v],
  ['K8S_LISTENER_CONTROL_PLANE_URL', ['controlPlane', 'baseUrl'], (v) => v],
  ['K8S_LISTENER_API_KEY', ['controlPlane', 'apiKey'], (v) => v],
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
  let base: Record<string, unknown> = {};
  if (sources.file) {
    let text: string;
    try {
      text = await readFile(sources.file, 'utf8');
    } catch (cause) {
      throw new ConfigError(`cannot read the configuration file ${sources.file}`, [], { cause });
    }
    const parsed: unknown = parseYaml(text);
    if (parsed !== null && typeof parsed !== 'object')
      throw new ConfigError(`${sources.file} is not a mapping`, []);
    base = (parsed ?? {}) as Record<string, unknown>;
  }
  const env = sources.env ?? process.env;
  for (const [name, path, convert] of ENV_PATHS) {
    const value = env[name];
    if (value !== undefined && value !== '') setPath(base, path, convert(value));
  }
  for (const [key, value] of Object.entries(sources.overrides ?? {})) {
    if (value !== undefined) setPath(base, key.split('.'), value);
  }
  const result = AgentConfig.safeParse(base);
  if (!result.success) {
    const fields = result.error.issues.map((issue) => formatPath(issue.path));
    // Messages name fields and rules, never values (the API key is one).
    const detail = result.error.issues
      .map((issue) => `${formatPath(issue.path)}: ${issue.message}`)
      .join('; ');
    throw new ConfigError(`invalid configuration: ${detail}`, fields);
  }
  return result.data;
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
