// Registration with the control plane: read this agent's listener (retrying while the control plane
// is unreachable, until the shutdown signal), check it is a k8s listener, take its namespaces; and,
// once leading, record the agent's version on it.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { ControlPlaneClient } from '../controlplane/client.ts';
import { isControlPlaneError } from '../controlplane/errors.ts';
import type { Listener } from '../controlplane/schemas/index.ts';
import type { EventRecorder, EventSubject } from '../kube/events.ts';
import { managedNamespaces } from '../reconcile/policy/managedNamespaces.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import { AGENT_VERSION } from '../version.ts';
import { retryUntilAborted } from './retryUntilAborted.ts';

/** Refused at start: a missing listener, a wrong compute type, refused credentials. */
export class RegistrationError extends Error {
  override readonly name = 'RegistrationError';
  readonly code = 'REGISTRATION';
}

export interface Registration {
  readonly listener: Listener;
  /** The listener's namespaces that the agent's own allow-list keeps (never empty). */
  readonly namespaces: readonly string[];
}

export interface RegisterOptions {
  readonly client: Pick<ControlPlaneClient, 'getListener'>;
  readonly listenerId: string;
  /** The agent's own allow-list; undefined lets the listener's namespaces stand. */
  readonly allowedNamespaces: readonly string[] | undefined;
  /** The agent's own namespace: never managed, whatever the listener lists (its ServiceAccount and Secrets live there). */
  readonly agentNamespace: string;
  readonly logger: Logger;
  /** Ends the retries: register rejects with its reason. */
  readonly signal: AbortSignal;
}

/** Registers; throws RegistrationError for what no retry fixes, or the signal's reason. */
export async function register(options: RegisterOptions): Promise<Registration> {
  const { client, listenerId, signal, logger } = options;
  const listener = await retryUntilAborted(() => client.getListener(listenerId, { signal }), {
    signal,
    firstDelayMs: 2_000,
    onFailure: (error, attempt, delayMs) => {
      if (isControlPlaneError(error, 404))
        throw new RegistrationError(`listener ${listenerId} does not exist at the control plane`, {
          cause: error,
        });
      if (isControlPlaneError(error, 401) || isControlPlaneError(error, 403)) {
        throw new RegistrationError('the control plane refused the API key', { cause: error });
      }
      logger.warn({ err: error, attempt, delayMs }, 'reading the listener failed; retrying');
    },
  });
  if (listener === undefined) throw signal.reason;
  if (listener.compute_type !== 'k8s') {
    throw new RegistrationError(`listener ${listenerId} has compute type ${listener.compute_type}, not k8s`);
  }
  const namespaces = managedNamespaces(listener, options.allowedNamespaces, options.agentNamespace);
  if (namespaces.length === 0) {
    const listed = listener.compute_config?.k8s_namespaces ?? [];
    throw new RegistrationError(
      `listener ${listenerId} leaves no namespace to manage (listener: ${listed.join(', ') || 'none'}; agent allow-list: ${options.allowedNamespaces?.join(', ') ?? 'unset'})`,
    );
  }
  logger.info({ listenerId, computeId: listener.compute_id, namespaces }, 'registered');
  return { listener, namespaces };
}

export interface RecordVersionOptions {
  readonly client: Pick<ControlPlaneClient, 'getListener' | 'putListener'>;
  /** The listener as last read: returned as it is when the control plane cannot be read. */
  readonly listener: Listener;
  readonly logger: Logger;
  readonly metrics: Pick<AgentMetrics, 'listenerEditConflicts'>;
  readonly events: Pick<EventRecorder, 'record'>;
  /** What a listener-wide Event is about: an object of the agent's own. */
  readonly eventSubject: EventSubject;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Records this agent's version on the listener (by the leader only: one writer to the control
 * plane), and only when the listener records another one. Returns the listener as stored after it
 * (so that the caller follows an edit made meanwhile); on a failure, logs it and returns the one given.
 *
 * PUT replaces the whole listener and the interface offers no concurrency token, so the write
 * sends back the namespaces just read: an operator's edit that lands between that read and the
 * write is overwritten, and nothing the control plane answers afterwards shows it. That window is
 * kept to one request (no other await between them) and opened once per agent version. An edit
 * that crosses the write (read before it, stored after it) does show: the listener is re-read
 * after the write, and namespaces or compute configuration other than those read are warned of
 * (log, Event, metric).
 */
export async function recordVersion(options: RecordVersionOptions): Promise<Listener> {
  const { client, listener, logger, signal } = options;
  let read: Listener;
  let written: Listener;
  try {
    read = await client.getListener(listener.id, { signal });
    if (read.version === AGENT_VERSION) return read;
    written = await client.putListener(read.id, {
      compute_type: read.compute_type,
      compute_id: read.compute_id,
      compute_config: read.compute_config ?? null,
      version: AGENT_VERSION,
    });
  } catch (error) {
    if (!signal?.aborted)
      logger.warn(
        { err: error, listenerId: listener.id },
        'could not record the agent version on the listener',
      );
    return listener;
  }
  let stored: Listener;
  try {
    stored = await client.getListener(listener.id, { signal });
  } catch (error) {
    if (!signal?.aborted)
      logger.warn(
        { err: error, listenerId: listener.id },
        'could not re-read the listener after recording the agent version: an edit made meanwhile is not checked',
      );
    return written;
  }
  const before = operatorFields(read);
  const after = operatorFields(stored);
  if (!isDeepStrictEqual(before, after)) await warnEditConflict(options, before, after, stored);
  return stored;
}

/** What an operator edits on a listener (its type and id cannot change), as the agent compares it. */
interface OperatorFields {
  /** Sorted: their order means nothing to the agent. */
  readonly namespaces: readonly string[];
  /** The rest of compute_config, a null value taken as absent (every field there is nullable). */
  readonly otherConfig: Readonly<Record<string, unknown>>;
}

function operatorFields(listener: Listener): OperatorFields {
  const { k8s_namespaces, ...rest } = listener.compute_config ?? {};
  return {
    namespaces: [...(k8s_namespaces ?? [])].sort(),
    otherConfig: Object.fromEntries(Object.entries(rest).filter(([, value]) => value != null)),
  };
}

async function warnEditConflict(
  options: RecordVersionOptions,
  before: OperatorFields,
  after: OperatorFields,
  stored: Listener,
): Promise<void> {
  const listenerId = stored.id;
  // Names only: the values of keys the agent does not know are not its to print.
  const otherKeysChanged = [
    ...new Set([...Object.keys(before.otherConfig), ...Object.keys(after.otherConfig)]),
  ]
    .filter((key) => !isDeepStrictEqual(before.otherConfig[key], after.otherConfig[key]))
    .sort();
  const versionKept = stored.version === AGENT_VERSION;
  const list = (namespaces: readonly string[]) => `[${namespaces.join(', ')}]`;
  const what =
    `listener ${listenerId} changed while the agent recorded its version ${AGENT_VERSION} on it: ` +
    `namespaces ${list(before.namespaces)} read before the write, ${list(after.namespaces)} stored after it` +
    (otherKeysChanged.length > 0 ? `, compute_config ${otherKeysChanged.join(', ')} changed` : '') +
    (versionKept ? '' : '; the version was not kept (recorded again at the next leader start)');
  const advice = 'the agent follows what is stored; check that the listener holds the edit that was meant';
  options.metrics.listenerEditConflicts.inc();
  options.logger.warn(
    {
      listenerId,
      namespacesRead: before.namespaces,
      namespacesStored: after.namespaces,
      otherKeysChanged,
      versionKept,
    },
    `${what}; ${advice}`,
  );
  await options.events.record(options.eventSubject, {
    type: 'Warning',
    reason: 'ListenerEditConflict',
    action: 'RecordVersion',
    note: `${what}; ${advice}`,
  });
}
