// A small in-memory cluster behind the reconciler's narrow KubeReader/KubeWriter, for fast unit
// tests of reconcile logic only. It keeps objects by kind/namespace/name with uids and
// resourceVersions, answers failures with the Status structure the real client decodes (status,
// reason, details.kind, causes) and lets a test see or fail any request. What depends on the API
// server itself (defaulting, admission, field ownership) is tested against the real one in
// test/integration.
import { KubeApiError, type KubeVerb, type LiveKubeObject, type ObjectRef } from '../../src/kube/index.ts';
import type { KubeReader, KubeWriter } from '../../src/reconcile/kubeAccess.ts';

type Get = KubeReader['get'];
type List = KubeReader['list'];
type Apply = KubeWriter['apply'];
type Create = KubeWriter['create'];
type MergePatch = KubeWriter['mergePatch'];
type Delete = KubeWriter['delete'];

export type NamespaceState = 'active' | 'terminating' | 'missing';

export interface MemoryCall {
  readonly verb: KubeVerb;
  readonly kind: string;
  readonly namespace: string | undefined;
  /** A server-side dry run: answered, nothing kept. */
  readonly dryRun?: boolean;
}

export class MemoryCluster implements KubeReader, KubeWriter {
  /** Every request, in order. */
  readonly calls: MemoryCall[] = [];
  /** Runs before each request; a throw fails it (the request then changes nothing). */
  before: (call: MemoryCall) => void = () => undefined;
  readonly #objects = new Map<string, LiveKubeObject>();
  readonly #namespaces = new Map<string, NamespaceState>();
  #version = 0;
  #uid = 0;

  constructor(namespaces: readonly string[]) {
    for (const namespace of namespaces) this.#namespaces.set(namespace, 'active');
  }

  setNamespace(namespace: string, state: NamespaceState): void {
    this.#namespaces.set(namespace, state);
  }

  /** The objects held, as `Kind/namespace/name`, sorted. */
  names(kind?: string): string[] {
    return [...this.#objects.values()]
      .filter((o) => kind === undefined || o.kind === kind)
      .map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`)
      .sort();
  }

  /** Removes an object as a hand deletion would. */
  remove(ref: ObjectRef): void {
    this.#objects.delete(keyOf(ref));
  }

  get: Get = async (ref, opts = {}) => {
    this.#enter('get', ref.kind, ref.namespace, opts.signal);
    return copy(this.#objects.get(keyOf(ref)));
  };

  list: List = async (kind, opts = {}) => {
    const kindName = typeof kind === 'string' ? kind : kind.kind;
    this.#enter('list', kindName, opts.namespace, opts.signal);
    const wanted = parseSelector(opts.labelSelector);
    return [...this.#objects.values()]
      .filter((o) => o.kind === kindName)
      .filter((o) => opts.namespace === undefined || o.metadata.namespace === opts.namespace)
      .filter((o) => wanted.every(([key, value]) => o.metadata.labels[key] === value))
      .map((o) => copy(o) as LiveKubeObject);
  };

  apply: Apply = async (object, opts) => {
    const namespace = object.metadata.namespace;
    this.#enter('apply', object.kind, namespace, opts.signal, opts.dryRun);
    this.#admit('apply', object.kind, namespace);
    const held = this.#objects.get(keyOf(refOf(object)));
    // A resourceVersion in the body is a precondition on an existing object (a missing one is made).
    const precondition = object.metadata.resourceVersion;
    if (held && precondition !== undefined && precondition !== held.metadata.resourceVersion)
      throw new KubeApiError({
        verb: 'apply',
        kind: object.kind,
        namespace,
        name: object.metadata.name,
        status: 409,
        reason: 'Conflict',
      });
    // A dry run answers as the write would, and keeps nothing.
    if (opts.dryRun) return this.#live(object, held?.metadata.uid);
    return this.#store(object, held?.metadata.uid);
  };

  create: Create = async (object, opts = {}) => {
    const namespace = object.metadata.namespace;
    this.#enter('create', object.kind, namespace, opts.signal, opts.dryRun);
    this.#admit('create', object.kind, namespace);
    if (this.#objects.has(keyOf(refOf(object))))
      throw new KubeApiError({
        verb: 'create',
        kind: object.kind,
        namespace,
        name: object.metadata.name,
        status: 409,
        reason: 'AlreadyExists',
      });
    if (opts.dryRun) return this.#live(object, undefined);
    return this.#store(object, undefined);
  };

  mergePatch: MergePatch = async (ref, patch, opts = {}) => {
    this.#enter('patch', ref.kind, ref.namespace, opts.signal);
    const held = this.#objects.get(keyOf(ref));
    if (!held) throw notFound('patch', ref);
    return this.#store(merge(held, patch) as LiveKubeObject, held.metadata.uid);
  };

  delete: Delete = async (ref, opts = {}) => {
    this.#enter('delete', ref.kind, ref.namespace, opts.signal);
    const held = this.#objects.get(keyOf(ref));
    if (!held) return 'not_found';
    if (opts.preconditionUid !== undefined && opts.preconditionUid !== held.metadata.uid)
      throw new KubeApiError({
        verb: 'delete',
        kind: ref.kind,
        namespace: ref.namespace,
        name: ref.name,
        status: 409,
        reason: 'Conflict',
      });
    this.#objects.delete(keyOf(ref));
    return 'deleted';
  };

  #enter(
    verb: KubeVerb,
    kind: string,
    namespace: string | undefined,
    signal: AbortSignal | undefined,
    dryRun?: boolean,
  ): void {
    const call = dryRun ? { verb, kind, namespace, dryRun } : { verb, kind, namespace };
    this.calls.push(call);
    // As the real client: a request cut off by its signal fails as Aborted, with no status.
    if (signal?.aborted) throw new KubeApiError({ verb, kind, namespace, reason: 'Aborted' });
    this.before(call);
  }

  /** The NamespaceLifecycle admission: no write into a missing or terminating namespace. */
  #admit(verb: KubeVerb, kind: string, namespace: string | undefined): void {
    if (namespace === undefined) return;
    const state = this.#namespaces.get(namespace) ?? 'missing';
    if (state === 'missing')
      throw new KubeApiError({
        verb,
        kind,
        namespace,
        status: 404,
        reason: 'NotFound',
        subject: { kind: 'namespaces', name: namespace },
      });
    if (state === 'terminating')
      throw new KubeApiError({
        verb,
        kind,
        namespace,
        status: 403,
        reason: 'Forbidden',
        causes: [{ field: undefined, reason: 'NamespaceTerminating' }],
      });
  }

  #store(
    object: { kind: string; metadata: { name: string; namespace?: string | undefined } },
    uid: string | undefined,
  ) {
    const live = this.#live(object, uid);
    this.#objects.set(keyOf(refOf(live)), live);
    return copy(live) as LiveKubeObject;
  }

  /** The object as the server would hold it (a dry run answers this, and keeps nothing). */
  #live(
    object: { kind: string; metadata: { name: string; namespace?: string | undefined } },
    uid: string | undefined,
  ): LiveKubeObject {
    const source = object as LiveKubeObject;
    return {
      ...structuredClone(source),
      metadata: {
        ...structuredClone(source.metadata),
        labels: { ...(source.metadata.labels ?? {}) },
        annotations: { ...(source.metadata.annotations ?? {}) },
        uid: uid ?? `uid-${++this.#uid}`,
        resourceVersion: String(++this.#version),
      },
    } as LiveKubeObject;
  }
}

function refOf(object: { kind: string; metadata: { name: string; namespace?: string | undefined } }) {
  return { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name };
}

function keyOf(ref: { kind: string; namespace?: string | undefined; name: string }): string {
  return `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
}

function copy(object: LiveKubeObject | undefined): LiveKubeObject | undefined {
  return object === undefined ? undefined : structuredClone(object);
}

function notFound(verb: KubeVerb, ref: ObjectRef): KubeApiError {
  return new KubeApiError({
    verb,
    kind: ref.kind,
    namespace: ref.namespace,
    name: ref.name,
    status: 404,
    reason: 'NotFound',
    subject: { kind: ref.kind.toLowerCase(), name: ref.name },
  });
}

function parseSelector(selector: string | undefined): [string, string][] {
  if (!selector) return [];
  return selector.split(',').map((term) => {
    const [key = '', value = ''] = term.split('=');
    return [key, value];
  });
}

/** RFC 7386 JSON merge patch. */
function merge(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key];
    else base[key] = merge(base[key], value);
  }
  return base;
}
