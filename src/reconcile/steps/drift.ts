// Whether a live object has drifted from what we apply: every field we set must hold the same
// value (quantities compared by value: the server writes 1024Mi back as 1Gi). Fields we do not
// set (defaults, status, an HPA's replicas) are not ours and never count. Pure.
import { quantityValue } from '../../render/quantities.ts';

/**
 * The fields that hold resource quantities in what the agent renders: container resources and
 * claim storage. Anywhere else a string that looks like a quantity ("1k" in an env value) is text.
 */
const QUANTITY_PATH = /(^|\.)resources\.(requests|limits)\.[^.[\]]+$/;

function sameScalar(desired: unknown, live: unknown, path: string): boolean {
  if (desired === live) return true;
  if (typeof desired === 'string' && typeof live === 'string' && QUANTITY_PATH.test(path)) {
    const a = quantityValue(desired);
    const b = quantityValue(live);
    return a !== undefined && b !== undefined && Math.abs(a - b) <= Math.abs(a) * 1e-9;
  }
  // int-or-string fields may come back in the other form.
  if (
    (typeof desired === 'number' && typeof live === 'string') ||
    (typeof desired === 'string' && typeof live === 'number')
  ) {
    return String(desired) === String(live);
  }
  return false;
}

/** The path of the first field that differs, or undefined when `live` holds all of `desired`. */
export function driftPath(desired: unknown, live: unknown, path = ''): string | undefined {
  if (Array.isArray(desired)) {
    if (!Array.isArray(live) || live.length !== desired.length) return path || '(root)';
    for (let i = 0; i < desired.length; i++) {
      const found = driftPath(desired[i], live[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (desired !== null && typeof desired === 'object') {
    if (live === null || typeof live !== 'object' || Array.isArray(live)) return path || '(root)';
    for (const [key, value] of Object.entries(desired)) {
      const found = driftPath(value, (live as Record<string, unknown>)[key], path ? `${path}.${key}` : key);
      if (found) return found;
    }
    return undefined;
  }
  return sameScalar(desired, live, path) ? undefined : path || '(root)';
}
