// A stable hash of JSON data: keys sorted, so equal content always hashes the same. With a key it
// is an HMAC: a digest of content that holds secret values reveals nothing to whoever can read it
// but not the key (no offline guessing of a weak secret).
import { createHash, createHmac, createSecretKey, type KeyObject } from 'node:crypto';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

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
