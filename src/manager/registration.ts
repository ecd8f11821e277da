// Registration with the control plane: read this agent's listener (retrying while the control plane
// is unreachable, until the shutdown signal), check it is a k8s listener, take its namespaces.
import type { Logger } from 'pino';
import type { ControlPlaneClient } from '../controlplane/client.ts';
import { isControlPlaneError } from '../controlplane/errors.ts';
import type { Listener } from '../controlplane/schemas/index.ts';
import { managedNamespaces } from '../reconcile/managedNamespaces.ts';
import { sleep } from '../sleep.ts';
import { AGENT_VERSION } from '../version.ts';

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
  let listener: Listener;
  for (let attempt = 1; ; attempt++) {
    try {
      listener = await client.getListener(listenerId, { signal });
      break;
    } catch (error) {
      if (isControlPlaneError(error, 404))
        throw new RegistrationError(`listener ${listenerId} does not exist at the control plane`, {
          cause: error,
        });
      if (isControlPlaneError(error, 401) || isControlPlaneError(error, 403)) {
        throw new RegistrationError('the control plane refused the API key', { cause: error });
      }
      if (signal.aborted) throw signal.reason;
      const delay = Math.min(30_000, 1_000 * 2 ** attempt);
      logger.warn({ err: error, attempt, delayMs: delay }, 'reading the listener failed; retrying');
      await sleep(delay, signal);
    }
  }
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

/**
 * Records this agent's version on the listener (by the leader only: one writer to the control
 * plane). Returns the listener as stored; on a failure, logs it and returns the one given.
 */
export async function recordVersion(
  client: Pick<ControlPlaneClient, 'getListener' | 'putListener'>,
  listener: Listener,
  logger: Logger,
): Promise<Listener> {
  try {
    // PUT replaces the whole listener: start from what it holds now, not from the copy read at
    // registration, or a namespace someone changed meanwhile would be put back.
    const current = await client.getListener(listener.id);
    if (current.version === AGENT_VERSION) return current;
    return await client.putListener(current.id, {
      compute_type: current.compute_type,
      compute_id: current.compute_id,
      compute_config: current.compute_config ?? null,
      version: AGENT_VERSION,
    });
  } catch (error) {
    logger.warn({ err: error }, 'could not record the agent version on the listener');
    return listener;
  }
}
