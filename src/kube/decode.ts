// What the API server answers, decoded: objects, list pages and watch events through zod schemas,
// and a Status body into a KubeApiError (reason, causes, details; never a Secret's message).
import { z } from 'zod';
import { parseJsonOrUndefined } from '../jsonText.ts';
import type { KubeObject } from '../objects/kubeObject.ts';
import { formatRef } from '../objects/objectRef.ts';
import { KubeApiError, KubeResponseError, type KubeStatusCause, type KubeVerb } from './errors.ts';
import type { ResourceType } from './resources.ts';

/** Metadata of an object read back from the API server. */
export interface LiveObjectMeta {
  name: string;
  namespace?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** '' only for dry-run creations. */
  uid: string;
  /** '' only for dry-run creations. */
  resourceVersion: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  [key: string]: unknown;
}

/** An object as the API server returned it (status included); a `KubeObject` with server metadata. */
export interface LiveKubeObject extends KubeObject {
  metadata: LiveObjectMeta;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** One event of a watch stream. `ERROR` events are thrown as `KubeApiError` (410 → `isGone`). */
export interface RawWatchEvent {
  readonly type: WatchEventType;
  readonly object: LiveKubeObject;
}

/** What a request was about, for errors: `Kind/namespace/name`. */
export interface RequestTarget {
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
}

const MAX_ERROR_TEXT = 300;

const StringMap = z.record(z.string(), z.string());
const LiveObjectSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z.looseObject({
    name: z.string(),
    // Absent, not undefined, when missing: the types below say `namespace?: string`.
    namespace: z.string().exactOptional(),
    labels: StringMap.nullish(),
    annotations: StringMap.nullish(),
    uid: z.string().default(''),
    resourceVersion: z.string().default(''),
    generation: z.number().exactOptional(),
    creationTimestamp: z.string().exactOptional(),
    deletionTimestamp: z.string().exactOptional(),
  }),
});
const ListSchema = z.looseObject({
  metadata: z.looseObject({
    resourceVersion: z.string().optional(),
    continue: z.string().optional(),
  }),
  items: z.array(z.unknown()).nullish(),
});
const StatusSchema = z.looseObject({
  kind: z.literal('Status'),
  message: z.string().optional(),
  reason: z.string().optional(),
  code: z.number().optional(),
  details: z
    .looseObject({
      causes: z
        .array(z.looseObject({ field: z.string().optional(), reason: z.string().optional() }))
        .optional(),
      retryAfterSeconds: z.number().optional(),
      kind: z.string().optional(),
      name: z.string().optional(),
    })
    .optional(),
});
const BookmarkSchema = z.object({ metadata: z.object({ resourceVersion: z.string().min(1) }) });
const WatchEventSchema = z.object({
  type: z.enum(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']),
  object: z.unknown(),
});
/** A Node or undici error carries a string `code` (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, …). */
const CodedSchema = z.looseObject({ code: z.string() });

/** A response body that must be one object. */
export function decodeObject(text: string, verb: KubeVerb, target: RequestTarget): LiveKubeObject {
  const parsed = LiveObjectSchema.safeParse(parseJsonOrUndefined(text));
  if (!parsed.success) throw new KubeResponseError(verb, formatRef(target), 'not a Kubernetes object');
  return normalize(parsed.data);
}

/** One page of a listing: its items (which omit apiVersion and kind), version and continue token. */
export function decodeListPage(
  text: string,
  type: ResourceType,
  target: RequestTarget,
): { items: LiveKubeObject[]; resourceVersion: string; continueToken: string | undefined } {
  const page = ListSchema.safeParse(parseJsonOrUndefined(text));
  if (!page.success) throw new KubeResponseError('list', formatRef(target), 'not a list');
  const items = (page.data.items ?? []).map((raw) => {
    const parsed = LiveObjectSchema.safeParse(withKind(raw, type));
    if (!parsed.success)
      throw new KubeResponseError('list', formatRef(target), 'an item is not a Kubernetes object');
    return normalize(parsed.data);
  });
  return {
    items,
    resourceVersion: page.data.metadata.resourceVersion ?? '',
    continueToken: page.data.metadata.continue || undefined,
  };
}

/** One line of a watch stream; an `ERROR` event is thrown as the KubeApiError its Status describes. */
export function decodeWatchEvent(line: string, type: ResourceType, target: RequestTarget): RawWatchEvent {
  const ref = formatRef(target);
  const event = WatchEventSchema.safeParse(parseJsonOrUndefined(line));
  if (!event.success) throw new KubeResponseError('watch', ref, 'not a watch event');
  if (event.data.type === 'ERROR') {
    const status = StatusSchema.safeParse(event.data.object);
    throw new KubeApiError({
      verb: 'watch',
      ...target,
      status: status.success ? status.data.code : undefined,
      reason: status.success ? status.data.reason : 'InvalidStatus',
      serverMessage: status.success ? status.data.message : undefined,
    });
  }
  const raw = event.data.object;
  if (event.data.type === 'BOOKMARK') {
    // A bookmark carries only a resourceVersion (no name, no uid).
    const bookmark = BookmarkSchema.safeParse(raw);
    if (!bookmark.success) throw new KubeResponseError('watch', ref, 'a bookmark has no resourceVersion');
    const metadata = { name: '', labels: {}, annotations: {}, uid: '', ...bookmark.data.metadata };
    return { type: 'BOOKMARK', object: { apiVersion: type.apiVersion, kind: type.kind, metadata } };
  }
  const parsed = LiveObjectSchema.safeParse(withKind(raw, type));
  if (!parsed.success)
    throw new KubeResponseError('watch', ref, 'an event object is not a Kubernetes object');
  return { type: event.data.type, object: normalize(parsed.data) };
}

/** An answer ≥ 400 as a KubeApiError, from its Status body when it has one. */
export function statusError(
  verb: KubeVerb,
  target: RequestTarget,
  status: number,
  text: string,
): KubeApiError {
  const parsed = StatusSchema.safeParse(parseJsonOrUndefined(text));
  const body = parsed.success ? parsed.data : undefined;
  const causes: KubeStatusCause[] = (body?.details?.causes ?? []).map((cause) => ({
    field: cause.field,
    reason: cause.reason,
  }));
  const retryAfter = body?.details?.retryAfterSeconds;
  // Server-side apply reports a patch that does not fit the schema (unknown or mistyped field)
  // as a 500 without reason; it is an invalid object, not a server failure.
  const typedPatch = status === 500 && body?.message?.startsWith('failed to create typed patch object');
  if (typedPatch) {
    const field = /\): (\.[^\s:]+):/.exec(body?.message ?? '')?.[1];
    if (field !== undefined) causes.push({ field: field.slice(1), reason: 'FieldValueInvalid' });
  }
  return new KubeApiError({
    verb,
    ...target,
    status,
    reason: typedPatch ? 'Invalid' : (body?.reason ?? `HTTP${status}`),
    serverMessage: body?.message ?? (text.slice(0, MAX_ERROR_TEXT) || undefined),
    causes,
    subject:
      body?.details?.kind === undefined ? undefined : { kind: body.details.kind, name: body.details.name },
    retryAfterMs: retryAfter === undefined ? undefined : retryAfter * 1000,
  });
}

/** A request that got no answer in time (our timeout signal or undici's own timers). */
export function isTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = CodedSchema.safeParse(error).data?.code;
  return (
    error.name === 'TimeoutError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  );
}

/** ` (ECONNREFUSED)` and the like, from the error or its cause; '' when there is none. */
export function errorCode(error: unknown): string {
  if (!(error instanceof Error)) return '';
  const found = CodedSchema.safeParse(error).data?.code ?? CodedSchema.safeParse(error.cause).data?.code;
  return found === undefined ? '' : ` (${found})`;
}

function withKind(raw: unknown, type: ResourceType): unknown {
  return typeof raw === 'object' && raw !== null
    ? { apiVersion: type.apiVersion, kind: type.kind, ...raw }
    : raw;
}

function normalize(raw: z.infer<typeof LiveObjectSchema>): LiveKubeObject {
  const { labels, annotations, ...metadata } = raw.metadata;
  return { ...raw, metadata: { ...metadata, labels: labels ?? {}, annotations: annotations ?? {} } };
}
