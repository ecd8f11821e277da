// An object's body: the bulky fields that only a drift check reads (pod templates, claim
// templates, Secret and ConfigMap data), as against what status, ownership and reporting read
// (metadata, status, the rest of the spec). The watch cache drops a body once a reconcile has
// found it to hold every field the agent sets, and keeps a digest to know it is unchanged. Pure.
import { createHash } from 'node:crypto';

const TOP_LEVEL = ['data', 'stringData', 'binaryData', 'template'] as const;
const IN_SPEC = ['template', 'volumeClaimTemplates'] as const;

type Fields = Readonly<Record<string, unknown>>;

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object without its body; the same object when it has none. */
export function withoutBody<T extends object>(object: T): T {
  const fields = object as Fields;
  const spec = fields.spec;
  const specHasBody = isFields(spec) && IN_SPEC.some((key) => key in spec);
  if (!specHasBody && !TOP_LEVEL.some((key) => key in fields)) return object;
  const slim: Record<string, unknown> = { ...fields };
  for (const key of TOP_LEVEL) delete slim[key];
  if (specHasBody) {
    const slimSpec: Record<string, unknown> = { ...spec };
    for (const key of IN_SPEC) delete slimSpec[key];
    slim.spec = slimSpec;
  }
  return slim as T;
}

/**
 * A digest of the body, to tell whether a later version of the object changed it (the API server
 * writes fields in a fixed order: the same body serializes the same). Undefined: no body.
 */
export function bodyDigest(object: object): string | undefined {
  const fields = object as Fields;
  const spec = isFields(fields.spec) ? fields.spec : {};
  const parts = [...TOP_LEVEL.map((key) => fields[key]), ...IN_SPEC.map((key) => spec[key])];
  if (parts.every((part) => part === undefined)) return undefined;
  return createHash('sha1').update(JSON.stringify(parts)).digest('base64');
}
