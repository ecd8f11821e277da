// The agent's Kubernetes client: the verbs (apply, create, update, merge patch, delete, get, list,
// watch) on the kinds of the resource table. Transport and credentials (transport.ts,
// kubeconfig.ts), decoding (decode.ts) and the watch stream (watchStream.ts) are their own modules.
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { parseJsonOrUndefined } from '../jsonText.ts';
import type { KubeObject } from '../objects/kubeObject.ts';
import { formatRef } from '../objects/objectRef.ts';
import { FIELD_MANAGER } from '../objects/ownership.ts';
import {
  decodeListPage,
  decodeObject,
  type LiveKubeObject,
  type RawWatchEvent,
  type RequestTarget,
} from './decode.ts';
import { KubeApiError, KubeResponseError, KubeUnsupportedKindError, type KubeVerb } from './errors.ts';
import { type ClusterConnection, loadKubeconfig } from './kubeconfig.ts';
import type { RateLimit } from './rateLimiter.ts';
import {
  findResourceType,
  type KindRef,
  type ManagedKind,
  type ObjectRef,
  type ResourceType,
  resourcePath,
  resourceTypeOf,
} from './resources.ts';
import { type CallOptions, KubeTransport, type RequestVerb, type TransportRequest } from './transport.ts';
import { readWatchStream } from './watchStream.ts';

export type { LiveKubeObject, LiveObjectMeta, RawWatchEvent, WatchEventType } from './decode.ts';
export type { ClusterConnection } from './kubeconfig.ts';
export type { KindRef, ManagedKind, ObjectRef } from './resources.ts';
export type { CallOptions, RequestVerb } from './transport.ts';

export interface KubeClientOptions {
  readonly logger: Logger;
  /** Per request (headers and body), except watches whose bodies are open-ended. Default 30 s. */
  readonly requestTimeoutMs?: number;
  readonly userAgent?: string;
  /** Where `k8s_listener_kube_requests_total` is registered; no metric when absent. */
  readonly registry?: Registry;
  /** `limit` of each list page. Default 500. */
  readonly listPageSize?: number;
  /** Client-side request rate limit (client-go's qps/burst); watches are not limited. */
  readonly rateLimit?: RateLimit;
  /** HTTP/2 where the server offers it; measured by bench:transport, off in the agent. */
  readonly http2?: boolean;
}

export interface ApplyOptions extends CallOptions {
  /** Take ownership of fields another manager owns (SSA `force`). Always sent explicitly. */
  readonly force: boolean;
  readonly dryRun?: boolean | undefined;
}

export interface WriteOptions extends CallOptions {
  readonly dryRun?: boolean | undefined;
}

/** What of a container's log `podLog` reads: its last lines, within a byte budget. */
export interface PodLogQuery {
  readonly container: string;
  /** The instance before the current one (the one that crashed). */
  readonly previous: boolean;
  readonly tailLines: number;
  readonly limitBytes: number;
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

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_PAGE_SIZE = 500;
const LIST_RESTARTS = 3;

interface Endpoint {
  readonly type: ResourceType;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
}

/** The writes: one request shape each, sent by `#write`. */
type WriteVerb = 'apply' | 'create' | 'update' | 'patch' | 'delete';
const WRITES: Readonly<
  Record<
    WriteVerb,
    {
      readonly countVerb: RequestVerb;
      readonly method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
      readonly contentType: string;
      /** Sent to the collection (POST), not to the object. */
      readonly toCollection: boolean;
      /** Our field manager and strict field validation (unknown fields are errors, not dropped). */
      readonly managed: boolean;
      readonly strict: boolean;
    }
  >
> = {
  // JSON is valid YAML: an apply body is the object as JSON.
  apply: {
    countVerb: 'patch',
    method: 'PATCH',
    contentType: 'application/apply-patch+yaml',
    toCollection: false,
    managed: true,
    strict: true,
  },
  create: {
    countVerb: 'create',
    method: 'POST',
    contentType: 'application/json',
    toCollection: true,
    managed: true,
    strict: true,
  },
  update: {
    countVerb: 'update',
    method: 'PUT',
    contentType: 'application/json',
    toCollection: false,
    managed: true,
    strict: true,
  },
  patch: {
    countVerb: 'patch',
    method: 'PATCH',
    contentType: 'application/merge-patch+json',
    toCollection: false,
    managed: true,
    strict: false,
  },
  delete: {
    countVerb: 'delete',
    method: 'DELETE',
    contentType: 'application/json',
    toCollection: false,
    managed: false,
    strict: false,
  },
};

export class KubeClient {
  readonly #transport: KubeTransport;
  readonly #pageSize: number;
  readonly #logger: KubeClientOptions['logger'];
  readonly #watches = new Set<AbortController>();
  #closed = false;

  private constructor(transport: KubeTransport, options: KubeClientOptions) {
    this.#transport = transport;
    this.#pageSize = options.listPageSize ?? DEFAULT_PAGE_SIZE;
    this.#logger = options.logger;
  }

  /**
   * A client for the cluster of a kubeconfig file; without a path, the in-cluster service account
   * when running in a Pod, else the default kubeconfig ($KUBECONFIG, ~/.kube/config).
   */
  static async fromKubeconfig(path: string | undefined, options: KubeClientOptions): Promise<KubeClient> {
    const connection = await loadKubeconfig({ path });
    // Which credentials were picked is the first question when a pod cannot reach the API server.
    options.logger.info({ server: connection.server, source: connection.source }, 'kubernetes API server');
    return KubeClient.fromConnection(connection, options);
  }

  /** A client for a cluster connection (server, TLS trust and rotating credentials). */
  static async fromConnection(
    connection: ClusterConnection,
    options: KubeClientOptions,
  ): Promise<KubeClient> {
    const transport = await KubeTransport.open(connection, {
      logger: options.logger.child({ component: 'kube-client' }),
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      userAgent: options.userAgent ?? 'k8s-listener',
      registry: options.registry,
      rateLimit: options.rateLimit,
      http2: options.http2,
    });
    return new KubeClient(transport, options);
  }

  /** Whether the API server's certificate is verified (false with insecure-skip-tls-verify). */
  get verifiesTls(): boolean {
    return this.#transport.verifiesTls;
  }

  /** Server-side apply (`application/apply-patch+yaml`) as FIELD_MANAGER, with strict field validation. */
  async apply(obj: KubeObject, opts: ApplyOptions): Promise<LiveKubeObject> {
    return this.#writeObject('apply', obj, obj, opts, { force: String(opts.force) });
  }

  /** POST: fails with 409 (`isConflict`) when the object exists. */
  async create(obj: KubeObject, opts: WriteOptions = {}): Promise<LiveKubeObject> {
    return this.#writeObject('create', obj, obj, opts);
  }

  /** PUT: with `metadata.resourceVersion` set, fails with 409 when the object changed meanwhile. */
  async update(obj: KubeObject, opts: WriteOptions = {}): Promise<LiveKubeObject> {
    return this.#writeObject('update', obj, obj, opts);
  }

  /** JSON merge patch (RFC 7386), e.g. one annotation; `null` removes a key. */
  async mergePatch(ref: ObjectRef, patch: unknown, opts: WriteOptions = {}): Promise<LiveKubeObject> {
    return this.#writeObject('patch', ref, patch, opts);
  }

  /**
   * Deletes an object. 'not_found' when it was already gone; a failed precondition (uid) throws a
   * 409 KubeApiError.
   */
  async delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<'deleted' | 'not_found'> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.propagationPolicy !== undefined) body.propagationPolicy = opts.propagationPolicy;
    if (opts.preconditionUid !== undefined) body.preconditions = { uid: opts.preconditionUid };
    try {
      await this.#write('delete', this.#endpointOf(ref), body, opts);
      return 'deleted';
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return 'not_found';
      throw error;
    }
  }

  /** The live object, or undefined when it does not exist. */
  async get(ref: ObjectRef, opts: CallOptions = {}): Promise<LiveKubeObject | undefined> {
    const endpoint = this.#endpointOf(ref);
    const target = targetOf(endpoint);
    const response = await this.#transport.send({
      verb: 'get',
      target,
      count: { verb: 'get', dryRun: false },
      method: 'GET',
      path: pathOf(endpoint),
      options: opts,
      // 404 is an answer here, not an error.
      answers: [404],
    });
    return response.status === 404 ? undefined : decodeObject(response.text, 'get', target);
  }

  /**
   * The tail of a container's log (`pods/log`) as text, bounded by `limitBytes` on the server and
   * by reading no more than that here; undefined when there is none (the pod is gone, the
   * container has no previous instance, or has not started).
   */
  async podLog(
    ref: { readonly namespace: string; readonly name: string },
    query: PodLogQuery,
    opts: CallOptions = {},
  ): Promise<string | undefined> {
    // Counted as its own resource: RBAC grants it apart from the pod (`pods/log`).
    const target = { kind: 'pods/log', namespace: ref.namespace, name: ref.name };
    const response = await this.#transport.send({
      verb: 'get',
      target,
      count: { verb: 'get', dryRun: false },
      method: 'GET',
      path: `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/pods/${encodeURIComponent(ref.name)}/log`,
      query: {
        container: query.container,
        previous: query.previous ? 'true' : undefined,
        tailLines: String(query.tailLines),
        limitBytes: String(query.limitBytes),
      },
      options: opts,
      // No previous instance (400) or no pod (404): no log, not a failure.
      answers: [400, 404],
      maxBytes: query.limitBytes,
    });
    return response.status >= 400 ? undefined : response.text;
  }

  async getNamespace(name: string, opts: CallOptions = {}): Promise<LiveKubeObject | undefined> {
    return this.get({ apiVersion: 'v1', kind: 'Namespace', name }, opts);
  }

  /** Every object of a kind matching the options, or a throw: never a partial listing. */
  async list(kind: ManagedKind | KindRef, opts: ListOptions = {}): Promise<LiveKubeObject[]> {
    return (await this.listWithVersion(kind, opts)).items;
  }

  /** A complete listing and its resourceVersion (`listPages`, its pages held together). */
  async listWithVersion(kind: ManagedKind | KindRef, opts: ListOptions = {}): Promise<CompleteList> {
    let items: LiveKubeObject[] = [];
    const resourceVersion = await this.listPages(kind, opts, (page, restarted) => {
      if (restarted) items = [];
      items.push(...page);
    });
    return { items, resourceVersion };
  }

  /**
   * A complete listing handed to `onPage` a page at a time (`limit`/`continue`), so that a caller
   * can let each page go before the next is read; resolves to the listing's resourceVersion. When
   * a continue token expires (410) the listing starts over, a few times at most, and the first
   * page of the new one comes with `restarted`: what the earlier pages gave is not part of it.
   * Any other failure throws, after the pages before it were handed over.
   */
  async listPages(
    kind: ManagedKind | KindRef,
    opts: ListOptions,
    onPage: (items: LiveKubeObject[], restarted: boolean) => void,
  ): Promise<string> {
    const type = this.#typeOf(kind);
    const endpoint: Endpoint = { type, namespace: opts.namespace, name: undefined };
    const target = targetOf(endpoint);
    const limit = String(opts.pageSize ?? this.#pageSize);
    for (let restart = 0; ; restart++) {
      let token: string | undefined;
      let first = true;
      try {
        for (;;) {
          const response = await this.#transport.send({
            verb: 'list',
            target,
            count: { verb: 'list', dryRun: false },
            method: 'GET',
            path: pathOf(endpoint),
            query: {
              limit,
              continue: token,
              labelSelector: opts.labelSelector,
              fieldSelector: opts.fieldSelector,
            },
            options: opts,
          });
          const page = decodeListPage(response.text, type, target);
          onPage(page.items, first && restart > 0);
          first = false;
          token = page.continueToken;
          if (token === undefined) return page.resourceVersion;
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
   * A raw watch stream (newline-delimited JSON). Ends when the server closes it (timeoutSeconds)
   * or the signal aborts; throws on a failed request, a broken stream, or an `ERROR` event
   * (a 410 Gone throws a KubeApiError with status 410: relist).
   */
  async *watch(kind: ManagedKind | KindRef, opts: WatchOptions): AsyncGenerator<RawWatchEvent> {
    const type = this.#typeOf(kind);
    const endpoint: Endpoint = { type, namespace: opts.namespace, name: undefined };
    const target = targetOf(endpoint);
    if (opts.signal.aborted) return;
    if (this.#closed) throw new Error('kube client is closed');
    const controller = new AbortController();
    const abort = () => controller.abort(opts.signal.reason);
    opts.signal.addEventListener('abort', abort, { once: true });
    this.#watches.add(controller);
    try {
      const body = await this.#transport.open(
        {
          verb: 'watch',
          target,
          count: { verb: 'watch', dryRun: false },
          method: 'GET',
          path: pathOf(endpoint),
          query: {
            watch: 'true',
            labelSelector: opts.labelSelector,
            resourceVersion: opts.resourceVersion || undefined,
            allowWatchBookmarks: opts.allowWatchBookmarks === true ? 'true' : undefined,
            timeoutSeconds: opts.timeoutSeconds === undefined ? undefined : String(opts.timeoutSeconds),
          },
        },
        controller.signal,
      );
      if (body === undefined) return;
      yield* readWatchStream(body, type, target, controller.signal);
    } finally {
      opts.signal.removeEventListener('abort', abort);
      controller.abort();
      this.#watches.delete(controller);
    }
  }

  /** The API server's base URL (from the kubeconfig or the in-cluster configuration). */
  get server(): string {
    return this.#transport.server;
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
    const verb: KubeVerb = method === 'GET' ? 'get' : 'create';
    const response = await this.#transport.send({
      verb,
      target: { kind: options.kind },
      method,
      path,
      body: options.body,
      contentType: 'application/json',
      options,
    });
    const json = parseJsonOrUndefined(response.text);
    if (json === undefined) throw new KubeResponseError(verb, options.kind, 'not JSON');
    return json;
  }

  /**
   * Requests made so far by verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`;
   * dry runs as `patch:dryRun` etc.), optionally only those about one kind.
   */
  requestCounts(filter: { kind?: string } = {}): Readonly<Record<string, number>> {
    return this.#transport.requestCounts(filter);
  }

  /**
   * Requests that could change the cluster (create, update, patch, delete; dry runs excluded),
   * optionally ignoring some kinds such as the leader-election Lease and Events.
   */
  writeRequestCount(options: { ignoreKinds?: readonly string[] } = {}): number {
    return this.#transport.writeRequestCount(options);
  }

  /** Ends open watches and closes the connection pool; safe to call more than once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const watch of this.#watches) watch.abort();
    await this.#transport.close();
  }

  async #writeObject(
    verb: Exclude<WriteVerb, 'delete'>,
    target: ObjectRef | KubeObject,
    body: unknown,
    opts: WriteOptions,
    query: Readonly<Record<string, string>> = {},
  ): Promise<LiveKubeObject> {
    const endpoint = this.#endpointOf(target);
    const response = await this.#write(verb, endpoint, body, opts, query);
    return decodeObject(response.text, verb, targetOf(endpoint));
  }

  /** The one write path: every write verb is this request with its own method, body type and query. */
  async #write(
    verb: WriteVerb,
    endpoint: Endpoint,
    body: unknown,
    opts: WriteOptions,
    query: Readonly<Record<string, string>> = {},
  ): Promise<{ text: string }> {
    const write = WRITES[verb];
    const dryRun = opts.dryRun === true;
    const request: TransportRequest = {
      verb,
      // A create is sent to the collection but is about the named object.
      target: targetOf(endpoint),
      count: { verb: write.countVerb, dryRun },
      method: write.method,
      path: pathOf(write.toCollection ? { ...endpoint, name: undefined } : endpoint),
      query: {
        fieldManager: write.managed ? FIELD_MANAGER : undefined,
        fieldValidation: write.strict ? 'Strict' : undefined,
        ...query,
        dryRun: dryRun ? 'All' : undefined,
      },
      body,
      contentType: write.contentType,
      options: opts,
    };
    return this.#transport.send(request);
  }

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
}

function pathOf(endpoint: Endpoint): string {
  return resourcePath(endpoint.type, endpoint.namespace, endpoint.name);
}

function targetOf(endpoint: Endpoint): RequestTarget {
  return { kind: endpoint.type.kind, namespace: endpoint.namespace, name: endpoint.name };
}
