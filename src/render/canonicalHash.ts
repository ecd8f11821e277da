// A stable hash of JSON data: keys sorted, so equal content always hashes the same. With a key it
// is an HMAC: a digest of content that holds secret values reveals nothing to whoever can read it
// but not the key (no offline guessing of a weak secret).
import { createHash, createHmac, createSecretKey, type KeyObject } from 'node:crypto';

/**
 * The value with every object's keys sorted, as JSON.stringify writes it. A plain object or an
 * array already so (its keys in order, its values canonical) is returned as it is, not copied:
 * render hashes every object it makes, and most of what it makes (env entries, ports, mounts)
 * needs no copy, which kept 16,000 variables' worth of objects from costing their double.
 */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = canonical(value[i]);
      if (item !== value[i]) copy ??= value.slice(0, i);
      copy?.push(item);
    }
    return copy ?? value;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    // Anything but a plain object (a Date writes itself through toJSON) is copied as before.
    const prototype = Object.getPrototypeOf(record);
    let same = prototype === Object.prototype || prototype === null;
    const values = keys.map((key, i) => {
      const item = canonical(record[key]);
      if (item !== record[key] || (i > 0 && (keys[i - 1] ?? '') > key)) same = false;
      return item;
    });
    if (same) return value;
    const order = keys.map((_, i) => i).sort((a, b) => compareKeys(keys[a] ?? '', keys[b] ?? ''));
    return Object.fromEntries(order.map((i) => [keys[i], values[i]]));
  }
  return value;
}

/** Array.prototype.sort's default order: by UTF-16 code units. */
const compareKeys = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * One KeyObject per key: an HMAC given the raw bytes imports them into a new key each time, which
 * cost render more than the hashing itself (render hashes every object at each reconcile).
 */
const keyObjects = new WeakMap<Uint8Array, KeyObject>();

function keyObjectOf(key: Uint8Array): KeyObject {
  let object = keyObjects.get(key);
  if (!object) {
    object = createSecretKey(key);
    keyObjects.set(key, object);
  }
  return object;
}

export function canonicalHash(value: unknown, key?: Uint8Array, length = 16): string {
  const hash = key ? createHmac('sha256', keyObjectOf(key)) : createHash('sha256');
  return hash
    .update(JSON.stringify(canonical(value)))
    .digest('hex')
    .slice(0, length);
}
