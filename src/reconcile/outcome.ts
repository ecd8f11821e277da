// What one reconcile came to, as controller-runtime has it: done, requeue after a delay, retry
// with backoff (transient), terminal (failed for good until the input changes) or aborted (cut
// off by its signal). reconcileWorker is the one place that turns an outcome into queue actions
// and metric labels.
import {
  isAborted,
  isConflict,
  isNamespaceUnavailable,
  isTransient,
  KubeApiError,
  type ObjectRef,
} from '../kube/index.ts';
import { ReconcileReason } from '../report/reconcileReason.ts';

/** Why a reconcile that needs nothing more was done (the `result` label of its duration). */
export type DoneDetail = 'ok' | 'deleted' | 'settled' | 'suspended';

export type ReconcileOutcome =
  | { readonly result: 'done'; readonly detail: DoneDetail }
  /**
   * Converging: look again after `afterMs`, no backoff. A rollout's recheck is `background`: it
   * waits, as a workload's status move does, behind the deployments not yet applied.
   */
  | { readonly result: 'requeue'; readonly afterMs: number; readonly background?: boolean }
  /**
   * Worth another try after a backoff (network, API server 5xx, conflicts; reported meanwhile: a
   * namespace not yet there, a WaitingError).
   */
  | { readonly result: 'retry'; readonly error: unknown }
  /** Failed and reported; not retried until the deployment changes (controller-runtime's TerminalError). */
  | { readonly result: 'terminal'; readonly error: TerminalError }
  /** Cut off by its signal (a lost lease, a shutdown): nothing reported, nothing recorded. */
  | { readonly result: 'aborted' };

export interface FailureOptions {
  readonly cause?: unknown;
  /**
   * Objects the deployment's pods must not use, found so by this failure (another's object under
   * a name its templates name, or its render makes): the workloads whose live template names one
   * are taken off it before the failure is reported (referenceUndo.ts).
   */
  readonly refused?: readonly (ObjectRef & { readonly namespace: string })[];
}

/** A failure that another attempt would not fix: reported, not retried until the input changes. */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  readonly code = 'TERMINAL';
  readonly reason: ReconcileReason;
  readonly refused: readonly (ObjectRef & { readonly namespace: string })[];

  constructor(reason: ReconcileReason, message: string, options?: FailureOptions) {
    super(message, options);
    this.reason = reason;
    this.refused = options?.refused ?? [];
  }
}

/**
 * A failure reported as the deployment's, yet retried with backoff: what it waits for can come
 * without any change of the deployment (an object its pods name, made later).
 */
export class WaitingError extends Error {
  override readonly name = 'WaitingError';
  readonly code = 'WAITING';
  readonly reason: ReconcileReason;
  readonly deploymentId: string;
  readonly refused: readonly (ObjectRef & { readonly namespace: string })[];

  constructor(reason: ReconcileReason, deploymentId: string, message: string, options?: FailureOptions) {
    super(message, options);
    this.reason = reason;
    this.deploymentId = deploymentId;
    this.refused = options?.refused ?? [];
  }
}

/**
 * The failures no retry fixes: ours (render, ownership) and the API server's refusals of what we
 * sent (4xx other than conflicts and throttling), as their Status classifies them.
 */
export function asTerminal(error: unknown): TerminalError | undefined {
  if (error instanceof TerminalError) return error;
  // A conflict is a race (a uid precondition, a resourceVersion): the agent's applies are forced,
  // so no field-ownership conflict reaches here. The next attempt reads again.
  if (error instanceof KubeApiError && !isTransient(error) && !isConflict(error))
    return new TerminalError(ReconcileReason.ApplyRejected, error.message, { cause: error });
  return undefined;
}

/** What a failed reconcile is, by its error: the one rule behind the outcome of every failure. */
export type FailureClass =
  /** Leadership lost or shutting down: not the deployment's failure; nothing said. */
  | { readonly kind: 'aborted' }
  /** Transient: the next attempt does the work again; nothing reported. */
  | { readonly kind: 'transient' }
  /** Reported as the deployment's, yet retried: what it waits for can come without any change of it. */
  | { readonly kind: 'waiting'; readonly failure: WaitingError | TerminalError }
  /** Reported; not retried until the input changes. */
  | { readonly kind: 'terminal'; readonly failure: TerminalError };

/**
 * Classifies a reconcile's error. `aborted`: the reconcile's own signal fired (whatever failed
 * then is not this deployment's failure, and the next leader reconciles it again). A WaitingError
 * waits (raised where it arises: a namespace not there, a reference not made yet); the API
 * server's refusals are terminal; anything else is transient. Pure.
 */
export function classify(error: unknown, aborted: boolean): FailureClass {
  if (aborted || isAborted(error)) return { kind: 'aborted' };
  if (error instanceof WaitingError) return { kind: 'waiting', failure: error };
  const failure = asTerminal(error);
  return failure ? { kind: 'terminal', failure } : { kind: 'transient' };
}

/**
 * A write refused because its namespace is not there, or is terminating, waits: it may be created
 * (or finish terminating) later, with no change of the deployment. Raised where the write is made
 * (the applier, the inventory record), by the Status, not its text. Any other error as it is.
 */
export function namespaceWaiting(error: unknown, deploymentId: string): unknown {
  if (!(error instanceof KubeApiError) || !isNamespaceUnavailable(error)) return error;
  const where = error.namespace ?? 'its namespace';
  return new WaitingError(
    ReconcileReason.NamespaceMissing,
    deploymentId,
    `namespace ${where} does not exist or is terminating: nothing is applied there until it exists (${error.message})`,
    { cause: error },
  );
}
