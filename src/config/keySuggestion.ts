// Finds the valid key an unknown configuration key was meant to be, from the schema itself:
// every key path the schema accepts, compared by edit distance and by the joined, lowercased name,
// so a key put at the wrong level (`render.ingressClassName`) finds `render.ingress.className`.
import { z } from 'zod';

/** Every key path (dotted) that the schema accepts, objects and leaves alike, in shape order. */
export function schemaKeyPaths(schema: z.ZodType): string[] {
  return schemaKeys(schema).map((key) => key.path);
}

/** Every key of the schema, and whether it holds an object of known keys (not a free-form map). */
export function schemaKeys(schema: z.ZodType): { path: string; isObject: boolean }[] {
  const keys: { path: string; isObject: boolean }[] = [];
  const walk = (node: z.ZodType, prefix: string) => {
    const object = objectOf(node);
    if (!object) return;
    for (const [key, child] of Object.entries(object.shape)) {
      const path = prefix ? `${prefix}.${key}` : key;
      keys.push({ path, isObject: objectOf(child as z.ZodType) !== undefined });
      walk(child as z.ZodType, path);
    }
  };
  walk(schema, '');
  return keys;
}

/** The object schema under optional/default/prefault/nullable wrappers, if there is one. */
function objectOf(node: z.ZodType): z.ZodObject | undefined {
  let current: z.ZodType = node;
  for (;;) {
    if (current instanceof z.ZodObject) return current;
    if (
      current instanceof z.ZodOptional ||
      current instanceof z.ZodNullable ||
      current instanceof z.ZodDefault ||
      current instanceof z.ZodPrefault
    ) {
      current = current.unwrap() as z.ZodType;
      continue;
    }
    // Records (annotations, labels, readinessProbe) are free-form: no key paths below them.
    return undefined;
  }
}

/**
 * The valid path closest to `unknownPath`, or undefined when none is close enough to be a guess.
 * Three measures, the best one wins, each plus a small penalty for a different place in the tree:
 * the whole paths joined and lowercased (a case slip, a key at the wrong level), the part below
 * the unknown key's parent joined (`render.ingressClassName` is `render.ingress.className` with
 * the dot left out), and the last segments alone (a typo, or a missing section). A key that is
 * the start of a valid one (`leaseDuration` for `leaseDurationMs`) counts as one edit, and so does
 * one with sections left out (`ingressClassName` at the top for `render.ingress.className`).
 */
export function suggestKey(unknownPath: string, validPaths: readonly string[]): string | undefined {
  const segments = unknownPath.split('.');
  const parentSegments = segments.slice(0, -1);
  const parent = parentSegments.join('.');
  const leaf = normalize(segments.at(-1) ?? '');
  const joined = normalize(segments.join(''));
  let best: { path: string; score: number; depth: number } | undefined;
  for (const path of validPaths) {
    const validSegments = path.split('.');
    const validParent = validSegments.slice(0, -1).join('.');
    const below = parent === '' || validParent === parent || validParent.startsWith(`${parent}.`);
    const placePenalty = validParent === parent ? 0 : below ? 1 : 2;
    const byLeaf =
      nameDistance(leaf, normalize(validSegments.at(-1) ?? ''), placePenalty === 0) + placePenalty;
    const byJoined = distance(joined, normalize(validSegments.join('')));
    const relative = normalize(validSegments.slice(parentSegments.length).join(''));
    // The sections in between left out: `ingressClassName` at the top for render.ingress.className.
    const byRelative = below
      ? (relative.endsWith(leaf) && relative !== leaf ? 1 : distance(leaf, relative)) + placePenalty
      : Number.POSITIVE_INFINITY;
    const score = Math.min(byLeaf, byJoined, byRelative);
    const depth = validSegments.length;
    if (!best || score < best.score || (score === best.score && depth < best.depth))
      best = { path, score, depth };
  }
  const tolerance = Math.max(2, Math.floor(leaf.length / 3));
  return best && best.score <= tolerance ? best.path : undefined;
}

/** Edit distance, where a name cut short counts as one edit (and, in the same section, one too long). */
function nameDistance(unknown: string, valid: string, sameSection: boolean): number {
  if (unknown !== valid) {
    if (unknown.length >= 4 && valid.startsWith(unknown)) return 1;
    if (sameSection && valid.length >= 4 && unknown.startsWith(valid)) return 1;
  }
  return distance(unknown, valid);
}

function normalize(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

/** Levenshtein distance, two rows. */
export function distance(a: string, b: string): number {
  if (a === b) return 0;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
