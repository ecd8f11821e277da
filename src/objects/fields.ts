// Zod schemas of the few fields the agent reads from objects it did not build itself (live objects,
// change-set sides): ConfigMap and Secret data, a status phase, status conditions. Each parses only
// its field and lets the rest of the object pass; a malformed field reads as absent.
import { z } from 'zod';

const StringMap = z.record(z.string(), z.string());

/** A ConfigMap's `data`: string values by key. */
export const ConfigMapDataSchema = z.looseObject({ data: StringMap.nullish().catch(undefined) });

/**
 * A Secret's `data` (base64 values) and `stringData` (plain values); either may be absent. The
 * values stay inside the parsed object: never into a message.
 */
export const SecretDataSchema = z.looseObject({
  data: StringMap.nullish().catch(undefined),
  stringData: StringMap.nullish().catch(undefined),
});

/** `status.phase` (Namespace, Pod, PersistentVolumeClaim). */
export const StatusPhaseSchema = z.looseObject({
  status: z
    .looseObject({ phase: z.string().optional().catch(undefined) })
    .nullish()
    .catch(undefined),
});

/** One entry of `status.conditions`, as every built-in kind writes them. */
export const ConditionSchema = z.looseObject({
  type: z.string(),
  status: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
});
export type Condition = z.infer<typeof ConditionSchema>;

/** `status.conditions`; entries that are not conditions are left out. */
export const StatusConditionsSchema = z.looseObject({
  status: z
    .looseObject({
      conditions: z
        .array(z.unknown())
        .optional()
        .catch(undefined)
        .transform((list) =>
          (list ?? []).flatMap((entry) => {
            const parsed = ConditionSchema.safeParse(entry);
            return parsed.success ? [parsed.data] : [];
          }),
        ),
    })
    .nullish()
    .catch(undefined),
});

// Any JSON object: one step of a path into a spec or status read loosely, as kstatus reads them.
const JsonObject = z.record(z.string(), z.unknown());

/** The value at a path of keys (`status`, `replicas`); undefined where the path ends early. */
export function fieldAt(value: unknown, ...path: readonly string[]): unknown {
  let current = value;
  for (const key of path) current = JsonObject.safeParse(current).data?.[key];
  return current;
}

/** The `data` of a ConfigMap; {} when it has none. */
export function configMapData(object: unknown): Readonly<Record<string, string>> {
  return ConfigMapDataSchema.safeParse(object).data?.data ?? {};
}

/** The `data` and `stringData` of a Secret; {} for each it has not. */
export function secretData(object: unknown): {
  readonly data: Readonly<Record<string, string>>;
  readonly stringData: Readonly<Record<string, string>>;
} {
  const parsed = SecretDataSchema.safeParse(object).data;
  return { data: parsed?.data ?? {}, stringData: parsed?.stringData ?? {} };
}

/** `status.phase`, or undefined. */
export function statusPhase(object: unknown): string | undefined {
  return StatusPhaseSchema.safeParse(object).data?.status?.phase;
}

/** `status.conditions`; [] when there are none. */
export function statusConditions(object: unknown): readonly Condition[] {
  return StatusConditionsSchema.safeParse(object).data?.status?.conditions ?? [];
}
