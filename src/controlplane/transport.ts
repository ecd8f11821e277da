// HTTP to the control plane: one keep-alive pool, the API key and tenant of each request, retries
// of transient failures (full jitter, Retry-After), request metrics, and the bounds on what it
// reads — a response body, a listing's pages and bytes, JSON nesting — since what the control plane
// sends is untrusted input. A failure of any kind leaves here as a ControlPlaneError naming the
// method and path; a listed item that cannot be read is refused alone.
import pRetry from 'p-retry';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import { Agent, type Dispatcher, request } from 'undici';
import { z } from 'zod';
import { MAX_JSON_DEPTH, nestsDeeperThan, parseJsonOrUndefined, pathPastDepth } from '../jsonText.ts';
import { sleep } from '../sleep.ts';
import { ApiKeyFile, type ApiKeySource, fixedApiKey } from './apiKey.ts';
import { ControlPlaneError, type ControlPlaneErrorCode } from './errors.ts';
import {
  formatPath,
  type InvalidResourceCode,
  type Parsed,
  type ResourceIdentity,
  rawId,
  type SchemaIssue,
  SchemaValidationError,
  schemaIssues,
} from './parse.ts';
import { isRetryable, parseRetryAfter, type RetryPolicy, retryDelayMs } from './retryPolicy.ts';
import { Uuid } from './schemas/index.ts';

export const ControlPlaneTransportConfig = z.object({
  baseUrl: z.url({ protocol: /^https?$/ }),
  apiKey: z.string().min(1).optional(),
  /** A file holding the API key (a mounted Secret), read again when it changes; excludes apiKey. */
  apiKeyFile: z.string().min(1).optional(),
  /** How often, at most, the key file is looked at when no change was signalled. */
  apiKeyFileCheckMs: z.number().int().min(10).default(1_000),
  tenantId: z.string().min(1).optional(),
  /** Per attempt, covering connect, headers and body. */
  timeoutMs: z.number().int().positive().default(10_000),
  retry: z
    .object({
      retries: z.number().int().min(0).max(20).default(5),
      minDelayMs: z.number().int().min(1).default(200),
      maxDelayMs: z.number().int().min(1).default(10_000),
      maxElapsedMs: z.number().int().min(1).default(60_000),
    })
    .prefault({}),
  pageSize: z.number().int().min(1).max(100).default(100),
  /** One response body at most (the control plane is untrusted input: a huge body is an OOM kill). */
  maxResponseBytes: z
    .number()
    .int()
    .min(1024)
    .default(16 * 2 ** 20),
  /** Pages of one listing at most: 1,000 pages of 100 are 100,000 deployments. */
  maxPages: z.number().int().min(1).default(1_000),
  /**
   * The bodies of one listing's pages together, at most: the pages' items are held until the
   * listing completes, so the body cap alone would let 1,000 pages of 16 MiB through.
   */
  maxListingBytes: z
    .number()
    .int()
    .min(1024)
    .default(64 * 2 ** 20),
  /**
   * Objects and arrays nested in one response, or one listed item, at most. Parsing does not
   * recurse, but a digest, a comparison or a clone of what was parsed does: 4,450 levels (9 KB)
   * overflowed the stack. An item past it is refused alone; any other response fails its call.
   */
  maxJsonDepth: z.number().int().min(16).max(256).default(MAX_JSON_DEPTH),
});
export type ControlPlaneTransportConfig = z.infer<typeof ControlPlaneTransportConfig>;
export type ControlPlaneTransportConfigInput = z.input<typeof ControlPlaneTransportConfig>;

export interface ControlPlaneTransportOptions extends ControlPlaneTransportConfigInput {
  readonly logger: Logger;
  /** Where the key comes from, instead of apiKey or apiKeyFile (the transport closes it). */
  readonly apiKeySource?: ApiKeySource;
  /** For tests; by default the transport owns one keep-alive pool. */
  readonly dispatcher?: Dispatcher;
  readonly userAgent?: string;
  /** Where the request metrics are registered; no metrics when absent. */
  readonly registry?: Registry;
}

/** Per-call options of the reading calls the agent makes in its loops. */
export interface CallOptions {
  readonly signal?: AbortSignal | undefined;
}

export interface ListingOptions<T> extends CallOptions {
  /**
   * The item as an earlier listing parsed it, when the caller knows this raw item to be that one
   * unchanged: it is taken without parsing it again. Undefined: parsed (and validated) as usual.
   */
  readonly reuse?: ((raw: unknown) => T | undefined) | undefined;
}

export type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

/** A request path and the template it was made from: metrics carry the template, never an id. */
export interface Route {
  readonly template: string;
  readonly path: string;
}

/** Fills `{name}` placeholders with URL-encoded values. */
export function route(template: string, params: Record<string, string> = {}): Route {
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`route ${template}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
  return { template, path };
}

interface RequestMetrics {
  readonly requests: Counter<'endpoint' | 'method' | 'code'>;
  readonly duration: Histogram<'endpoint' | 'method'>;
}

const REQUESTS_METRIC = 'k8s_listener_control_plane_requests_total';
const DURATION_METRIC = 'k8s_listener_control_plane_request_duration_seconds';

/** One set per registry: several clients (the agent's, a command's) share the series. */
function requestMetrics(registry: Registry): RequestMetrics {
  const requests = registry.getSingleMetric(REQUESTS_METRIC);
  const duration = registry.getSingleMetric(DURATION_METRIC);
  if (requests instanceof Counter && duration instanceof Histogram)
    return {
      requests: requests as Counter<'endpoint' | 'method' | 'code'>,
      duration: duration as Histogram<'endpoint' | 'method'>,
    };
  return {
    requests: new Counter({
      name: REQUESTS_METRIC,
      help: 'Control-plane HTTP requests (each attempt) by endpoint template, method and status code, or error when no response came',
      labelNames: ['endpoint', 'method', 'code'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: DURATION_METRIC,
      help: 'Duration of control-plane HTTP requests (each attempt) by endpoint template and method',
      labelNames: ['endpoint', 'method'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
  };
}

export interface SendOptions {
  readonly query?: Query;
  readonly body?: unknown;
  /** Cancels the request and its retries (a shutdown, a lost lease). */
  readonly signal?: AbortSignal | undefined;
  /** What is left of a listing's bytes (controlPlane.maxListingBytes), and its error past them. */
  readonly listing?: { readonly bytesLeft: number; readonly refusal: () => ControlPlaneError };
}

const PageEnvelope = z.object({ resources: z.array(z.unknown()), offset: z.number().int().nonnegative() });
const ErrorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }),
});
const MAX_ERROR_TEXT = 500;

export class ControlPlaneTransport {
  readonly #config: ControlPlaneTransportConfig;
  readonly #logger: Logger;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #base: string;
  readonly #userAgent: string;
  readonly #apiKey: ApiKeySource;
  readonly #metrics: RequestMetrics | undefined;
  #closed = false;

  constructor(options: ControlPlaneTransportOptions) {
    const { logger, dispatcher, userAgent, registry, apiKeySource, ...config } = options;
    this.#metrics = registry === undefined ? undefined : requestMetrics(registry);
    this.#config = ControlPlaneTransportConfig.parse(config);
    this.#logger = logger.child({ component: 'controlplane-client' });
    const { apiKey, apiKeyFile, apiKeyFileCheckMs } = this.#config;
    if ([apiKey, apiKeyFile, apiKeySource].filter((k) => k !== undefined).length > 1)
      throw new TypeError('apiKey, apiKeyFile and apiKeySource are mutually exclusive');
    this.#apiKey =
      apiKeySource ??
      (apiKeyFile === undefined
        ? fixedApiKey(apiKey)
        : new ApiKeyFile({ path: apiKeyFile, checkIntervalMs: apiKeyFileCheckMs, logger }));
    this.#base = this.#config.baseUrl.replace(/\/+$/, '');
    this.#userAgent = userAgent ?? 'k8s-listener';
    this.#ownsDispatcher = dispatcher === undefined;
    this.#dispatcher =
      dispatcher ??
      new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 120_000, connections: 16, pipelining: 1 });
  }

  /** Closes the connection pool; safe to call more than once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#apiKey.close();
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  /**
   * A listing, page by page until an empty one, each item parsed on its own (one that cannot be
   * read is refused alone); a listing past its bounds throws rather than end short.
   */
  async *paginate<S extends z.ZodType>(
    target: Route,
    query: Query,
    schema: S,
    resource: string,
    options: ListingOptions<z.infer<S>> = {},
    identify?: (raw: unknown) => ResourceIdentity | undefined,
  ): AsyncGenerator<Parsed<z.infer<S>>> {
    const { path } = target;
    const { pageSize, maxPages, maxListingBytes } = this.#config;
    const refuse = (code: ControlPlaneErrorCode, message: string) =>
      new ControlPlaneError(`GET ${path} ${message}`, { code, method: 'GET', path });
    let offset = 0;
    let listingBytes = 0;
    // Stop on an empty page, not a short one: a server that caps the page size must never make
    // a listing look complete when it is not. A listing that never ends is refused, not followed.
    for (let pages = 1; ; pages++) {
      if (pages > maxPages)
        throw refuse('TOO_MANY_PAGES', `returned more than ${maxPages} pages (controlPlane.maxPages)`);
      // Every page is held until the listing completes: the cap is on the listing, not the page,
      // and no page is read past it.
      const sent = await this.send('GET', target, {
        query: { ...query, limit: pageSize, offset },
        signal: options.signal,
        listing: {
          bytesLeft: maxListingBytes - listingBytes,
          refusal: () =>
            refuse(
              'LISTING_TOO_LARGE',
              `returned more than ${maxListingBytes} bytes in ${pages} pages (controlPlane.maxListingBytes)`,
            ),
        },
      });
      listingBytes += sent.bytes;
      const page = PageEnvelope.safeParse(this.#parse('GET', path, sent));
      if (!page.success)
        throw refuse('INVALID_RESPONSE', `returned an invalid page ${pages} at offset ${offset}`);
      const { resources } = page.data;
      if (resources.length > pageSize)
        throw refuse(
          'PAGE_TOO_LARGE',
          `returned ${resources.length} items in page ${pages} (offset ${offset}), more than the ${pageSize} asked for`,
        );
      if (resources.length === 0) return;
      for (const item of resources) yield this.#item(item, schema, resource, options.reuse, identify);
      if (page.data.offset <= offset)
        throw refuse('INVALID_RESPONSE', `did not advance its offset past ${offset}`);
      offset = page.data.offset;
    }
  }

  /**
   * One listed item, parsed, or refused alone: nested too deep, failing its schema, or throwing
   * anywhere in its handling (the caller's reuse check included), it is that item's problem and
   * the listing goes on. Its id is read only when it is one (a uuid): the id keys what the agent
   * holds and reports, so any other value would be the item's content.
   */
  #item<S extends z.ZodType>(
    raw: unknown,
    schema: S,
    resource: string,
    reuse: ((raw: unknown) => z.infer<S> | undefined) | undefined,
    identify: ((raw: unknown) => ResourceIdentity | undefined) | undefined,
  ): Parsed<z.infer<S>> {
    const named = rawId(raw);
    const id = Uuid.safeParse(named).success ? named : undefined;
    const refuse = (code: InvalidResourceCode, ...issues: SchemaIssue[]): Parsed<z.infer<S>> => ({
      ok: false,
      id,
      error: new SchemaValidationError(resource, id, issues, code),
      identity: identifiedOrUndefined(identify, raw),
    });
    const { maxJsonDepth } = this.#config;
    try {
      const tooDeep = pathPastDepth(raw, maxJsonDepth);
      if (tooDeep !== undefined)
        return refuse('TOO_DEEP', {
          path: pathHead(tooDeep),
          message: `nested deeper than ${maxJsonDepth} levels, the most the agent reads`,
        });
      const reused = reuse?.(raw);
      if (reused !== undefined) return { ok: true, value: reused };
      const parsed = schema.safeParse(raw);
      return parsed.success
        ? { ok: true, value: parsed.data }
        : refuse('SCHEMA_INVALID', ...schemaIssues(parsed.error));
    } catch (error) {
      // The error's class only: its message may quote the item.
      return refuse('UNREADABLE', { path: '(root)', message: `could not be read (${errorClass(error)})` });
    }
  }

  /** The answer's JSON: a body that is not JSON, or nests too deep, fails the call. */
  async json(method: string, target: Route, options: SendOptions = {}): Promise<unknown> {
    const { path } = target;
    const sent = await this.send(method, target, options);
    const body = this.#parse(method, path, sent);
    const { maxJsonDepth } = this.#config;
    if (nestsDeeperThan(body, maxJsonDepth))
      throw new ControlPlaneError(
        `${method} ${path} answered JSON nested deeper than ${maxJsonDepth} levels, the most the agent reads`,
        { code: 'RESPONSE_TOO_DEEP', method, path, status: sent.status, requestId: sent.requestId },
      );
    return body;
  }

  #parse(
    method: string,
    path: string,
    sent: { text: string; status: number; requestId?: string | undefined },
  ): unknown {
    const { text, requestId, status } = sent;
    try {
      return JSON.parse(text);
    } catch (cause) {
      throw new ControlPlaneError(`${method} ${path} returned invalid JSON (status ${status})`, {
        code: 'INVALID_RESPONSE',
        method,
        path,
        status,
        requestId,
        cause,
      });
    }
  }

  /** One request with its retries (retryPolicy.ts): its status, body text and size. */
  async send(method: string, target: Route, options: SendOptions = {}) {
    const { path } = target;
    const idempotent = method === 'GET' || method === 'PUT' || method === 'DELETE';
    const { retries, maxElapsedMs } = this.#config.retry;
    const policy: RetryPolicy = this.#config.retry;
    return pRetry(() => this.#attempt(method, target, options), {
      retries,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      maxRetryTime: maxElapsedMs,
      // The delay is ours (full jitter, Retry-After): p-retry only counts and bounds attempts.
      minTimeout: 1,
      maxTimeout: 1,
      shouldRetry: ({ error }) => isRetryable(error, idempotent),
      onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
        if (retriesLeft === 0 || !isRetryable(error, idempotent)) return;
        const delay = retryDelayMs(policy, attemptNumber, error);
        this.#logger.warn(
          {
            method,
            path,
            attempt: attemptNumber,
            delayMs: delay,
            code: codeOf(error),
            status: statusOf(error),
          },
          'control-plane request failed; retrying',
        );
        await sleep(delay, options.signal);
      },
    });
  }

  async #attempt(method: string, target: Route, options: SendOptions) {
    const { path } = target;
    const url = new URL(this.#base + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value === undefined) continue;
      url.searchParams.set(key, Array.isArray(value) ? value.join(',') : String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.#userAgent };
    const apiKey = await this.#apiKey.current();
    if (apiKey !== undefined) headers['x-api-key'] = apiKey;
    if (this.#config.tenantId !== undefined) headers['x-tenant-id'] = this.#config.tenantId;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const timeout = this.#config.timeoutMs;
    const started = performance.now();
    let status = 0;
    let requestId: string | undefined;
    let text: string;
    let bytes: number;
    let retryAfter: string | undefined;
    try {
      const response = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        body: options.body === undefined ? null : JSON.stringify(options.body),
        dispatcher: this.#dispatcher,
        headersTimeout: timeout,
        bodyTimeout: timeout,
        signal:
          options.signal === undefined
            ? AbortSignal.timeout(timeout)
            : AbortSignal.any([AbortSignal.timeout(timeout), options.signal]),
      });
      status = response.statusCode;
      requestId = header(response.headers['x-request-id']);
      retryAfter = header(response.headers['retry-after']);
      ({ text, bytes } = await boundedText(
        response.body,
        Math.min(this.#config.maxResponseBytes, options.listing?.bytesLeft ?? Number.POSITIVE_INFINITY),
        header(response.headers['content-length']),
      ));
    } catch (cause) {
      if (cause instanceof ResponseTooLargeError) {
        this.#observe(target, method, String(status), started);
        const { listing } = options;
        if (listing !== undefined && listing.bytesLeft < this.#config.maxResponseBytes)
          throw listing.refusal();
        throw new ControlPlaneError(
          `${method} ${path} answered a body over ${this.#config.maxResponseBytes} bytes (controlPlane.maxResponseBytes)`,
          { code: 'RESPONSE_TOO_LARGE', method, path, status, requestId },
        );
      }
      this.#observe(target, method, 'error', started);
      // Cancelled by the caller: its reason, not a network failure to retry.
      if (options.signal?.aborted) throw options.signal.reason;
      const timedOut = isTimeout(cause);
      throw new ControlPlaneError(
        `${method} ${path} ${timedOut ? `timed out after ${timeout} ms` : 'failed: network error'}`,
        {
          code: timedOut ? 'TIMEOUT' : 'NETWORK',
          method,
          path,
          status: status || undefined,
          requestId,
          cause: scrubbed(cause),
        },
      );
    }
    this.#observe(target, method, String(status), started);
    this.#logger.debug(
      { method, path, status, requestId, ms: Math.round(performance.now() - started) },
      'control-plane request',
    );
    // A rotated key may be waiting in the key file: look again before the next request.
    if (status === 401) this.#apiKey.refused();
    if (status >= 400) {
      const serverError = ErrorBody.safeParse(parseJsonOrUndefined(text));
      const serverMessage = serverError.success ? serverError.data.error.message : undefined;
      const serverCode = serverError.success ? serverError.data.error.code : undefined;
      const detail = serverMessage ?? text.slice(0, MAX_ERROR_TEXT);
      throw new ControlPlaneError(`${method} ${path} failed with ${status}${detail ? `: ${detail}` : ''}`, {
        code: 'HTTP',
        method,
        path,
        status,
        requestId,
        serverCode,
        serverMessage,
        retryAfterMs: status === 429 || status === 503 ? parseRetryAfter(retryAfter) : undefined,
      });
    }
    return { status, text, bytes, requestId };
  }

  #observe(target: Route, method: string, code: string, started: number): void {
    if (!this.#metrics) return;
    const labels = { endpoint: target.template, method };
    this.#metrics.requests.inc({ ...labels, code });
    this.#metrics.duration.observe(labels, (performance.now() - started) / 1000);
  }
}

class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
}

/** The body as text, read only while within `max` bytes (a declared larger one is not read at all). */
async function boundedText(
  body: Dispatcher.ResponseData['body'],
  max: number,
  declaredLength: string | undefined,
): Promise<{ text: string; bytes: number }> {
  if (declaredLength !== undefined && Number(declaredLength) > max) {
    body.destroy();
    throw new ResponseTooLargeError();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > max) {
      body.destroy();
      throw new ResponseTooLargeError();
    }
    chunks.push(buffer);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), bytes: size };
}

/** What can be read of a refused item's identity; nothing, rather than a throw. */
function identifiedOrUndefined(
  identify: ((raw: unknown) => ResourceIdentity | undefined) | undefined,
  raw: unknown,
): ResourceIdentity | undefined {
  try {
    return identify?.(raw);
  } catch {
    return undefined;
  }
}

const PATH_HEAD_KEYS = 4;
const PATH_KEY_CHARS = 40;

/** Where an item nests too deep, for a message: its first keys (the rest are the nesting), each cut short. */
function pathHead(path: readonly (string | number)[]): string {
  const head = path
    .slice(0, PATH_HEAD_KEYS)
    .map((key) =>
      typeof key === 'string' && key.length > PATH_KEY_CHARS ? `${key.slice(0, PATH_KEY_CHARS)}…` : key,
    );
  return `${formatPath(head)}${path.length > PATH_HEAD_KEYS ? '…' : ''}`;
}

function errorClass(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function isTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'TimeoutError') return true;
  const code = 'code' in error ? String(error.code) : '';
  return code.endsWith('_TIMEOUT');
}

/** Keeps the network error's name, code and message only: no request options ride along. */
function scrubbed(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(String(error));
  const copy = new Error(error.message);
  copy.name = error.name;
  if ('code' in error) Object.assign(copy, { code: error.code });
  if (error.cause !== undefined) Object.assign(copy, { cause: scrubbed(error.cause) });
  return copy;
}

function codeOf(error: unknown): string | undefined {
  return error instanceof ControlPlaneError ? error.code : undefined;
}

function statusOf(error: unknown): number | undefined {
  return error instanceof ControlPlaneError ? error.status : undefined;
}
