// The one error type of kubeconfig loading and credential plugins: it names the file and the field,
// and is built only from paths, field names and fixed text, so it never carries a secret value.
import type { z } from 'zod';

export type KubeconfigErrorReason =
  /** No kubeconfig, or a file it names, could be found. */
  | 'not-found'
  /** A file exists but cannot be read. */
  | 'unreadable'
  /** The document or a field of it is malformed, or a reference (context, cluster, user) is missing. */
  | 'invalid'
  /** A valid setting this loader refuses (auth-provider, impersonation, proxy-url, interactive exec). */
  | 'unsupported'
  /** An exec credential plugin failed, timed out or printed something that is not an ExecCredential. */
  | 'exec-failed';

export interface KubeconfigErrorDetails {
  readonly reason: KubeconfigErrorReason;
  /** The kubeconfig file (or the service-account directory in-cluster). */
  readonly file?: string | undefined;
  /** Where in the document, e.g. `users[1].user.exec.command`. */
  readonly field?: string | undefined;
  /** What is wrong, in fixed words: never a value read from the file or a plugin. */
  readonly detail: string;
  /** Only causes known to hold no secret (file-system errors). */
  readonly cause?: unknown;
}

export class KubeconfigError extends Error {
  override readonly name = 'KubeconfigError';
  readonly code = 'KUBECONFIG';
  readonly reason: KubeconfigErrorReason;
  readonly file: string | undefined;
  readonly field: string | undefined;

  constructor(details: KubeconfigErrorDetails) {
    const where = [details.file, details.field].filter((part) => part !== undefined).join(': ');
    super(
      `${where === '' ? 'kubeconfig' : where}: ${details.detail}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.reason = details.reason;
    this.file = details.file;
    this.field = details.field;
  }
}

/** `users[1].user.exec` from `['users', 1, 'user', 'exec']`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * The first issue of a failed zod parse as a KubeconfigError. zod's messages name the expected
 * type, never the input, so they are safe to show.
 */
export function schemaError(
  error: z.ZodError,
  context: { readonly file?: string | undefined; readonly field?: string | undefined; readonly what: string },
  reason: KubeconfigErrorReason = 'invalid',
): KubeconfigError {
  const issue = error.issues[0];
  const inner = issue === undefined ? '' : fieldPath(issue.path);
  const field = [context.field, inner].filter((part) => part !== undefined && part !== '').join('.');
  return new KubeconfigError({
    reason,
    file: context.file,
    field: field === '' ? undefined : field.replace(/\.\[/g, '['),
    detail: `${context.what}: ${issue?.message ?? 'invalid'}`,
  });
}
