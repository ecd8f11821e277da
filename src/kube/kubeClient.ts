// The agent's Kubernetes client: raw HTTP over one keep-alive pool, with the KubeConfig of
// @kubernetes/client-node used only for the server address, TLS and credentials.
import { existsSync } from 'node:fs';
import type { RequestOptions as HttpsRequestOptions } from 'node:https';
import type { ConnectionOptions } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import { Agent, type Dispatcher, request } from 'undici';
import { z } from 'zod';
import { parseJsonOrUndefined } from '../jsonText.ts';
import type { KubeObject } from '../objects/kubeObject.ts';
import { FIELD_MANAGER } from '../objects/ownership.ts';
import {
  KubeApiError,
  KubeResponseError,
  type KubeStatusCause,
  KubeUnsupportedKindError,
  type KubeVerb,
} from './errors.ts';
import {
  findResourceType,
  formatRef,
  type KindRef,
  type ManagedKind,
  type ObjectRef,
  type ResourceType,
  resourcePath,
  resourceTypeOf,
} from './resources.ts';

export type { KindRef, ManagedKind, ObjectRef } from './resources.ts';

/** Metadata of an object read back from the API server. */
export interface LiveObjectMeta {
  name: string;
  namespace?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** '' only for dry-run creations. */
  uid: string;
  /** '' only for dry-run creations. */
  resourceVersion: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  [key: string]: unknown;
}

/** An object as the API server returned it (status included); a `KubeObject` with server metadata. */
export interface LiveKubeObject extends KubeObject {
  metadata: LiveObjectMeta;
}

export interface KubeClientOptions {
  readonly logger: Logger;
  /** Per request (headers and body), except watches whose bodies are open-ended. Default 30 s. */
  readonly requestTimeoutMs?: number;
  readonly userAgent?: string;
  /** Where `k8s_listener_kube_requests_total` is registered; no metric when absent. */
  readonly registry?: Registry;
  /** `limit` of each list page. Default 500. */
  readonly listPageSize?: number;
}

/** Per-call options: an abort signal (e.g. leadership lost) and a tighter timeout. */
export interface CallOptions {
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
}

export interface ApplyOptions extends CallOptions {
  /** Take ownership of fields another manager owns (SSA `force`). Always sent explicitly. */
  readonly force: boolean;
  readonly dryRun?: boolean | undefined;
}

export interface WriteOptions extends CallOptions {
  readonly dryRun?: boolean | undefined;
}

export interface ListOptions extends CallOptions {
  /** Absent: every namespace (cluster-wide collection). */
  readonly namespace?: string | undefined;
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
  /** Overrides the client's `listPageSize` for this listing. */
  readonly pageSize?: number | undefined;
}

export interface DeleteOptions extends CallOptions {
  readonly propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' | undefined;
  /** Delete only if the live object still has this uid (it was not deleted and recreated meanwhile). */
  readonly preconditionUid?: string | undefined;
  readonly dryRun?: boolean | undefined;
}

export interface CompleteList {
  readonly items: LiveKubeObject[];
  /** The collection's resourceVersion: where a watch continues from. */
  readonly resourceVersion: string;
}

export interface WatchOptions {
  readonly namespace?: string | undefined;
  readonly labelSelector?: string | undefined;
  /** Start after this version ('' or absent: the server's choice, which begins with synthetic ADDED events). */
  readonly resourceVersion?: string | undefined;
  readonly allowWatchBookmarks?: boolean | undefined;
  /** Server-side duration of the watch; the stream then ends normally. */
  readonly timeoutSeconds?: number | undefined;
  /** Closes the stream. */
  readonly signal: AbortSignal;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** One event of a watch stream. `ERROR` events are thrown as `KubeApiError` (410 → `isGone`). */
export interface RawWatchEvent {
  readonly type: WatchEventType;
  readonly object: LiveKubeObject;
}

/** Verbs as counted by `requestCounts()`; dry-run writes are counted as `<verb>:dryRun`. */
export type RequestVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';
const WRITE_VERBS: readonly RequestVerb[] = ['create', 'update', 'patch', 'delete'];

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_PAGE_SIZE = 500;
const LIST_RESTARTS = 3;
const AUTH_CACHE_MS = 10_000;
const MAX_ERROR_TEXT = 300;
const METRIC_NAME = 'k8s_listener_kube_requests_total';
const DURATION_METRIC_NAME = 'k8s_listener_kube_request_duration_seconds';
const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

const StringMap = z.record(z.string(), z.string());
const LiveObjectSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string().optional(),
    labels: StringMap.nullish(),
    annotations: StringMap.nullish(),
    uid: z.string().default(''),
    resourceVersion: z.string().default(''),
  }),
});
const ListSchema = z.looseObject({
  metadata: z.looseObject({
    resourceVersion: z.string().optional(),
    continue: z.string().optional(),
  }),
  items: z.array(z.unknown()).nullish(),
});
const StatusSchema = z.looseObject({
  kind: z.literal('Status'),
  message: z.string().optional(),
  reason: z.string().optional(),
  code: z.number().optional(),
  details: z
    .looseObject({
      causes: z
        .array(z.looseObject({ field: z.string().optional(), reason: z.string().optional() }))
        .optional(),
      retryAfterSeconds: z.number().optional(),
      kind: z.string().optional(),
      name: z.string().optional(),
    })
    .optional(),
});
const BookmarkSchema = z.object({ metadata: z.object({ resourceVersion: z.string().min(1) }) });
const WatchEventSchema = z.object({
  type: z.enum(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']),
  object: z.unknown(),
});

interface Endpoint {
  readonly type: ResourceType;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
}

interface Call {
  readonly verb: KubeVerb;
  readonly countVerb: RequestVerb;
  readonly dryRun: boolean;
  readonly endpoint: Endpoint;
  /** The object's name when the URL is its collection's (create). */
  readonly objectName?: string | undefined;
  readonly method: Dispatcher.HttpMethod;
  readonly query?: Record<string, string | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly options?: CallOptions | undefined;
}

interface Response {
  readonly status: number;
  readonly text: string;
}

export class KubeClient {
  readonly #config: KubeConfig;
  readonly #server: string;
  readonly #dispatcher: Agent;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  readonly #pageSize: number;
  readonly #userAgent: string;
  readonly #counts = new Map<string, number>();
  readonly #metric: Counter<'verb' | 'kind' | 'code'> | undefined;
  readonly #durationMetric: Histogram<'verb' | 'kind'> | undefined;
  readonly #watches = new Set<AbortController>();
  #auth: { headers: Record<string, string>; at: number } | undefined;
  #closed = false;

  private constructor(config: KubeConfig, server: string, dispatcher: Agent, options: KubeClientOptions) {
    this.#config = config;
    this.#server = server;
    this.#dispatcher = dispatcher;
    this.#logger = options.logger.child({ component: 'kube-client' });
    this.#timeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#pageSize = options.listPageSize ?? DEFAULT_PAGE_SIZE;
    this.#userAgent = options.userAgent ?? 'k8s-listener';
    this.#metric = options.registry === undefined ? undefined : requestCounter(options.registry);
    this.#durationMetric = options.registry === undefined ? undefined : requestDuration(options.registry);
  }

  /**
   * A client for the cluster of a kubeconfig file; without a path, the in-cluster service account
   * when running in a Pod, else the default kubeconfig ($KUBECONFIG, ~/.kube/config).
   */
  static async fromKubeconfig(path: string | undefined, options: KubeClientOptions): Promise<KubeClient> {
    const config = new KubeConfig();
    if (path !== undefined) config.loadFromFile(path);
    else if (process.env.KUBERNETES_SERVICE_HOST && existsSync(IN_CLUSTER_TOKEN)) config.loadFromCluster();
    else config.loadFromDefault();
    return KubeClient.fromKubeConfig(config, options);
  }

  /** A client for the current context of an already loaded KubeConfig. */
  static async fromKubeConfig(config: KubeConfig, options: KubeClientOptions): Promise<KubeClient> {
    const cluster = config.getCurrentCluster();
    if (cluster === null) throw new Error('kubeconfig has no current cluster');
    const tls: HttpsRequestOptions = {};
    await config.applyToHTTPSOptions(tls);
    const connect: ConnectionOptions = {
      ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      ...(tls.cert === undefined ? {} : { cert: tls.cert }),
      ...(tls.key === undefined ? {} : { key: tls.key }),
      ...(tls.pfx === undefined ? {} : { pfx: tls.pfx }),
      ...(tls.passphrase === undefined ? {} : { passphrase: tls.passphrase }),
      ...(tls.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: tls.rejectUnauthorized }),
      ...(tls.servername === undefined ? {} : { servername: tls.servername }),
    };
    // One pool for the client's life, HTTP/1.1 only: with HTTP/2 every request would share one
    // connection, and a silently dead one (no health pings here) would stall them all until TCP
    // gives up; on HTTP/1.1 a timed-out request takes its socket down and the next opens a fresh
    // one. No connection cap: each watch holds a connection, and a cap would queue ordinary
    // requests behind open watches.
    const dispatcher = new Agent({
      connect: connect as NonNullable<Agent.Options['connect']>,
      allowH2: false,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 300_000,
    });
    return new KubeClient(config, cluster.server.replace(/\/+$/, ''), dispatcher, options);
  }

  /** Server-side apply (`application/apply-patch+yaml`) as FIELD_MANAGER, with strict field validation. */
  async apply(obj: KubeObject, opts: ApplyOptions): Promise<LiveKubeObject> {
    const endpoint = this.#endpointOf(obj);
    const response = await this.#call({
      verb: 'apply',
      countVerb: 'patch',
      dryRun: opts.dryRun === true,
      endpoint,
      method: 'PATCH',
      query: {
        fieldManager: FIELD_MANAGER,
        fieldValidation: 'Strict',
        force: String(opts.force),
        dryRun: opts.dryRun === true ? 'All' : undefined,
      },
      // JSON is valid YAML.
      body: obj,
      contentType: 'application/apply-patch+yaml',
      options: opts,
    });
    return this.#object(response, 'apply', endpoint);
  }

  /** POST: fails with 409 (`isConflict`) when the object exists. */
  async create(obj: KubeObject, opts: WriteOptions = {}): Promise<LiveKubeObject> {
    const target = this.#endpointOf(obj);
    const endpoint: Endpoint = { ...target, name: undefined };
    const response = await this.#call({
      verb: 'create',
      countVerb: 'create',
      dryRun: opts.dryRun === true,
      endpoint,
      objectName: target.name,
      method: 'POST',
      query: {
        fieldManager: FIELD_MANAGER,
        fieldValidation: 'Strict',
        dryRun: opts.dryRun === true ? 'All' : undefined,
      },
      body: obj,
      contentType: 'application/json',
      options: opts,
    });
    return this.#object(response, 'create', target);
  }

  /** PUT: with `metadata.resourceVersion` set, fails with 409 when the object changed meanwhile. */
  async update(obj: KubeObject, opts: WriteOptions = {}): Promise<LiveKubeObject> {
    const endpoint = this.#endpointOf(obj);
    const response = await this.#call({
      verb: 'update',
      countVerb: 'update',
      dryRun: opts.dryRun === true,
      endpoint,
      method: 'PUT',
      query: {
        fieldManager: FIELD_MANAGER,
        fieldValidation: 'Strict',
        dryRun: opts.dryRun === true ? 'All' : undefined,
      },
      body: obj,
      contentType: 'application/json',
      options: opts,
    });
    return this.#object(response, 'update', endpoint);
  }

  /** JSON merge patch (RFC 7386), e.g. one annotation; `null` removes a key. */
  async mergePatch(ref: ObjectRef, patch: unknown, opts: WriteOptions = {}): Promise<LiveKubeObject> {
    const endpoint = this.#endpointOf(ref);
    const response = await this.#call({
      verb: 'patch',
      countVerb: 'patch',
      dryRun: opts.dryRun === true,
      endpoint,
      method: 'PATCH',
      query: { fieldManager: FIELD_MANAGER, dryRun: opts.dryRun === true ? 'All' : undefined },
      body: patch,
      contentType: 'application/merge-patch+json',
      options: opts,
    });
    return this.#object(response, 'patch', endpoint);
  }

  /** The live object, or undefined when it does not exist. */
  async get(ref: ObjectRef, opts: CallOptions = {}): Promise<LiveKubeObject | undefined> {
    const endpoint = this.#endpointOf(ref);
    const response = await this.#call({
      verb: 'get',
      countVerb: 'get',
      dryRun: false,
      endpoint,
      method: 'GET',
      options: opts,
      // 404 is an answer here, not an error.
    }).catch((error: unknown) => {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      throw error;
    });
    return response === undefined ? undefined : this.#object(response, 'get', endpoint);
  }

  async getNamespace(name: string, opts: CallOptions = {}): Promise<LiveKubeObject | undefined> {
    return this.get({ apiVersion: 'v1', kind: 'Namespace', name }, opts);
  }

  /** Every object of a kind matching the options, or a throw: never a partial listing. */
  async list(kind: ManagedKind | KindRef, opts: ListOptions = {}): Promise<LiveKubeObject[]> {
    return (await this.listWithVersion(kind, opts)).items;
  }

  /**
   * A complete listing and its resourceVersion. Pages with `limit`/`continue`; when a continue
   * token expires (410) the listing starts over, a few times at most; any other failure throws.
   */
  async listWithVersion(kind: ManagedKind | KindRef, opts: ListOptions = {}): Promise<CompleteList> {
    const type = this.#typeOf(kind);
    const endpoint: Endpoint = { type, namespace: opts.namespace, name: undefined };
    const limit = String(opts.pageSize ?? this.#pageSize);
    for (let restart = 0; ; restart++) {
      const items: LiveKubeObject[] = [];
      let token: string | undefined;
      try {
        for (;;) {
          const response = await this.#call({
            verb: 'list',
            countVerb: 'list',
            dryRun: false,
            endpoint,
            method: 'GET',
            query: {
              limit,
              continue: token,
              labelSelector: opts.labelSelector,
              fieldSelector: opts.fieldSelector,
            },
            options: opts,
          });
          const page = ListSchema.safeParse(parseJsonOrUndefined(response.text));
          if (!page.success)
            throw new KubeResponseError('list', formatRef(endpointRef(endpoint)), 'not a list');
          for (const item of page.data.items ?? []) items.push(this.#item(item, type, endpoint));
          token = page.data.metadata.continue || undefined;
          if (token === undefined)
            return { items, resourceVersion: page.data.metadata.resourceVersion ?? '' };
        }
      } catch (error) {
        const expired = token !== undefined && error instanceof KubeApiError && error.status === 410;
        if (!expired || restart >= LIST_RESTARTS) throw error;
        this.#logger.info(
          { kind: type.kind, namespace: opts.namespace },
          'list continue token expired; relisting',
        );
      }
    }
  }

  /**
   * Deletes an object. 'not_found' when it was already gone; a failed precondition (uid) throws a
   * 409 KubeApiError.
   */
  async delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<'deleted' | 'not_found'> {
    const endpoint = this.#endpointOf(ref);
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.propagationPolicy !== undefined) body.propagationPolicy = opts.propagationPolicy;
    if (opts.preconditionUid !== undefined) body.preconditions = { uid: opts.preconditionUid };
    try {
      await this.#call({
        verb: 'delete',
        countVerb: 'delete',
        dryRun: opts.dryRun === true,
        endpoint,
        method: 'DELETE',
        query: { dryRun: opts.dryRun === true ? 'All' : undefined },
        body,
        contentType: 'application/json',
        options: opts,
      });
      return 'deleted';
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return 'not_found';
      throw error;
    }
  }

  /**
   * A raw watch stream (newline-delimited JSON). Ends when the server closes it (timeoutSeconds)
   * or the signal aborts; throws on a failed request, a broken stream, or an `ERROR` event
   * (a 410 Gone throws a KubeApiError with status 410: relist).
   */
  async *watch(kind: ManagedKind | KindRef, opts: WatchOptions): AsyncGenerator<RawWatchEvent> {
    const type = this.#typeOf(kind);
    const endpoint: Endpoint = { type, namespace: opts.namespace, name: undefined };
    const ref = formatRef(endpointRef(endpoint));
    const controller = new AbortController();
    const abort = () => controller.abort(opts.signal.reason);
    if (opts.signal.aborted) return;
    opts.signal.addEventListener('abort', abort, { once: true });
    this.#watches.add(controller);
    try {
      const query: Record<string, string | undefined> = {
        watch: 'true',
        labelSelector: opts.labelSelector,
        resourceVersion: opts.resourceVersion || undefined,
        allowWatchBookmarks: opts.allowWatchBookmarks === true ? 'true' : undefined,
        timeoutSeconds: opts.timeoutSeconds === undefined ? undefined : String(opts.timeoutSeconds),
      };
      const body = await this.#open(
        { verb: 'watch', countVerb: 'watch', dryRun: false, endpoint, method: 'GET', query },
        controller.signal,
      );
      if (body === undefined) return;
      const decoder = new TextDecoder();
      const chunks = body[Symbol.asyncIterator]();
      let buffered = '';
      for (;;) {
        let next: IteratorResult<unknown>;
        try {
          next = await chunks.next();
        } catch (cause) {
          if (controller.signal.aborted) return;
          throw new KubeApiError({ ...errorTarget('watch', endpoint), reason: 'StreamBroken', cause });
        }
        if (next.done) break;
        buffered += decoder.decode(next.value as Uint8Array, { stream: true });
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          newline = buffered.indexOf('\n');
          if (line !== '') yield this.#watchEvent(line, type, endpoint, ref);
        }
      }
      const rest = buffered.trim();
      if (rest !== '') yield this.#watchEvent(rest, type, endpoint, ref);
    } finally {
      opts.signal.removeEventListener('abort', abort);
      controller.abort();
      this.#watches.delete(controller);
    }
  }

  /** The API server's base URL (from the kubeconfig or the in-cluster configuration). */
  get server(): string {
    return this.#server;
  }

  /**
   * A GET or POST to a path outside the kind table (`/version`, the self-review APIs), through the
   * same pool, credentials and timeout. Returns the parsed JSON body; a status ≥ 400 or a failed
   * request throws a `KubeApiError` naming `kind` (what was asked for).
   */
  async requestJson(
    method: 'GET' | 'POST',
    path: string,
    options: CallOptions & { readonly kind: string; readonly body?: unknown },
  ): Promise<unknown> {
    if (this.#closed) throw new Error('kube client is closed');
    const verb: KubeVerb = method === 'GET' ? 'get' : 'create';
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const signal = AbortSignal.any([
      AbortSignal.timeout(timeoutMs),
      ...(options.signal === undefined ? [] : [options.signal]),
    ]);
    let status: number;
    let text: string;
    try {
      const response = await request(this.#server + path, {
        method,
        headers: await this.#headers(options.body === undefined ? undefined : 'application/json'),
        body: options.body === undefined ? null : JSON.stringify(options.body),
        dispatcher: this.#dispatcher,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (cause) {
      const timedOut = isTimeout(cause) || (options.signal?.aborted !== true && signal.aborted);
      throw new KubeApiError({
        verb,
        kind: options.kind,
        reason: timedOut ? 'ClientTimeout' : 'NetworkError',
        serverMessage: timedOut ? `no answer within ${timeoutMs} ms` : `network error${errorCode(cause)}`,
        cause,
      });
    }
    const json = parseJsonOrUndefined(text);
    if (status >= 400) {
      if (status === 401) this.#auth = undefined;
      const body = StatusSchema.safeParse(json);
      throw new KubeApiError({
        verb,
        kind: options.kind,
        status,
        reason: body.success ? (body.data.reason ?? `HTTP${status}`) : `HTTP${status}`,
        serverMessage: body.success ? body.data.message : text.slice(0, MAX_ERROR_TEXT) || undefined,
      });
    }
    if (json === undefined) throw new KubeResponseError(verb, options.kind, 'not JSON');
    return json;
  }

  /**
   * Requests made so far by verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`;
   * dry runs as `patch:dryRun` etc.), optionally only those about one kind.
   */
  requestCounts(filter: { kind?: string } = {}): Readonly<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const [key, count] of this.#counts) {
      const [kind, verb] = key.split(' ') as [string, string];
      if (filter.kind !== undefined && filter.kind !== kind) continue;
      counts[verb] = (counts[verb] ?? 0) + count;
    }
    return Object.freeze(counts);
  }

  /**
   * Requests that could change the cluster (create, update, patch, delete; dry runs excluded),
   * optionally ignoring some kinds such as the leader-election Lease and Events.
   */
  writeRequestCount(options: { ignoreKinds?: readonly string[] } = {}): number {
    let sum = 0;
    for (const [key, count] of this.#counts) {
      const [kind, verb] = key.split(' ') as [string, string];
      if (options.ignoreKinds?.includes(kind)) continue;
      if ((WRITE_VERBS as readonly string[]).includes(verb)) sum += count;
    }
    return sum;
  }

  /** Ends open watches and closes the connection pool; safe to call more than once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const watch of this.#watches) watch.abort();
    await this.#dispatcher.close();
  }

  // --- Transport

  #typeOf(kind: ManagedKind | KindRef): ResourceType {
    const type = resourceTypeOf(kind);
    if (type !== undefined) return type;
    if (typeof kind === 'string') throw new KubeUnsupportedKindError('', kind);
    throw new KubeUnsupportedKindError(kind.apiVersion, kind.kind);
  }

  #endpointOf(target: ObjectRef | KubeObject): Endpoint {
    const type = findResourceType(target.apiVersion, target.kind);
    if (type === undefined) throw new KubeUnsupportedKindError(target.apiVersion, target.kind);
    const { name, namespace } = 'metadata' in target ? target.metadata : target;
    if (type.namespaced && !namespace)
      throw new Error(`${formatRef({ kind: type.kind, name })} has no namespace`);
    return { type, namespace: type.namespaced ? namespace : undefined, name };
  }

  #object(response: Response, verb: KubeVerb, endpoint: Endpoint): LiveKubeObject {
    const parsed = LiveObjectSchema.safeParse(parseJsonOrUndefined(response.text));
    if (!parsed.success) {
      throw new KubeResponseError(verb, formatRef(endpointRef(endpoint)), 'not a Kubernetes object');
    }
    return normalize(parsed.data);
  }

  #item(raw: unknown, type: ResourceType, endpoint: Endpoint): LiveKubeObject {
    // List items omit apiVersion and kind.
    const withKind =
      typeof raw === 'object' && raw !== null
        ? { apiVersion: type.apiVersion, kind: type.kind, ...raw }
        : raw;
    const parsed = LiveObjectSchema.safeParse(withKind);
    if (!parsed.success) {
      throw new KubeResponseError(
        'list',
        formatRef(endpointRef(endpoint)),
        'an item is not a Kubernetes object',
      );
    }
    return normalize(parsed.data);
  }

  #watchEvent(line: string, type: ResourceType, endpoint: Endpoint, ref: string): RawWatchEvent {
    const event = WatchEventSchema.safeParse(parseJsonOrUndefined(line));
    if (!event.success) throw new KubeResponseError('watch', ref, 'not a watch event');
    if (event.data.type === 'ERROR') {
      const status = StatusSchema.safeParse(event.data.object);
      throw new KubeApiError({
        ...errorTarget('watch', endpoint),
        status: status.success ? status.data.code : undefined,
        reason: status.success ? status.data.reason : 'InvalidStatus',
        serverMessage: status.success ? status.data.message : undefined,
      });
    }
    const raw = event.data.object;
    if (event.data.type === 'BOOKMARK') {
      // A bookmark carries only a resourceVersion (no name, no uid).
      const bookmark = BookmarkSchema.safeParse(raw);
      if (!bookmark.success) throw new KubeResponseError('watch', ref, 'a bookmark has no resourceVersion');
      const metadata = { name: '', labels: {}, annotations: {}, uid: '', ...bookmark.data.metadata };
      return { type: 'BOOKMARK', object: { apiVersion: type.apiVersion, kind: type.kind, metadata } };
    }
    const withKind =
      typeof raw === 'object' && raw !== null
        ? { apiVersion: type.apiVersion, kind: type.kind, ...raw }
        : raw;
    const parsed = LiveObjectSchema.safeParse(withKind);
    if (!parsed.success)
      throw new KubeResponseError('watch', ref, 'an event object is not a Kubernetes object');
    return { type: event.data.type, object: normalize(parsed.data) };
  }

  async #headers(contentType: string | undefined): Promise<Record<string, string>> {
    const now = Date.now();
    if (this.#auth === undefined || now - this.#auth.at > AUTH_CACHE_MS) {
      // Re-read credentials now and then: in-cluster tokens and exec plugins rotate them.
      const options: HttpsRequestOptions = {};
      await this.#config.applyToHTTPSOptions(options);
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(options.headers ?? {})) {
        if (typeof value === 'string') headers[key.toLowerCase()] = value;
      }
      if (typeof options.auth === 'string') {
        headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
      }
      this.#auth = { headers, at: now };
    }
    const headers: Record<string, string> = {
      ...this.#auth.headers,
      accept: 'application/json',
      'user-agent': this.#userAgent,
    };
    if (contentType !== undefined) headers['content-type'] = contentType;
    return headers;
  }

  #url(endpoint: Endpoint, query: Record<string, string | undefined> | undefined): string {
    const url = new URL(this.#server + resourcePath(endpoint.type, endpoint.namespace, endpoint.name));
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    return url.toString();
  }

  /** Counts a request; `started` (performance.now()) also records its duration. */
  #count(call: Pick<Call, 'countVerb' | 'dryRun' | 'endpoint'>, code: string, started?: number): void {
    const verb = call.dryRun ? `${call.countVerb}:dryRun` : call.countVerb;
    const key = `${call.endpoint.type.kind} ${verb}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    this.#metric?.inc({ verb, kind: call.endpoint.type.kind, code });
    if (started !== undefined)
      this.#durationMetric?.observe(
        { verb, kind: call.endpoint.type.kind },
        (performance.now() - started) / 1000,
      );
  }

  async #call(call: Call): Promise<Response> {
    if (this.#closed) throw new Error('kube client is closed');
    const timeoutMs = call.options?.timeoutMs ?? this.#timeoutMs;
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (call.options?.signal !== undefined) signals.push(call.options.signal);
    const signal = AbortSignal.any(signals);
    const started = performance.now();
    let status: number;
    let text: string;
    try {
      const response = await request(this.#url(call.endpoint, call.query), {
        method: call.method,
        headers: await this.#headers(call.body === undefined ? undefined : call.contentType),
        body: call.body === undefined ? null : JSON.stringify(call.body),
        dispatcher: this.#dispatcher,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (cause) {
      throw this.#transportError(call, cause, signal, timeoutMs, started);
    }
    this.#count(call, String(status), started);
    this.#logger.debug(
      {
        verb: call.verb,
        object: formatRef({ ...endpointRef(call.endpoint), name: call.objectName ?? call.endpoint.name }),
        status,
        ms: Math.round(performance.now() - started),
      },
      'kube request',
    );
    if (status >= 400) {
      if (status === 401) this.#auth = undefined;
      throw statusError(call, status, text);
    }
    return { status, text };
  }

  /** Opens a streaming GET; undefined when aborted before the response arrived. */
  async #open(call: Call, signal: AbortSignal): Promise<AsyncIterable<unknown> | undefined> {
    if (this.#closed) throw new Error('kube client is closed');
    let response: Dispatcher.ResponseData;
    // A watch's duration is the time to its response headers: the stream itself is open-ended.
    const started = performance.now();
    try {
      response = await request(this.#url(call.endpoint, call.query), {
        method: call.method,
        headers: await this.#headers(undefined),
        dispatcher: this.#dispatcher,
        headersTimeout: this.#timeoutMs,
        // Idle detection is the watcher's watchdog: a quiet watch is normal.
        bodyTimeout: 0,
        signal,
      });
    } catch (cause) {
      if (signal.aborted) return undefined;
      throw this.#transportError(call, cause, signal, this.#timeoutMs, started);
    }
    this.#count(call, String(response.statusCode), started);
    if (response.statusCode >= 400) {
      const text = await response.body.text().catch(() => '');
      if (response.statusCode === 401) this.#auth = undefined;
      throw statusError(call, response.statusCode, text);
    }
    return response.body;
  }

  #transportError(
    call: Call,
    cause: unknown,
    signal: AbortSignal,
    timeoutMs: number,
    started: number,
  ): KubeApiError {
    const aborted = call.options?.signal?.aborted === true;
    // Our own timeout signal is the only other abort source.
    const timedOut = isTimeout(cause) || (!aborted && signal.aborted);
    const code = aborted ? 'aborted' : timedOut ? 'timeout' : 'network';
    this.#count(call, code, started);
    return new KubeApiError({
      ...errorTarget(call.verb, call.endpoint, call.objectName),
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

function requestCounter(registry: Registry): Counter<'verb' | 'kind' | 'code'> {
  const existing = registry.getSingleMetric(METRIC_NAME);
  if (existing instanceof Counter) return existing as Counter<'verb' | 'kind' | 'code'>;
  return new Counter({
    name: METRIC_NAME,
    help: 'Requests to the Kubernetes API by verb (dry runs as <verb>:dryRun), kind and HTTP status or failure',
    labelNames: ['verb', 'kind', 'code'],
    registers: [registry],
  });
}

function requestDuration(registry: Registry): Histogram<'verb' | 'kind'> {
  const existing = registry.getSingleMetric(DURATION_METRIC_NAME);
  if (existing instanceof Histogram) return existing as Histogram<'verb' | 'kind'>;
  return new Histogram({
    name: DURATION_METRIC_NAME,
    help: 'Duration of requests to the Kubernetes API by verb and kind (watches: until their response headers)',
    labelNames: ['verb', 'kind'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
}

function normalize(raw: z.infer<typeof LiveObjectSchema>): LiveKubeObject {
  const { labels, annotations, ...metadata } = raw.metadata;
  return {
    ...raw,
    metadata: { ...metadata, labels: labels ?? {}, annotations: annotations ?? {} },
  } as LiveKubeObject;
}

function endpointRef(endpoint: Endpoint): {
  kind: string;
  namespace?: string | undefined;
  name?: string | undefined;
} {
  return { kind: endpoint.type.kind, namespace: endpoint.namespace, name: endpoint.name };
}

function errorTarget(verb: KubeVerb, endpoint: Endpoint, objectName?: string) {
  return { verb, kind: endpoint.type.kind, namespace: endpoint.namespace, name: objectName ?? endpoint.name };
}

function statusError(call: Call, status: number, text: string): KubeApiError {
  const parsed = StatusSchema.safeParse(parseJsonOrUndefined(text));
  const body = parsed.success ? parsed.data : undefined;
  const causes: KubeStatusCause[] = (body?.details?.causes ?? []).map((cause) => ({
    field: cause.field,
    reason: cause.reason,
  }));
  const retryAfter = body?.details?.retryAfterSeconds;
  // Server-side apply reports a patch that does not fit the schema (unknown or mistyped field)
  // as a 500 without reason; it is an invalid object, not a server failure.
  const typedPatch = status === 500 && body?.message?.startsWith('failed to create typed patch object');
  if (typedPatch) {
    const field = /\): (\.[^\s:]+):/.exec(body?.message ?? '')?.[1];
    if (field !== undefined) causes.push({ field: field.slice(1), reason: 'FieldValueInvalid' });
  }
  return new KubeApiError({
    ...errorTarget(call.verb, call.endpoint, call.objectName),
    status,
    reason: typedPatch ? 'Invalid' : (body?.reason ?? `HTTP${status}`),
    serverMessage: body?.message ?? (text.slice(0, MAX_ERROR_TEXT) || undefined),
    causes,
    subject:
      body?.details?.kind === undefined ? undefined : { kind: body.details.kind, name: body.details.name },
    retryAfterMs: retryAfter === undefined ? undefined : retryAfter * 1000,
  });
}

function isTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (
    error.name === 'TimeoutError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  );
}

function errorCode(error: unknown): string {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  const nested = error instanceof Error ? (error.cause as { code?: unknown } | undefined)?.code : undefined;
  const found = typeof code === 'string' ? code : typeof nested === 'string' ? nested : undefined;
  return found === undefined ? '' : ` (${found})`;
}
