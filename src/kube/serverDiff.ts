// Server-side diff, after fluxcd/pkg/ssa: what an apply would make of one object, computed by a
// dry-run server-side apply against the live object, with the server's bookkeeping stripped and
// Secret values replaced by what happens to each key. Apply itself stays in kubeClient.ts.
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from '../objects/kubeObject.ts';
import type { CallOptions, KubeClient, LiveKubeObject } from './kubeClient.ts';
import { type ObjectRef, refOf } from './resources.ts';

export type ChangeAction = 'create' | 'configure' | 'unchanged' | 'prune';

/** One object of a change set: what it is now and what it would be (both stripped and masked). */
export interface ChangeSetEntry {
  readonly ref: ObjectRef;
  readonly action: ChangeAction;
  /** The live object; undefined when it does not exist yet. */
  readonly before: Record<string, unknown> | undefined;
  /** The object after the apply; undefined when it would be pruned. */
  readonly after: Record<string, unknown> | undefined;
  /** Why `run` writes it, in the words its log uses (`missing`, `spec changed`, a drifted field's path). */
  readonly reason?: string | undefined;
}

export interface DryRunDiffOptions extends CallOptions {
  /** SSA `force`, as the real apply would send it. */
  readonly force: boolean;
  /**
   * The object is created once and never overwritten (a generated Secret): an existing one is
   * unchanged by definition, a missing one is a dry-run create.
   */
  readonly createOnly?: boolean | undefined;
}

/** What marks a Secret key instead of its value, on both sides of a diff. */
export type SecretKeyChange = '(added)' | '(removed)' | '(changed)' | '(unchanged)';

/** Metadata the API server maintains: never part of what an apply changes. */
const SERVER_METADATA = [
  'managedFields',
  'resourceVersion',
  'generation',
  'uid',
  'creationTimestamp',
  'selfLink',
] as const;
/** kubectl's client-side apply record: noise here, and a copy of every value of a Secret. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * The change an apply of `desired` would make to `live` (read by the caller, which decides
 * whether the object may be touched at all). Two dry-run requests at most, never a write.
 */
export async function dryRunDiff(
  kube: Pick<KubeClient, 'apply' | 'create'>,
  desired: KubeObject,
  live: LiveKubeObject | undefined,
  opts: DryRunDiffOptions,
): Promise<ChangeSetEntry> {
  const ref = refOf(desired);
  if (opts.createOnly === true && live !== undefined) {
    const [before, after] = maskSecretPair(stripServerFields(live), stripServerFields(live));
    return { ref, action: 'unchanged', before, after };
  }
  const call = { signal: opts.signal, timeoutMs: opts.timeoutMs };
  const result =
    opts.createOnly === true
      ? await kube.create(desired, { ...call, dryRun: true })
      : await kube.apply(desired, { ...call, force: opts.force, dryRun: true });
  const would = stripServerFields(result);
  if (live === undefined) {
    const [, after] = maskSecretPair(undefined, would);
    return { ref, action: 'create', before: undefined, after };
  }
  const now = stripServerFields(live);
  const action = isDeepStrictEqual(now, would) ? 'unchanged' : 'configure';
  const [before, after] = maskSecretPair(now, would);
  return { ref, action, before, after };
}

/** A live object that an apply would delete: the whole object as a removal. */
export function pruneChange(live: LiveKubeObject): ChangeSetEntry {
  const [before] = maskSecretPair(stripServerFields(live), undefined);
  return { ref: refOf(live), action: 'prune', before, after: undefined };
}

/**
 * A copy without what the API server maintains (managed fields, versions, uid, timestamps,
 * status) and without kubectl's last-applied record. Pure.
 */
export function stripServerFields(object: KubeObject): Record<string, unknown> {
  const { status: _status, metadata, ...rest } = structuredClone(object);
  const meta: Record<string, unknown> = { ...metadata };
  for (const field of SERVER_METADATA) delete meta[field];
  const annotations = { ...(metadata.annotations ?? {}) };
  delete annotations[LAST_APPLIED];
  if (Object.keys(annotations).length > 0) meta.annotations = annotations;
  else delete meta.annotations;
  if (metadata.labels !== undefined && Object.keys(metadata.labels).length === 0) delete meta.labels;
  return { ...rest, metadata: meta };
}

/**
 * Secrets with each value of `data` and `stringData` replaced by what happens to its key
 * (`(added)`, `(removed)`, `(changed)`, `(unchanged)`), on both sides; other kinds unchanged.
 * `stringData` is folded into `data`, as the API server stores it. Pure.
 */
export function maskSecretPair(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
): [Record<string, unknown> | undefined, Record<string, unknown> | undefined] {
  const isSecret = (o: Record<string, unknown> | undefined) => o?.kind === 'Secret' && o.apiVersion === 'v1';
  if (!isSecret(before) && !isSecret(after)) return [before, after];
  const old = secretValues(before);
  const next = secretValues(after);
  const mark = (key: string, side: 'before' | 'after'): SecretKeyChange => {
    if (side === 'before' && !next.has(key)) return '(removed)';
    if (side === 'after' && !old.has(key)) return '(added)';
    return old.get(key) === next.get(key) ? '(unchanged)' : '(changed)';
  };
  const masked = (
    object: Record<string, unknown> | undefined,
    values: Map<string, string>,
    side: 'before' | 'after',
  ) => {
    if (object === undefined) return undefined;
    const { stringData: _stringData, data: _data, ...rest } = object;
    if (values.size === 0) return rest;
    const data = Object.fromEntries([...values.keys()].sort().map((key) => [key, mark(key, side)]));
    return { ...rest, data };
  };
  return [masked(before, old, 'before'), masked(after, next, 'after')];
}

/** A Secret with each value of `data` and `stringData` shown as `(masked)`; other kinds as they are. Pure. */
export function maskSecret<T extends { apiVersion: string; kind: string }>(object: T): T {
  if (object.kind !== 'Secret' || object.apiVersion !== 'v1') return object;
  const record = object as T & { data?: unknown; stringData?: unknown };
  const masked = (values: unknown) =>
    Object.fromEntries(Object.keys(asStrings(values)).map((key) => [key, '(masked)']));
  return {
    ...object,
    ...(record.data === undefined ? {} : { data: masked(record.data) }),
    ...(record.stringData === undefined ? {} : { stringData: masked(record.stringData) }),
  };
}

/** Every key of a Secret with its value as base64 (`stringData` encoded, winning over `data`). */
function secretValues(object: Record<string, unknown> | undefined): Map<string, string> {
  const values = new Map<string, string>();
  if (object === undefined) return values;
  for (const [key, value] of Object.entries(asStrings(object.data))) values.set(key, value);
  for (const [key, value] of Object.entries(asStrings(object.stringData)))
    values.set(key, Buffer.from(value, 'utf8').toString('base64'));
  return values;
}

function asStrings(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}
