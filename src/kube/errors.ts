// Typed errors of the Kubernetes client: they name the object and the verb, carry the API
// server's status and reason, and never echo what a Secret's Status message might contain.
import { formatRef } from '../objects/objectRef.ts';

export type KubeVerb = 'apply' | 'create' | 'get' | 'list' | 'watch' | 'update' | 'patch' | 'delete';

/** One entry of `Status.details.causes`: the field path and reason, never the message text. */
export interface KubeStatusCause {
  readonly field: string | undefined;
  readonly reason: string | undefined;
}

export interface KubeApiErrorDetails {
  readonly verb: KubeVerb;
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
  /** HTTP status; undefined when no response arrived (network error, timeout). */
  readonly status?: number | undefined;
  /** `Status.reason` (NotFound, Conflict, Invalid, Forbidden, Expired, …), or ClientTimeout / NetworkError. */
  readonly reason?: string | undefined;
  /** `Status.message`; dropped for Secrets (it may echo a value). */
  readonly serverMessage?: string | undefined;
  readonly causes?: readonly KubeStatusCause[];
  /**
   * `Status.details.kind`/`name`: what the failure is about, which need not be the object sent
   * (a create into a missing namespace answers 404 with kind `namespaces`).
   */
  readonly subject?: { readonly kind: string; readonly name: string | undefined } | undefined;
  readonly retryAfterMs?: number | undefined;
  readonly cause?: unknown;
}

export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  readonly code = 'KUBE_API';
  readonly verb: KubeVerb;
  readonly kind: string;
  readonly namespace: string | undefined;
  readonly objectName: string | undefined;
  /** `Kind/namespace/name` (a listing names `Kind/namespace`). */
  readonly ref: string;
  readonly status: number | undefined;
  readonly reason: string | undefined;
  readonly causes: readonly KubeStatusCause[];
  readonly subject: KubeApiErrorDetails['subject'];
  readonly retryAfterMs: number | undefined;

  constructor(details: KubeApiErrorDetails) {
    const ref = formatRef(details);
    super(
      `${ref} ${details.verb} failed: ${describe(details)}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.verb = details.verb;
    this.kind = details.kind;
    this.namespace = details.namespace;
    this.objectName = details.name;
    this.ref = ref;
    this.status = details.status;
    this.reason = details.reason;
    this.causes = details.causes ?? [];
    this.subject = details.subject;
    this.retryAfterMs = details.retryAfterMs;
  }
}

function describe(details: KubeApiErrorDetails): string {
  // A Secret's Status message can quote a rejected value: keep status, reason and field paths only.
  if (details.kind !== 'Secret' && details.serverMessage) return details.serverMessage;
  const status = details.status === undefined ? '' : `${details.status} `;
  const fields = (details.causes ?? []).map((cause) => cause.field).filter((field) => field !== undefined);
  const fieldText = fields.length > 0 ? ` (fields: ${fields.join(', ')})` : '';
  return `${status}${details.reason ?? 'error'}${fieldText}`;
}

/** The object a request referred to is not supported by this client's kind table. */
export class KubeUnsupportedKindError extends Error {
  override readonly name = 'KubeUnsupportedKindError';
  readonly code = 'KUBE_UNSUPPORTED_KIND';
  readonly apiVersion: string;
  readonly kind: string;

  constructor(apiVersion: string, kind: string) {
    super(`kind ${apiVersion}/${kind} is not in the kube client's table of managed kinds`);
    this.apiVersion = apiVersion;
    this.kind = kind;
  }
}

/** The server answered with something that is not a Kubernetes object or list. */
export class KubeResponseError extends Error {
  override readonly name = 'KubeResponseError';
  readonly code = 'KUBE_INVALID_RESPONSE';
  readonly verb: KubeVerb;
  readonly ref: string;

  constructor(verb: KubeVerb, ref: string, problem: string, options?: { cause?: unknown }) {
    super(`${ref} ${verb}: invalid response: ${problem}`, options);
    this.verb = verb;
    this.ref = ref;
  }
}

function hasStatus(error: unknown, status: number): boolean {
  return error instanceof KubeApiError && error.status === status;
}

export function isNotFound(error: unknown): boolean {
  return hasStatus(error, 404);
}

export function isConflict(error: unknown): boolean {
  return hasStatus(error, 409);
}

/**
 * The object was rejected as invalid: 422, a 400 (e.g. strict decoding of an unknown field), or a
 * server-side apply that did not fit the schema (which the API server answers with a 500).
 */
export function isInvalid(error: unknown): boolean {
  if (!(error instanceof KubeApiError)) return false;
  return error.status === 422 || error.status === 400 || (error.status === 500 && error.reason === 'Invalid');
}

export function isForbidden(error: unknown): boolean {
  return hasStatus(error, 403);
}

/** 410 Gone: a list continue token or a watch resourceVersion is too old. */
export function isGone(error: unknown): boolean {
  return hasStatus(error, 410);
}

/** The caller gave up (a lost lease, a shutdown): neither a failure of the object nor worth a retry. */
export function isAborted(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === undefined && error.reason === 'Aborted';
}

/** The NamespaceLifecycle admission's cause for writes into a namespace being deleted. */
const NAMESPACE_TERMINATING = 'NamespaceTerminating';

/**
 * The target namespace is missing or being deleted: a condition that can pass (the namespace is
 * created, or finishes terminating and is made again). Read from the Status structure, never the
 * message text, which the client shortens for Secrets.
 */
export function isNamespaceUnavailable(error: unknown): boolean {
  if (!(error instanceof KubeApiError)) return false;
  if (error.status === 404 && error.subject?.kind === 'namespaces') return true;
  return error.status === 403 && error.causes.some((cause) => cause.reason === NAMESPACE_TERMINATING);
}

/**
 * Worth retrying later without any change: no response, throttling, or a server-side failure.
 * Validation, conflicts of field ownership, and permission errors are not, and neither is an
 * aborted request (see `isAborted`).
 */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof KubeApiError)) return false;
  if (error.status === undefined) return error.reason !== 'Aborted';
  if (isInvalid(error)) return false;
  return error.status === 429 || error.status >= 500;
}
