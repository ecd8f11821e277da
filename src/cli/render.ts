// `k8s-listener render`: prints the objects of one deployment as YAML, like `helm template`.
// YAML 1.1 quoting, because kubectl reads 1.1: an unquoted `no` would become false.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { parseRenderSection, readConfigDocument } from '../config/agentConfig.ts';
import { ControlPlaneClient } from '../controlplane/client.ts';
import { maskSecret } from '../kube/serverDiff.ts';
import { formatObjectRef } from '../objects/objectRef.ts';
import { renderEntry, resolveDesired } from '../reconcile/loop/desiredState.ts';
import { maskSecretDigests } from '../render/digestAnnotations.ts';
import { RenderConfig, type RenderResult, renderFromJson } from '../render/index.ts';
import { terminalLine, terminalYaml } from '../report/terminalText.ts';
import { EXIT_OK, EXIT_USAGE } from './exitCodes.ts';
import { createLogger } from './logger.ts';

export const RENDER_USAGE = `Usage:
  k8s-listener render --file FILE [--listener-file FILE] [--config FILE] [--allow-namespaces a,b]
  k8s-listener render --id DEPLOYMENT_ID --control-plane URL [--config FILE] [--allow-namespaces a,b]

Prints the Kubernetes objects the agent would apply for one deployment, as YAML documents.
  --file FILE           a deployment as JSON or YAML, or {deployment, revision, listener}
  --listener-file FILE  the listener (default: one that allows the deployment's namespace)
  --id ID               read the deployment, the revision the agent would roll out (the
                        newest, as the agent chooses it) and its listener from the
                        control plane (API key from K8S_LISTENER_API_KEY, or a file
                        named by K8S_LISTENER_API_KEY_FILE)
  --config FILE         agent configuration (its "render" section is used; unknown keys
                        anywhere in it are refused, as at the agent's start)
  --show-secrets        print Secret values (masked by default: each reads "(masked)"), and
                        the digests of them (render has no digest key: masked by default)
Exit status: 0 rendered, 1 the deployment is invalid (every problem is listed), 2 usage.
`;

export async function runRenderCommand(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      file: { type: 'string' },
      'listener-file': { type: 'string' },
      id: { type: 'string' },
      'control-plane': { type: 'string' },
      config: { type: 'string' },
      'allow-namespaces': { type: 'string' },
      'show-secrets': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || (!values.file && !values.id)) {
    process.stdout.write(RENDER_USAGE);
    return values.help ? EXIT_OK : EXIT_USAGE;
  }
  // The same strictness and messages as the agent's own start: an unknown key anywhere is refused.
  const config = values.config
    ? parseRenderSection(await readConfigDocument(values.config), values.config)
    : RenderConfig.parse({});
  const allowedNamespaces = values['allow-namespaces']
    ?.split(',')
    .map((n) => n.trim())
    .filter(Boolean);

  const result = values.file
    ? await renderFile(values.file, values['listener-file'], config, allowedNamespaces)
    : await renderRemote(values.id ?? '', values['control-plane'], config, allowedNamespaces);
  if (!result.ok) {
    process.stderr.write(terminalLine(`deployment ${result.error.deploymentId} is invalid:`));
    for (const problem of result.error.problems)
      process.stderr.write(terminalLine(`  ${problem.path}: ${problem.message}`));
    return 1;
  }
  for (const note of result.value.notes) process.stderr.write(terminalLine(`note: ${note}`));
  // Secret values stay out of terminals and CI logs unless asked for (--id reads live ones), and so
  // do the digests of them: render has no digest key, and an unkeyed digest gives a weak one away.
  const objects = values['show-secrets']
    ? result.value.objects
    : result.value.objects.map((object) => maskSecretDigests(maskSecret(object)));
  // A tenant's strings escaped where they would reach a terminal raw; kubectl reads the same values.
  const documents = objects.map(
    (object) =>
      `${terminalLine(`# Source: ${formatObjectRef(object)}`)}${terminalYaml(object, { lineWidth: 0, version: '1.1' })}`,
  );
  process.stdout.write(`---\n${documents.join('---\n')}`);
  return 0;
}

async function renderFile(
  file: string,
  listenerFile: string | undefined,
  config: RenderConfig,
  allowedNamespaces: string[] | undefined,
): Promise<RenderResult> {
  const content = await readStructured(file);
  const wrapped = isRecord(content) && 'deployment' in content;
  const deployment = wrapped ? content.deployment : content;
  const revision = wrapped ? content.revision : undefined;
  let listener = wrapped ? content.listener : undefined;
  if (listenerFile) listener = await readStructured(listenerFile);
  listener ??= listenerFor(deployment);
  return renderFromJson({ deployment, revision, listener, allowedNamespaces }, config);
}

async function renderRemote(
  id: string,
  baseUrl: string | undefined,
  config: RenderConfig,
  allowedNamespaces: string[] | undefined,
): Promise<RenderResult> {
  if (!baseUrl) throw new Error('--control-plane URL is required with --id');
  const client = new ControlPlaneClient({
    baseUrl,
    apiKey: process.env.K8S_LISTENER_API_KEY || undefined,
    apiKeyFile: process.env.K8S_LISTENER_API_KEY_FILE || undefined,
    logger: createLogger('warn'),
  });
  try {
    const listing = await client.listAllDeployments({ deployment_ids: [id] });
    const invalid = listing.invalid[0];
    if (invalid) throw invalid.error;
    const deployment = listing.items[0];
    if (!deployment) throw new Error(`deployment ${id} not found`);
    // The agent's own desired state (desiredState.ts): its choice of revision, not
    // latest_revision_id, and a revision it cannot read refused as the agent refuses it.
    const entry = resolveDesired(deployment, await client.listAllRevisions(id));
    if (entry.kind === 'invalid') throw new Error(entry.message);
    if (!deployment.source_config.listener_id) throw new Error(`deployment ${id} is not bound to a listener`);
    const listener = await client.getListener(deployment.source_config.listener_id);
    const result = renderEntry(entry, { listener, allowedNamespaces }, config);
    const { target } = entry;
    const revision = target.revision;
    if (!result.ok || !target.settled || !revision) return result;
    const settled = `revision ${revision.id} is ${target.settled}: the agent does not roll it out on its own`;
    return { ok: true, value: { ...result.value, notes: [...result.value.notes, settled] } };
  } finally {
    await client.close();
  }
}

/** Offline rendering without a listener file: a listener that allows the deployment's namespace. */
function listenerFor(deployment: unknown): unknown {
  const sourceConfig =
    isRecord(deployment) && isRecord(deployment.source_config) ? deployment.source_config : {};
  const listenerConfig = isRecord(sourceConfig.listener_config) ? sourceConfig.listener_config : {};
  const namespace = typeof listenerConfig.k8s_namespace === 'string' ? [listenerConfig.k8s_namespace] : [];
  return {
    id: sourceConfig.listener_id ?? '00000000-0000-4000-8000-000000000000',
    compute_type: 'k8s',
    compute_id: 'offline',
    compute_config: { k8s_namespaces: namespace },
    created_at: '1970-01-01T00:00:00Z',
    updated_at: '1970-01-01T00:00:00Z',
  };
}

async function readStructured(path: string): Promise<unknown> {
  const text = await readFile(path, 'utf8');
  return path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
