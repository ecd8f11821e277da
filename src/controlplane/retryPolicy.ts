// Which control-plane failures are worth another attempt, and how long to wait before it.
import { ControlPlaneError } from './errors.ts';

export interface RetryPolicy {
  readonly retries: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxElapsedMs: number;
}

const TRANSIENT_STATUSES = new Set([408, 429, 502, 503, 504]);
// Refusals that say the request was not acted on: safe to repeat even for POST and PATCH.
const NOT_PROCESSED_STATUSES = new Set([408, 429, 503]);

/**
 * GET, PUT and DELETE are idempotent, so every transient failure may be retried, 500 included.
 * POST and PATCH may have taken effect before a failure (a PATCH that creates a revision,
 * a redeploy), so they are retried only when the request certainly was not processed:
 * the connection was refused, or the server answered 408/429/503.
 */
export function isRetryable(error: unknown, idempotent: boolean): boolean {
  if (!(error instanceof ControlPlaneError)) return false;
  if (error.code === 'NETWORK') return idempotent || isConnectionRefused(error.cause);
  if (error.code === 'TIMEOUT') return idempotent;
  if (error.code !== 'HTTP' || error.status === undefined) return false;
  if (idempotent) return TRANSIENT_STATUSES.has(error.status) || error.status === 500;
  return NOT_PROCESSED_STATUSES.has(error.status);
}

function isConnectionRefused(cause: unknown): boolean {
  for (let current = cause; current instanceof Error; current = current.cause) {
    if ('code' in current && current.code === 'ECONNREFUSED') return true;
  }
  return false;
}

/** Exponential backoff with full jitter; a server's Retry-After wins, capped at maxDelayMs. */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  error: unknown,
  random = Math.random,
): number {
  if (error instanceof ControlPlaneError && error.retryAfterMs !== undefined) {
    return Math.min(error.retryAfterMs, policy.maxDelayMs);
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/** Parses Retry-After: delta seconds or an HTTP date. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
