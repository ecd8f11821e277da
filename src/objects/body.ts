// An object's body: the fields that only a drift check reads (data, pod and claim templates, and
// every field of a spec but the few the rollout status reads), as against what status, ownership
// and reporting read (metadata, status, those spec fields). The watch cache drops a body once a
// reconcile has found it to hold every field the agent sets, and keeps a digest to know it is
// unchanged: a workload's status updates, which are most watch events, then cost no body. Pure.
import { createHash } from 'node:crypto';

const TOP_LEVEL = ['data', 'stringData', 'binaryData', 'template'] as const;
/**
 * What report/rolloutHealth.ts reads of a spec: replicas, deadline, update strategy, Service type,
 * the Gateways an HTTPRoute names (whose reports in its status it looks for).
 */
const SPEC_KEPT = new Set([
  'replicas',
  'progressDeadlineSeconds',
  'updateStrategy',
  'type',
  'clusterIP',
  'parentRefs',
]);

type Fields = Readonly<Record<string, unknown>>;

const NO_SPEC: Fields = Object.freeze({});

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function specBody(spec: Fields): [string, unknown][] {
  return Object.entries(spec).filter(([key]) => !SPEC_KEPT.has(key));
}

function hasSpecBody(spec: Fields): boolean {
  return Object.keys(spec).some((key) => !SPEC_KEPT.has(key));
}

const BODY_KEYS: ReadonlySet<string> = new Set(TOP_LEVEL);

/**
 * The object without its body; the same object when it has none. Built key by key, never by
 * `delete`: a deleted property turns a V8 object into a dictionary of its properties, some 400
 * bytes more for each Secret and ConfigMap the watch cache holds.
 */
export function withoutBody<T extends object>(object: T): T {
  const fields = object as Fields;
  const spec = fields.spec;
  const specHasBody = isFields(spec) && hasSpecBody(spec);
  if (!specHasBody && !TOP_LEVEL.some((key) => key in fields)) return object;
  const slim: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) {
    if (BODY_KEYS.has(key)) continue;
    if (key === 'spec' && specHasBody) {
      const kept = Object.entries(spec).filter(([name]) => SPEC_KEPT.has(name));
      // Most kinds keep nothing of their spec: one empty object for all of them.
      slim.spec = kept.length === 0 ? NO_SPEC : Object.fromEntries(kept);
    } else slim[key] = fields[key];
  }
  return slim as T;
}

/**
 * A digest of the body, to tell whether a later version of the object changed it (the API server
 * writes fields in a fixed order: the same body serializes the same). Undefined: no body.
 */
export function bodyDigest(object: object): string | undefined {
  const fields = object as Fields;
  const spec = isFields(fields.spec) ? specBody(fields.spec) : [];
  const parts = TOP_LEVEL.map((key) => fields[key]);
  if (spec.length === 0 && parts.every((part) => part === undefined)) return undefined;
  return createHash('sha1')
    .update(JSON.stringify([...parts, spec]))
    .digest('base64');
}
