// Validation of what the control plane sends: typed errors that name the JSON path and the
// resource id, and never echo a value (a value may be a secret).
import type { z } from 'zod';

export interface SchemaIssue {
  /** JSON path such as `source_config.resource_spec.volumes[0].name`. */
  readonly path: string;
  readonly message: string;
}

/**
 * Why a resource the control plane sent was refused: it fails its schema, it nests deeper than the
 * agent reads, or handling it threw (it is refused alone, whatever the error).
 */
export type InvalidResourceCode = 'SCHEMA_INVALID' | 'TOO_DEEP' | 'UNREADABLE';

export class SchemaValidationError extends Error {
  override readonly name = 'SchemaValidationError';
  readonly code: InvalidResourceCode;
  readonly resource: string;
  readonly resourceId: string | undefined;
  readonly issues: readonly SchemaIssue[];

  constructor(
    resource: string,
    resourceId: string | undefined,
    issues: readonly SchemaIssue[],
    code: InvalidResourceCode = 'SCHEMA_INVALID',
  ) {
    const what = resourceId === undefined ? resource : `${resource} ${resourceId}`;
    super(`${what} is invalid: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`);
    this.code = code;
    this.resource = resource;
    this.resourceId = resourceId;
    this.issues = issues;
  }
}

/**
 * What can still be read of a resource that failed validation, field by field: enough to know
 * whose it is and to report it, never a value beyond these.
 */
export interface ResourceIdentity {
  readonly name?: string | undefined;
  readonly listenerId?: string | undefined;
  readonly namespace?: string | undefined;
  readonly latestRevisionId?: string | undefined;
}

export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      readonly id: string | undefined;
      readonly error: SchemaValidationError;
      readonly identity?: ResourceIdentity | undefined;
    };

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? '(root)' : out;
}

/** The `id` of a raw resource, when it has a string one, so that errors can name it. */
export function rawId(data: unknown): string | undefined {
  if (typeof data === 'object' && data !== null && 'id' in data) {
    const id: unknown = data.id;
    if (typeof id === 'string' || typeof id === 'number') return String(id);
  }
  return undefined;
}

/** A schema's refusal as paths and messages (zod's messages name types and formats, not values). */
export function schemaIssues(error: z.ZodError): SchemaIssue[] {
  return error.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message }));
}

export function safeParseResource<S extends z.ZodType>(
  schema: S,
  data: unknown,
  resource: string,
  id: string | undefined = rawId(data),
  identify?: (data: unknown) => ResourceIdentity | undefined,
): Parsed<z.infer<S>> {
  const result = schema.safeParse(data);
  if (result.success) return { ok: true, value: result.data };
  const issues = schemaIssues(result.error);
  return {
    ok: false,
    id,
    error: new SchemaValidationError(resource, id, issues),
    identity: identify?.(data),
  };
}

export function parseResource<S extends z.ZodType>(
  schema: S,
  data: unknown,
  resource: string,
  id?: string,
): z.infer<S> {
  const parsed = safeParseResource(schema, data, resource, id ?? rawId(data));
  if (!parsed.ok) throw parsed.error;
  return parsed.value;
}
