// `k8s-listener status [DEPLOYMENT]`: where each deployment of the listener stands, read from the
// control plane and the cluster, as a table, JSON or YAML; an exit code scripts and CI can wait on.
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/agentConfig.ts';
import { isControlPlaneError } from '../controlplane/errors.ts';
import { AGENT_NAME } from '../objects/ownership.ts';
import {
  agentChangesWaiting,
  type DeploymentDetail,
  formatDeploymentDetail,
  formatStatusTable,
  type StatusList,
} from '../report/deploymentStatusRow.ts';
import { terminalJson, terminalLine, terminalYaml } from '../report/terminalText.ts';
import { type CommandSetup, commandDigestKey, commandSetup } from './commandSetup.ts';
import { CONFIG_FLAGS, CONFIG_FLAGS_USAGE } from './configFlags.ts';
import { EXIT_FAILED, EXIT_USAGE, statusExitCode } from './exitCodes.ts';
import {
  collectDeploymentDetail,
  collectStatusRows,
  StatusLookupError,
  type StatusSources,
} from './statusObserver.ts';

export const STATUS_USAGE = `Usage: k8s-listener status [DEPLOYMENT] [options] [--output table|json|yaml] [--watch]

Without DEPLOYMENT: one line per deployment of the listener: name, namespace, revision, ready/desired
replicas per workload, state, age of the last transition, message. With DEPLOYMENT (a name or an
id): that deployment in depth: its objects with their kstatus-style status, and its recent Events.
Read from the control plane and the cluster; give it the agent's own configuration (the same
--config), so that it compares the cluster with what the agent applies.

States: DEPLOYED; DEPLOYING (rolling out, or not yet applied by the agent); DRIFTED (changed or
deleted by hand: the agent puts it back); DEPLOY_FAILED (the message says why).

Exit code: 0 every deployment is DEPLOYED; 1 any is DEPLOY_FAILED (failure wins), or the status
could not be read; 3 any is DEPLOYING or DRIFTED; 2 usage error (unknown flag, bad --output,
unknown deployment, invalid configuration).
${CONFIG_FLAGS_USAGE}
  --output FORMAT        table (default), json or yaml
  --watch                refresh until Ctrl-C: in place on a terminal; otherwise the table (or
                         document) is printed again only when it changed
  --interval SECONDS     refresh period of --watch (default 2)
`;

export interface StatusIo {
  readonly stdout: NodeJS.WritableStream & { readonly isTTY?: boolean; readonly columns?: number };
  readonly stderr: NodeJS.WritableStream;
  /** Ends --watch (Ctrl-C by default). */
  readonly signal?: AbortSignal | undefined;
}

export type StatusOutput = 'table' | 'json' | 'yaml';
export type StatusSnapshot =
  | { readonly kind: 'list'; readonly value: StatusList }
  | { readonly kind: 'detail'; readonly value: DeploymentDetail };

export async function runStatusCommand(
  argv: readonly string[],
  io: StatusIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const usage = (message: string): number => {
    io.stderr.write(`${terminalLine(`${AGENT_NAME} status: ${message}`)}\n${STATUS_USAGE}`);
    return EXIT_USAGE;
  };
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(argv);
  } catch (error) {
    return usage(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(STATUS_USAGE);
    return 0;
  }
  const output = values.output;
  if (output !== 'table' && output !== 'json' && output !== 'yaml')
    return usage(`--output must be table, json or yaml, not ${output}`);
  if (positionals.length > 1) return usage(`one DEPLOYMENT at most, got ${positionals.join(' ')}`);
  const intervalMs = Number(values.interval) * 1000;
  if (!Number.isFinite(intervalMs) || intervalMs <= 0)
    return usage(`--interval must be a positive number of seconds, not ${values.interval}`);

  let setup: CommandSetup;
  try {
    setup = await commandSetup(values, 'status', { kubeTimeoutMs: 15_000 });
  } catch (error) {
    if (error instanceof ConfigError) return usage(error.message);
    throw error;
  }
  const { config, controlPlane } = setup;
  const { baseUrl } = config.controlPlane;
  try {
    const kube = await setup.kube();
    const sources: StatusSources = {
      controlPlane,
      kube,
      listenerId: config.listenerId,
      allowedNamespaces: config.namespaces,
      agentNamespace: config.agentNamespace,
      digestKey: await commandDigestKey(
        kube,
        config,
        io.stderr,
        "spec hashes cannot be compared with the agent's",
      ),
      renderConfig: config.render,
      failureGraceMs: config.reconcile.failureGraceMs,
    };
    const deployment = positionals[0];
    const take = async (): Promise<StatusSnapshot> => {
      if (deployment === undefined) {
        const deployments = await collectStatusRows(sources);
        return {
          kind: 'list',
          value: {
            listenerId: config.listenerId,
            observedAt: new Date().toISOString(),
            deployments,
            agentChangesWaiting: agentChangesWaiting(deployments),
          },
        };
      }
      return { kind: 'detail', value: await collectDeploymentDetail(sources, deployment) };
    };
    if (!values.watch) {
      const snapshot = await take();
      io.stdout.write(formatStatusSnapshot(snapshot, output, Date.now()));
      return exitCodeOf(snapshot);
    }
    return await watch(take, output, intervalMs, io, (error) => unreadable(error, baseUrl));
  } catch (error) {
    if (error instanceof StatusLookupError) {
      io.stderr.write(terminalLine(`${AGENT_NAME} status: ${error.message}`));
      return EXIT_USAGE;
    }
    io.stderr.write(terminalLine(`${AGENT_NAME} status: ${unreadable(error, baseUrl)}`));
    return EXIT_FAILED;
  } finally {
    await setup.close();
  }
}

/** Why the status could not be read, naming the control plane when it was the cause. */
function unreadable(error: unknown, baseUrl: string): string {
  const message = error instanceof Error ? error.message : String(error);
  return isControlPlaneError(error) ? `the control plane at ${baseUrl}: ${message}` : message;
}

function parseFlags(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      ...CONFIG_FLAGS,
      output: { type: 'string', short: 'o', default: 'table' },
      watch: { type: 'boolean', short: 'w' },
      interval: { type: 'string', default: '2' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

function exitCodeOf(snapshot: StatusSnapshot): number {
  return statusExitCode(snapshot.kind === 'list' ? snapshot.value.deployments : [snapshot.value.deployment]);
}

/** The snapshot as printed: the table formatters and the serializers escape what tenants wrote. */
export function formatStatusSnapshot(snapshot: StatusSnapshot, output: StatusOutput, now: number): string {
  if (output === 'json') return `${terminalJson(snapshot.value, 2)}\n`;
  if (output === 'yaml') return terminalYaml(snapshot.value, { lineWidth: 0 });
  return snapshot.kind === 'list'
    ? formatStatusTable(snapshot.value.deployments, now)
    : formatDeploymentDetail(snapshot.value, now);
}

/** What changes between two snapshots, apart from the time they were taken. */
function contentOf(snapshot: StatusSnapshot): string {
  return JSON.stringify({ ...snapshot.value, observedAt: undefined });
}

/**
 * Refreshes until the signal (Ctrl-C). On a terminal the table is redrawn in place with ANSI
 * cursor control, so ages tick; elsewhere (a pipe, a CI log) a new table or document is printed
 * only when something changed. Returns the exit code of the last status read.
 */
async function watch(
  take: () => Promise<StatusSnapshot>,
  output: StatusOutput,
  intervalMs: number,
  io: StatusIo,
  describe: (error: unknown) => string,
): Promise<number> {
  const stop = new AbortController();
  const onSigint = () => stop.abort();
  if (io.signal) io.signal.addEventListener('abort', onSigint, { once: true });
  else process.once('SIGINT', onSigint);
  const inPlace = output === 'table' && io.stdout.isTTY === true;
  let drawnLines = 0;
  let lastContent: string | undefined;
  let code = EXIT_FAILED;
  const draw = (text: string) => {
    // Up to the first line drawn last time, then clear to the end of the screen.
    const up = drawnLines > 0 ? `\x1b[${drawnLines}F\x1b[J` : '';
    io.stdout.write(`${up}${text}`);
    drawnLines = physicalLines(text, io.stdout.columns);
  };
  if (inPlace) io.stdout.write('\x1b[?25l');
  try {
    while (!stop.signal.aborted) {
      let text: string;
      let content: string;
      try {
        const snapshot = await take();
        code = exitCodeOf(snapshot);
        content = contentOf(snapshot);
        text =
          output === 'json'
            ? `${terminalJson(snapshot.value)}\n`
            : output === 'yaml'
              ? `---\n${formatStatusSnapshot(snapshot, output, Date.now())}`
              : formatStatusSnapshot(snapshot, output, Date.now());
      } catch (error) {
        if (error instanceof StatusLookupError) throw error;
        code = EXIT_FAILED;
        text = terminalLine(`status could not be read: ${describe(error)}`);
        content = text;
      }
      if (inPlace) {
        draw(`${text}\nEvery ${intervalMs / 1000}s; Ctrl-C to stop.\n`);
      } else if (content !== lastContent) {
        io.stdout.write(output === 'table' && lastContent !== undefined ? `\n${text}` : text);
      }
      lastContent = content;
      await sleep(intervalMs, undefined, { signal: stop.signal }).catch(() => undefined);
    }
  } finally {
    if (inPlace) io.stdout.write('\x1b[?25h');
    if (io.signal) io.signal.removeEventListener('abort', onSigint);
    else process.removeListener('SIGINT', onSigint);
  }
  return code;
}

/** Lines the text takes on a terminal `columns` wide (long lines wrap). */
export function physicalLines(text: string, columns: number | undefined): number {
  const width = columns && columns > 0 ? columns : Number.POSITIVE_INFINITY;
  return text
    .replace(/\n$/, '')
    .split('\n')
    .reduce((sum, line) => sum + Math.max(1, Math.ceil(line.length / width)), 0);
}
