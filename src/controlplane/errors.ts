// Typed errors of the control-plane client. They carry what an operator needs to find the failed
// call (method, path, status, the server's request id) and never the API key or a secret value.

export type ControlPlaneErrorCode =
  | 'HTTP'
  | 'NETWORK'
  | 'TIMEOUT'
  | 'INVALID_RESPONSE'
  /** A body past the client's cap (maxResponseBytes): refused unread, never retried. */
  | 'RESPONSE_TOO_LARGE'
  /**
   * A body nested past the client's cap (maxJsonDepth), never walked further. In a listing the
   * cap is judged per item, and an item past it is refused alone.
   */
  | 'RESPONSE_TOO_DEEP'
  /** A listing past the client's cap (maxPages): incomplete, so nothing is concluded from it. */
  | 'TOO_MANY_PAGES'
  /** A listing whose pages together pass the client's cap (maxListingBytes): as TOO_MANY_PAGES. */
  | 'LISTING_TOO_LARGE'
  /** A page with more items than the limit asked for: the server is not paging as agreed. */
  | 'PAGE_TOO_LARGE';

export interface ControlPlaneErrorDetails {
  readonly code: ControlPlaneErrorCode;
  readonly method: string;
  readonly path: string;
  readonly status?: number | undefined;
  readonly requestId?: string | undefined;
  /** The server's own error code and message, when it answered with the documented error body. */
  readonly serverCode?: string | undefined;
  readonly serverMessage?: string | undefined;
  /** Seconds the server asked us to wait (429/503 Retry-After). */
  readonly retryAfterMs?: number | undefined;
  readonly cause?: unknown;
}

export class ControlPlaneError extends Error {
  override readonly name = 'ControlPlaneError';
  readonly code: ControlPlaneErrorCode;
  readonly method: string;
  readonly path: string;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly serverCode: string | undefined;
  readonly serverMessage: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, details: ControlPlaneErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = details.code;
    this.method = details.method;
    this.path = details.path;
    this.status = details.status;
    this.requestId = details.requestId;
    this.serverCode = details.serverCode;
    this.serverMessage = details.serverMessage;
    this.retryAfterMs = details.retryAfterMs;
  }
}

export function isControlPlaneError(error: unknown, status?: number): error is ControlPlaneError {
  return error instanceof ControlPlaneError && (status === undefined || error.status === status);
}
