// `k8s-listener suspend|resume [DEPLOYMENT | --all]`: takes a deployment (or the whole listener) out
// of the agent's hands during an incident, and gives it back. Recorded in the agent's namespace (it
// survives restarts and leader changes); the command waits until the leader acknowledges it.
import { userInfo } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { type AgentConfig, ConfigError } from '../config/agentConfig.ts';
import type { ControlPlaneClient } from '../controlplane/client.ts';
import { selfUserName } from '../kube/accessReview.ts';
import type { KubeClient } from '../kube/kubeClient.ts';
import { AGENT_NAME } from '../objects/ownership.ts';
import { listenerItems } from '../reconcile/loop/listenerItems.ts';
import { managedNamespaces } from '../reconcile/policy/managedNamespaces.ts';
import {
  changeSuspensions,
  describeSuspension,
  listenerKey,
  readSuspensions,
  SUSPENSIONS_CONFIGMAP,
  type Suspension,
  type Suspensions,
  suspensionOf,
  suspensionsRef,
} from '../reconcile/policy/suspensions.ts';
import { InventoryStore } from '../reconcile/steps/inventoryStore.ts';
import { terminalLine } from '../report/terminalText.ts';
import { type CommandSetup, commandSetup } from './commandSetup.ts';
import { CONFIG_FLAGS, CONFIG_FLAGS_USAGE } from './configFlags.ts';
import { EXIT_FAILED, EXIT_IN_PROGRESS, EXIT_USAGE } from './exitCodes.ts';

type Verb = 'suspend' | 'resume';
/** As the entry's schema allows (suspensions.ts). */
const REASON_MAX = 1024;

export const SUSPEND_USAGE = `Usage: k8s-listener suspend DEPLOYMENT [--reason TEXT] [options]
       k8s-listener suspend --all [--reason TEXT] [options]

Takes a deployment (a name or an id), or with --all every deployment of the listener, out of the
agent's hands: it neither applies nor prunes it — a hand edit stays, a deletion in the control
plane waits — and keeps reporting its rollout status. \`status\` shows it SUSPENDED with the reason,
who and when; an Event and the k8s_listener_suspended_deployments metric say so too. Recorded in
the ConfigMap ${SUSPENSIONS_CONFIGMAP} of the agent's namespace, so it survives restarts and
leader changes, until \`k8s-listener resume\`. The command returns once the agent's leader has
acknowledged it (it reads suspensions at each poll).

Exit code: 0 done and acknowledged; 3 recorded, not acknowledged within --timeout (is the agent
running?); 2 usage error or unknown deployment; 1 the change could not be written.
${CONFIG_FLAGS_USAGE}
  --reason TEXT          why (shown by status, in the Event and the logs)
  --all                  the whole listener
  --timeout SECONDS      how long to wait for the agent's acknowledgement (default 60; 0: do not wait)
`;

export const RESUME_USAGE = `Usage: k8s-listener resume DEPLOYMENT [options]
       k8s-listener resume --all [options]

Gives a suspended deployment (a name or an id), or with --all the listener, back to the agent:
it applies what the control plane asks for again, undoing hand edits, and prunes what was deleted
meanwhile. Resuming the listener leaves deployments suspended one by one as they are. Returns once
the agent's leader has acknowledged it.

Exit code: as for suspend.
${CONFIG_FLAGS_USAGE}
  --all                  the whole listener
  --timeout SECONDS      how long to wait for the agent's acknowledgement (default 60; 0: do not wait)
`;

export interface SuspendIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/** The deployment the command names is not this listener's (or the name is ambiguous). */
export class SuspendTargetError extends Error {
  override readonly name = 'SuspendTargetError';
  readonly code = 'SUSPEND_TARGET';
  readonly deployment: string;
  constructor(deployment: string, message: string) {
    super(message);
    this.deployment = deployment;
  }
}

export const runSuspendCommand = (argv: readonly string[], io?: SuspendIo) => runCommand('suspend', argv, io);
export const runResumeCommand = (argv: readonly string[], io?: SuspendIo) => runCommand('resume', argv, io);

async function runCommand(
  verb: Verb,
  argv: readonly string[],
  io: SuspendIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const commandUsage = verb === 'suspend' ? SUSPEND_USAGE : RESUME_USAGE;
  const usage = (message: string): number => {
    io.stderr.write(`${terminalLine(`${AGENT_NAME} ${verb}: ${message}`)}\n${commandUsage}`);
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
    io.stdout.write(commandUsage);
    return 0;
  }
  if (verb === 'resume' && values.reason !== undefined) return usage('--reason is for suspend');
  if ((values.reason?.length ?? 0) > REASON_MAX)
    return usage(`--reason is longer than ${REASON_MAX} characters`);
  if (values.all ? positionals.length > 0 : positionals.length !== 1)
    return usage('name one DEPLOYMENT, or --all for the whole listener');
  const timeoutMs = Number(values.timeout) * 1000;
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0)
    return usage(`--timeout must be a number of seconds, not ${values.timeout}`);

  let setup: CommandSetup;
  try {
    setup = await commandSetup(values, verb, { kubeTimeoutMs: 15_000 });
  } catch (error) {
    if (error instanceof ConfigError) return usage(error.message);
    throw error;
  }
  const { config, controlPlane } = setup;
  try {
    const kube = await setup.kube();
    const ref = suspensionsRef(config.agentNamespace);
    const current = async (): Promise<Suspensions> => readSuspensions(await kube.get(ref), config.listenerId);
    const before = await current();

    const target = values.all
      ? { key: listenerKey(config.listenerId), label: `listener ${config.listenerId}` }
      : await resolveDeployment(verb, positionals[0] ?? '', before, config, controlPlane, kube);
    const existing = values.all ? before.listener : before.deployments.get(target.key);
    if (verb === 'resume' && !existing) {
      io.stdout.write(terminalLine(`${target.label} is not suspended: nothing to resume`));
      return 0;
    }
    const entry: Suspension | null =
      verb === 'suspend'
        ? {
            reason: values.reason ?? '',
            by: (await selfUserName(kube)) ?? localUser(),
            at: new Date().toISOString(),
            ...('name' in target && target.name ? { name: target.name } : {}),
          }
        : null;
    const generation = await changeSuspensions(kube, config.agentNamespace, { key: target.key, entry });
    const done =
      entry === null
        ? `${target.label} resumed: the agent applies and prunes it again`
        : `${target.label} ${describeSuspension({ ...entry, scope: values.all ? 'listener' : 'deployment' })}`;
    io.stdout.write(terminalLine(done));
    if (timeoutMs === 0) return 0;

    // The leader acknowledges the generation it acts on at its next poll.
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = await current();
      if (now.acknowledged >= generation) {
        io.stdout.write('the agent acknowledged it\n');
        if (verb === 'resume' && !values.all) {
          const still = suspensionOf(now, target.key);
          if (still) io.stdout.write(terminalLine(`note: still ${describeSuspension(still)}`));
        }
        return 0;
      }
      if (Date.now() >= deadline) break;
      await sleep(500);
    }
    io.stderr.write(
      `${AGENT_NAME} ${verb}: recorded, but no agent of listener ${config.listenerId} acknowledged it within ${values.timeout} s (is it running? its leader reads suspensions at each poll)\n`,
    );
    return EXIT_IN_PROGRESS;
  } catch (error) {
    if (error instanceof SuspendTargetError) {
      io.stderr.write(terminalLine(`${AGENT_NAME} ${verb}: ${error.message}`));
      return EXIT_USAGE;
    }
    io.stderr.write(
      terminalLine(`${AGENT_NAME} ${verb}: ${error instanceof Error ? error.message : String(error)}`),
    );
    return EXIT_FAILED;
  } finally {
    await setup.close();
  }
}

/**
 * A deployment of this listener, by id or name: listed by the control plane, or still holding
 * objects here (an inventory). To resume, an id or name already suspended is enough (a deployment
 * deleted in the control plane while suspended is pruned after its resume).
 */
async function resolveDeployment(
  verb: Verb,
  nameOrId: string,
  suspensions: Suspensions,
  config: AgentConfig,
  controlPlane: ControlPlaneClient,
  kube: KubeClient,
): Promise<{ key: string; label: string; name?: string }> {
  const label = (id: string, name: string | undefined) =>
    name && name !== id ? `deployment ${name} (${id})` : `deployment ${id}`;
  if (verb === 'resume') {
    const suspended = [...suspensions.deployments].filter(
      ([id, s]) => id === nameOrId || s.name === nameOrId,
    );
    if (suspended.length === 1 && suspended[0]) {
      const [id, s] = suspended[0];
      return { key: id, label: label(id, s.name) };
    }
  }
  const listener = await controlPlane.getListener(config.listenerId);
  const listing = await controlPlane.listAllDeployments({ remote_reconciled: true });
  const ours = listenerItems(listing, config.listenerId, new Set()).mine;
  const byId = ours.filter((d) => d.id === nameOrId);
  const matches = byId.length > 0 ? byId : ours.filter((d) => d.name === nameOrId);
  if (matches.length > 1)
    throw new SuspendTargetError(
      nameOrId,
      `${matches.length} deployments are named ${nameOrId}; give one id: ${matches.map((d) => d.id).join(', ')}`,
    );
  const [found] = matches;
  if (found) return { key: found.id, label: label(found.id, found.name), name: found.name };
  // Gone from the control plane, its objects still here.
  const inventories = new InventoryStore(kube, config.listenerId);
  await inventories.load(managedNamespaces(listener, config.namespaces, config.agentNamespace));
  if (inventories.get(nameOrId).length > 0) return { key: nameOrId, label: label(nameOrId, undefined) };
  throw new SuspendTargetError(
    nameOrId,
    `no deployment named ${nameOrId} is bound to listener ${config.listenerId} or has objects in its namespaces`,
  );
}

function localUser(): string {
  try {
    return `${userInfo().username} (local user)`;
  } catch {
    return 'unknown';
  }
}

function parseFlags(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      ...CONFIG_FLAGS,
      reason: { type: 'string' },
      all: { type: 'boolean' },
      timeout: { type: 'string', default: '60' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
