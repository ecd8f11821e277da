// A stable hash of JSON data: keys sorted, so equal content always hashes the same. With a key it
// is an HMAC: a digest of content that holds secret values reveals nothing to whoever can read it
// but not the key (no offline guessing of a weak secret).
import { createHash, createHmac } from 'node:crypto';

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

export function canonicalHash(value: unknown, key?: Uint8Array, length = 16): string {
  const hash = key ? createHmac('sha256', key) : createHash('sha256');
  return hash
    .update(JSON.stringify(canonical(value)))
    .digest('hex')
    .slice(0, length);
}
