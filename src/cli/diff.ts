// `k8s-listener diff [DEPLOYMENT]`: what `run` would change, like `kubectl diff` — one unified
// diff per object (dry-run server-side apply against the live object), plus what would be pruned.
import { parseArgs } from 'node:util';
import type { AgentConfig } from '../config/agentConfig.ts';
import type { Listener } from '../controlplane/schemas/index.ts';
import type { ChangeSetEntry } from '../kube/serverDiff.ts';
import { managedNamespaces } from '../reconcile/policy/managedNamespaces.ts';
import { readSuspensions, suspensionOf, suspensionsRef } from '../reconcile/policy/suspensions.ts';
import { countChanges, describeCounts, formatChange } from '../report/changeSetText.ts';
import { terminalJson, terminalLine, terminalYaml } from '../report/terminalText.ts';
import { commandDigestKey, commandSetup } from './commandSetup.ts';
import { CONFIG_FLAGS, CONFIG_FLAGS_USAGE } from './configFlags.ts';
import { type DeploymentPreview, type Preview, previewListener } from './diffPreview.ts';
import { EXIT_DIFFERENCES, EXIT_OK, EXIT_USAGE } from './exitCodes.ts';

export const DIFF_USAGE = `Usage: k8s-listener diff [DEPLOYMENT] [options] [--output diff|json|yaml]

Shows what \`run\` would change, changing nothing: for each deployment of the listener (or only
DEPLOYMENT, by id or name), the objects it renders from its target revision, compared with the
live ones by a server-side apply with dryRun=All, as one unified diff per object (like
\`kubectl diff\`), and the objects that would be pruned (left the desired set, or the deployment
is AWAITING_DELETE or gone). Server-maintained fields (managedFields, resourceVersion, uid,
generation, timestamps, status) are left out. Secret values are never printed: each key of a
Secret reads (added), (removed), (changed) or (unchanged).
Exit status: 0 nothing would change, 1 something would, 2 an error (a deployment that is invalid
or would fail, the control plane or the cluster unreachable, usage); the others are still shown.
${CONFIG_FLAGS_USAGE}
  --output FORMAT        diff (default), json or yaml
`;

export interface DiffIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

const OUTPUTS = ['diff', 'json', 'yaml'] as const;
export type DiffOutput = (typeof OUTPUTS)[number];

/** A usage or setup problem: exit status 2, with the message. */
class DiffSetupError extends Error {
  override readonly name = 'DiffSetupError';
  readonly code = 'DIFF_SETUP';
}

export async function runDiffCommand(
  argv: readonly string[],
  io: DiffIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  // Exit status 1 means "differences": every failure, usage included, must be 2.
  try {
    return await diff(argv, io);
  } catch (error) {
    io.stderr.write(
      terminalLine(`k8s-listener diff: ${error instanceof Error ? error.message : String(error)}`),
    );
    return EXIT_USAGE;
  }
}

async function diff(argv: readonly string[], io: DiffIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      ...CONFIG_FLAGS,
      output: { type: 'string', default: 'diff' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    io.stdout.write(DIFF_USAGE);
    return 0;
  }
  if (positionals.length > 1)
    throw new DiffSetupError(`at most one DEPLOYMENT, not ${positionals.join(' ')}`);
  const output = values.output as DiffOutput;
  if (!OUTPUTS.includes(output))
    throw new DiffSetupError(`--output must be diff, json or yaml, not ${values.output}`);
  // Logs go to stderr, and only warnings unless asked for: stdout is the diff.
  const setup = await commandSetup(values, 'diff', { quietLogLevel: 'warn' });
  const { config, controlPlane: client } = setup;
  try {
    const kube = await setup.kube();
    const listener = await client.getListener(config.listenerId);
    // As the agent reads them: a suspended deployment is shown suspended, not as changes run would make.
    const suspensions = readSuspensions(await kube.get(suspensionsRef(config.agentNamespace)), listener.id);
    const preview = await previewListener(
      {
        kube,
        client,
        listener,
        namespaces: servedBy(config, listener),
        allowedNamespaces: config.namespaces,
        digestKey: await commandDigestKey(
          kube,
          config,
          io.stderr,
          'digests (spec-hash, config-checksum) could not be compared and are masked',
        ),
        renderConfig: config.render,
        reconcileConfig: config.reconcile,
        suspension: (id) => suspensionOf(suspensions, id),
      },
      positionals[0],
    );
    for (const warning of preview.warnings) io.stderr.write(terminalLine(`warning: ${warning}`));
    io.stderr.write(problemsText(preview));
    io.stdout.write(formatDiffOutput(preview, output));
    return exitStatus(preview);
  } finally {
    await setup.close();
  }
}

/** As the agent: the listener's namespaces within the allow-list; a listener that leaves none is an error here. */
function servedBy(config: AgentConfig, listener: Listener): string[] {
  if (listener.compute_type !== 'k8s')
    throw new DiffSetupError(`listener ${listener.id} has compute type ${listener.compute_type}, not k8s`);
  const namespaces = managedNamespaces(listener, config.namespaces, config.agentNamespace);
  if (namespaces.length === 0)
    throw new DiffSetupError(`listener ${listener.id} leaves no namespace to manage`);
  return namespaces;
}

/** 2 when any deployment could not be compared, else 1 when anything would change, else 0. */
export function exitStatus(preview: Preview): number {
  if (preview.deployments.some((d) => d.state === 'invalid' || d.state === 'failed')) return EXIT_USAGE;
  const changed = preview.deployments.some(
    (d) =>
      (d.state === 'present' || d.state === 'deleted') && d.changes.some((c) => c.action !== 'unchanged'),
  );
  return changed ? EXIT_DIFFERENCES : EXIT_OK;
}

/** What diff prints on stdout: the text, or the document, each escaping what tenants wrote. */
export function formatDiffOutput(preview: Preview, output: DiffOutput): string {
  if (output === 'diff') return diffText(preview);
  const document = machineReadable(preview);
  return output === 'json' ? `${terminalJson(document, 2)}\n` : terminalYaml(document, { lineWidth: 0 });
}

/** The text output: a comment line per deployment, its objects' diffs, and a closing total. */
export function diffText(preview: Preview): string {
  const out: string[] = [];
  const all: ChangeSetEntry[] = [];
  for (const d of preview.deployments) {
    if (d.state === 'invalid' || d.state === 'failed') {
      out.push(
        terminalLine(
          `# ${title(d)}: ${d.state === 'invalid' ? 'invalid' : 'would fail'}, nothing compared (see stderr)`,
        ),
      );
      continue;
    }
    if (d.state === 'suspended') {
      out.push(terminalLine(`# ${title(d)}: ${d.suspension}; run changes nothing until it is resumed`));
      continue;
    }
    all.push(...d.changes);
    const where =
      d.state === 'present'
        ? `namespace ${d.namespace}, revision ${d.revisionId ?? 'none'}`
        : d.reason === 'gone'
          ? 'gone from the control plane'
          : 'AWAITING_DELETE';
    out.push(terminalLine(`# ${title(d)}, ${where}: ${describeCounts(countChanges(d.changes))}`));
    if (d.state === 'present' && d.agentChange)
      out.push(
        terminalLine(
          "#   the agent's own new render of the same revision: run applies it when its turn comes (reconcile.agentChangeRate)",
        ),
      );
    for (const change of d.changes) out.push(formatChange(change));
  }
  const total = countChanges(all);
  out.push(
    total.create + total.configure + total.prune === 0 ? 'no changes\n' : `${describeCounts(total)}\n`,
  );
  return out.join('');
}

function title(d: DeploymentPreview): string {
  return d.name === undefined ? `deployment ${d.id}` : `deployment ${d.name} (${d.id})`;
}

/** What diff prints on stderr of the deployments it could not compare: each problem a line. */
export function problemsText(preview: Preview): string {
  return preview.deployments
    .flatMap((d) => {
      if (d.state === 'invalid')
        return [
          terminalLine(`${title(d)} is invalid:`),
          ...d.problems.map((p) => terminalLine(`  ${p.path}: ${p.message}`)),
        ];
      if (d.state === 'failed') return [terminalLine(`${title(d)} would fail: ${d.message}`)];
      return [];
    })
    .join('');
}

/** The json and yaml output: every deployment, with the before and after of each changed object. */
function machineReadable(preview: Preview) {
  const deployments = preview.deployments.map((d) =>
    d.state === 'present' || d.state === 'deleted'
      ? {
          ...d,
          summary: countChanges(d.changes),
          // Unchanged objects: named, not repeated.
          changes: d.changes.map((c) => (c.action === 'unchanged' ? { ref: c.ref, action: c.action } : c)),
        }
      : d,
  );
  const changes = preview.deployments.flatMap((d) =>
    d.state === 'present' || d.state === 'deleted' ? d.changes : [],
  );
  return {
    exitStatus: exitStatus(preview),
    summary: countChanges(changes),
    warnings: preview.warnings,
    deployments,
  };
}
