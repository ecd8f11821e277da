// HTTP to the API server: a keep-alive pool per client certificate, the credentials of each request,
// timeouts and abort signals, request counts and metrics. A failure of any kind leaves here as a
// KubeApiError naming the verb and the object.
import { createSecureContext, type SecureContext } from 'node:tls';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import { Agent, type Dispatcher, request } from 'undici';
import { formatRef } from '../objects/objectRef.ts';
import { errorCode, isTimeout, type RequestTarget, statusError } from './decode.ts';
import { KubeApiError, type KubeVerb } from './errors.ts';
import type { ClientCertificate, ClusterConnection, Credentials } from './kubeconfig.ts';
import { KubeconfigError } from './kubeconfigError.ts';
import { type RateLimit, TokenBucket } from './rateLimiter.ts';

/** Per-call options: an abort signal (e.g. leadership lost) and a tighter timeout. */
export interface CallOptions {
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
}

/** Verbs as counted by `requestCounts()`; dry-run writes are counted as `<verb>:dryRun`. */
export type RequestVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';
const WRITE_VERBS: ReadonlySet<string> = new Set<RequestVerb>(['create', 'update', 'patch', 'delete']);

export interface TransportOptions {
  readonly logger: Logger;
  /** Per request (headers and body), except streams whose bodies are open-ended. */
  readonly requestTimeoutMs: number;
  readonly userAgent: string;
  /** Where `k8s_listener_kube_requests_total` is registered; no metric when absent. */
  readonly registry?: Registry | undefined;
  /** client-go's qps/burst for every request but watches; absent or qps 0: no limit. */
  readonly rateLimit?: RateLimit | undefined;
  /**
   * HTTP/2 where the server offers it (its requests streams of a shared connection). Off in the
   * agent: bench:transport measured it dearer on the client and on the API server (bench/README.md).
   */
  readonly http2?: boolean | undefined;
}

export interface TransportRequest {
  readonly verb: KubeVerb;
  /** What the request is about, for errors and logs. */
  readonly target: RequestTarget;
  /** Counted under (target.kind, verb); absent: not counted (paths outside the kind table). */
  readonly count?: { readonly verb: RequestVerb; readonly dryRun: boolean } | undefined;
  readonly method: Dispatcher.HttpMethod;
  /** Below the server URL, e.g. `/api/v1/namespaces/n/configmaps`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>> | undefined;
  readonly body?: unknown;
  readonly contentType?: string | undefined;
  readonly options?: CallOptions | undefined;
  /**
   * Error statuses that are an answer to this request, returned rather than thrown (a GET's
   * 404): no error is built for them, which at a cold sync's thousands of misses is measurable.
   */
  readonly answers?: readonly number[] | undefined;
  /**
   * At most this many bytes of the body are read, the rest left unread (a container's log: the
   * server's `limitBytes` bounds it too, this holds whatever the server sends).
   */
  readonly maxBytes?: number | undefined;
}

export interface TransportResponse {
  readonly status: number;
  readonly text: string;
}

interface Pool {
  readonly agent: Agent;
  readonly certificateGeneration: number;
}

const METRIC_NAME = 'k8s_listener_kube_requests_total';
const DURATION_METRIC_NAME = 'k8s_listener_kube_request_duration_seconds';

export class KubeTransport {
  readonly #connection: ClusterConnection;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  /** kind → verb → count. */
  readonly #counts = new Map<string, Map<string, number>>();
  readonly #metric: Counter<'verb' | 'kind' | 'code'> | undefined;
  readonly #durationMetric: Histogram<'verb' | 'kind'> | undefined;
  #pool: Pool;
  readonly #http2: boolean;
  readonly #limiter: TokenBucket;
  /** Pools of replaced client certificates: their open requests and watches end there. */
  readonly #retired = new Set<Agent>();
  #closed = false;

  private constructor(connection: ClusterConnection, first: Credentials, options: TransportOptions) {
    this.#connection = connection;
    this.#logger = options.logger;
    this.#timeoutMs = options.requestTimeoutMs;
    this.#userAgent = options.userAgent;
    this.#metric = options.registry === undefined ? undefined : requestCounter(options.registry);
    this.#durationMetric = options.registry === undefined ? undefined : requestDuration(options.registry);
    this.#http2 = options.http2 ?? false;
    this.#pool = this.#newPool(first);
    this.#limiter = new TokenBucket(options.rateLimit ?? { qps: 0, burst: 1 });
  }

  /** Obtains the first credentials now, so that a broken kubeconfig or plugin fails at start. */
  static async open(connection: ClusterConnection, options: TransportOptions): Promise<KubeTransport> {
    return new KubeTransport(connection, await connection.credentials(), options);
  }

  get server(): string {
    return this.#connection.server;
  }

  /** Whether the API server's certificate is verified (false with insecure-skip-tls-verify). */
  get verifiesTls(): boolean {
    return this.#connection.tls.rejectUnauthorized !== false;
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** One request and its whole body; an answer ≥ 400 throws the KubeApiError its Status describes. */
  async send(req: TransportRequest): Promise<TransportResponse> {
    const timeoutMs = req.options?.timeoutMs ?? this.#timeoutMs;
    const deadline = requestDeadline(timeoutMs, req.options?.signal);
    try {
      return await this.#send(req, timeoutMs, deadline.signal);
    } finally {
      deadline.release();
    }
  }

  async #send(req: TransportRequest, timeoutMs: number, signal: AbortSignal): Promise<TransportResponse> {
    const started = performance.now();
    if (!this.#limiter.unlimited) {
      // The wait counts against the request's timeout, as client-go's limiter wait does.
      await this.#limiter.take(signal).catch((cause: unknown) => {
        throw this.#transportError(req, cause, signal, timeoutMs, started);
      });
    }
    // Outside the try: credentials that cannot be obtained (a failing plugin) keep their error type.
    const prepared = await this.#prepare(req);
    let status: number;
    let text: string;
    try {
      const response = await request(this.#url(req), {
        method: req.method,
        headers: prepared.headers,
        body: req.body === undefined ? null : JSON.stringify(req.body),
        dispatcher: prepared.dispatcher,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
      status = response.statusCode;
      text =
        req.maxBytes === undefined
          ? await response.body.text()
          : await boundedText(response.body, req.maxBytes);
    } catch (cause) {
      throw this.#transportError(req, cause, signal, timeoutMs, started);
    }
    this.#count(req, String(status), started);
    this.#logger.debug(
      { verb: req.verb, object: formatRef(req.target), status, ms: Math.round(performance.now() - started) },
      'kube request',
    );
    if (status >= 400 && !req.answers?.includes(status))
      throw this.#refused(req, status, text, prepared.generation);
    return { status, text };
  }

  /**
   * A streaming request (a watch): its body, open-ended, or undefined when `signal` aborted before
   * the response arrived. Only the time to the response headers is bounded.
   */
  async open(req: TransportRequest, signal: AbortSignal): Promise<AsyncIterable<unknown> | undefined> {
    const started = performance.now();
    const prepared = await this.#prepare(req);
    let response: Dispatcher.ResponseData;
    try {
      response = await request(this.#url(req), {
        method: req.method,
        headers: prepared.headers,
        dispatcher: prepared.dispatcher,
        headersTimeout: this.#timeoutMs,
        // Idle detection is the watcher's watchdog: a quiet watch is normal.
        bodyTimeout: 0,
        signal,
      });
    } catch (cause) {
      if (signal.aborted) return undefined;
      throw this.#transportError(req, cause, signal, this.#timeoutMs, started);
    }
    this.#count(req, String(response.statusCode), started);
    if (response.statusCode >= 400) {
      const text = await response.body.text().catch(() => '');
      throw this.#refused(req, response.statusCode, text, prepared.generation);
    }
    return response.body;
  }

  /**
   * Requests made so far by verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`;
   * dry runs as `patch:dryRun` etc.), optionally only those about one kind.
   */
  requestCounts(filter: { kind?: string } = {}): Readonly<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const [kind, verbs] of this.#counts) {
      if (filter.kind !== undefined && filter.kind !== kind) continue;
      for (const [verb, count] of verbs) counts[verb] = (counts[verb] ?? 0) + count;
    }
    return Object.freeze(counts);
  }

  /**
   * Requests that could change the cluster (create, update, patch, delete; dry runs excluded),
   * optionally ignoring some kinds such as the leader-election Lease and Events.
   */
  writeRequestCount(options: { ignoreKinds?: readonly string[] } = {}): number {
    let sum = 0;
    for (const [kind, verbs] of this.#counts) {
      if (options.ignoreKinds?.includes(kind)) continue;
      for (const [verb, count] of verbs) if (WRITE_VERBS.has(verb)) sum += count;
    }
    return sum;
  }

  /** Closes every connection pool; open streams must have been aborted first. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([this.#pool.agent.close(), ...[...this.#retired].map((agent) => agent.close())]);
  }

  async #prepare(
    req: TransportRequest,
  ): Promise<{ headers: Record<string, string>; dispatcher: Agent; generation: number }> {
    if (this.#closed) throw new Error('kube client is closed');
    const credentials = await this.#connection.credentials();
    if (credentials.certificateGeneration !== this.#pool.certificateGeneration) {
      // A new client certificate (an exec plugin's credential expired): a TLS identity is fixed
      // per connection, so new connections in a new pool; what is open on the old one ends there.
      const old = this.#pool.agent;
      this.#pool = this.#newPool(credentials);
      this.#retired.add(old);
      void old
        .close()
        .catch(() => undefined)
        .finally(() => this.#retired.delete(old));
      this.#logger.info('client certificate changed; new connections use it');
    }
    const headers: Record<string, string> = {
      ...credentials.headers,
      accept: 'application/json',
      'user-agent': this.#userAgent,
    };
    if (req.body !== undefined && req.contentType !== undefined) headers['content-type'] = req.contentType;
    return { headers, dispatcher: this.#pool.agent, generation: credentials.generation };
  }

  #newPool(credentials: Credentials): Pool {
    return {
      agent: newAgent(this.#connection, credentials.clientCertificate, this.#http2),
      certificateGeneration: credentials.certificateGeneration,
    };
  }

  #url(req: TransportRequest): string {
    const url = new URL(this.#connection.server + req.path);
    for (const [key, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    return url.toString();
  }

  #refused(req: TransportRequest, status: number, text: string, generation: number): KubeApiError {
    // The credentials were refused: the next request obtains new ones (an exec plugin runs again).
    if (status === 401) this.#connection.invalidate(generation);
    return statusError(req.verb, req.target, status, text);
  }

  /** Counts a request; `started` (performance.now()) also records its duration. */
  #count(req: TransportRequest, code: string, started: number): void {
    if (req.count === undefined) return;
    const verb = req.count.dryRun ? `${req.count.verb}:dryRun` : req.count.verb;
    const kind = req.target.kind;
    const verbs = this.#counts.get(kind) ?? new Map<string, number>();
    verbs.set(verb, (verbs.get(verb) ?? 0) + 1);
    this.#counts.set(kind, verbs);
    this.#metric?.inc({ verb, kind, code });
    this.#durationMetric?.observe({ verb, kind }, (performance.now() - started) / 1000);
  }

  #transportError(
    req: TransportRequest,
    cause: unknown,
    signal: AbortSignal,
    timeoutMs: number,
    started: number,
  ): KubeApiError {
    const aborted = req.options?.signal?.aborted === true;
    // Our own timeout signal is the only other abort source.
    const timedOut = isTimeout(cause) || (!aborted && signal.aborted);
    this.#count(req, aborted ? 'aborted' : timedOut ? 'timeout' : 'network', started);
    return new KubeApiError({
      verb: req.verb,
      ...req.target,
      reason: aborted ? 'Aborted' : timedOut ? 'ClientTimeout' : 'NetworkError',
      serverMessage: aborted
        ? 'aborted by the caller'
        : timedOut
          ? `no answer within ${timeoutMs} ms`
          : `network error${errorCode(cause)}`,
      cause,
    });
  }
}

/**
 * One pool, HTTP/1.1 unless asked (bench:transport measures HTTP/2 against it): a timed-out request
 * takes its socket down and the next opens a fresh one, where on HTTP/2 every request shares a
 * connection that, dead without a word, holds them all until a ping (undici's, every 60 s) finds it
 * out. No connection cap: each watch holds a connection, and a cap would queue ordinary requests
 * behind open watches. One TLS context for every connection: given the CA and key pair instead,
 * Node parses them into a context of its own for each connection (some 40 watches, reopened every
 * few minutes).
 */
function newAgent(
  connection: ClusterConnection,
  certificate: ClientCertificate | undefined,
  http2: boolean,
): Agent {
  const { tls } = connection;
  let secureContext: SecureContext;
  try {
    secureContext = createSecureContext({
      ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      ...(certificate === undefined ? {} : { cert: certificate.cert, key: certificate.key }),
    });
  } catch (error) {
    // Only OpenSSL's error code: its message might quote what it could not parse.
    throw new KubeconfigError({
      reason: 'invalid',
      file: connection.paths?.[0],
      detail: `the certificate authority or client certificate cannot be used for TLS${errorCode(error)}`,
    });
  }
  return new Agent({
    connect: {
      rejectUnauthorized: tls.rejectUnauthorized,
      secureContext,
      ...(tls.servername === undefined ? {} : { servername: tls.servername }),
    },
    allowH2: http2,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 300_000,
  });
}

function requestCounter(registry: Registry): Counter<'verb' | 'kind' | 'code'> {
  const existing = registry.getSingleMetric(METRIC_NAME);
  if (existing instanceof Counter) return existing;
  return new Counter({
    name: METRIC_NAME,
    help: 'Requests to the Kubernetes API by verb (dry runs as <verb>:dryRun), kind and HTTP status or failure',
    labelNames: ['verb', 'kind', 'code'],
    registers: [registry],
  });
}

function requestDuration(registry: Registry): Histogram<'verb' | 'kind'> {
  const existing = registry.getSingleMetric(DURATION_METRIC_NAME);
  if (existing instanceof Histogram) return existing;
  return new Histogram({
    name: DURATION_METRIC_NAME,
    help: 'Duration of requests to the Kubernetes API by verb and kind (watches: until their response headers)',
    labelNames: ['verb', 'kind'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
}

/**
 * A request's signal: aborted by its timeout (a `TimeoutError`, as `AbortSignal.timeout` gives) or
 * by the caller's signal, and released as soon as the request ends. `AbortSignal.any` with
 * `AbortSignal.timeout` would keep both, their timer and a link from the caller's long-lived
 * signal alive for the whole timeout after each request: thousands at a cold sync's pace.
 */
function requestDeadline(
  timeoutMs: number,
  parent: AbortSignal | undefined,
): { readonly signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    timeoutMs,
  );
  const onAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  else parent?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    release: () => {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}

/** The body's first `maxBytes` bytes as text (a multi-byte character cut at the end is dropped). */
async function boundedText(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    chunks.push(buffer.subarray(0, maxBytes - size));
    size += Math.min(buffer.length, maxBytes - size);
    if (size >= maxBytes) {
      body.destroy();
      break;
    }
  }
  return new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks)).replace(/\uFFFD$/, '');
}
