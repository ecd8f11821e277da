// The agent's own objects as its watches last saw them, so that a reconcile reads them without a
// request: the informer cache of controller-runtime, kept to what the reconciler needs (one
// object by reference, or every object of a kind carrying one value of the index label). A miss
// by reference is not proof of absence (an object of the same name made by someone else is not
// watched): callers fall back to a GET. A listing is complete only once that kind's watch in that
// namespace has listed (`isSynced`); before that, callers list from the API server.
//
// Memory: an object's body (pod template, Secret data; objects/body.ts) is kept only until a
// reconcile has found it to hold every field the agent sets (`checked`); then the cache holds the
// object without it (`isSlim`) and a digest of it, and later versions with the same body (a
// workload's status updates) are held slim too. A changed body is held whole until checked again.
// Of metadata only what anyone reads is held, and of the annotations only the kept ones; repeated
// strings (label values, namespaces, shared annotation values) are one pooled copy each.

import { bodyDigest, withoutBody } from '../objects/body.ts';
import type { LiveKubeObject } from './kubeClient.ts';
import type { ObjectRef } from './resources.ts';
import { StringPool } from './stringPool.ts';
import type { OwnedObjectEvent } from './watch.ts';

export interface ObjectReader {
  /** The object as last seen, or undefined when the cache does not hold it. */
  get(ref: ObjectRef): LiveKubeObject | undefined;
}

/**
 * What a watch event told: nothing new (the echo of our own write, or older than what is held),
 * a change of status alone (same generation: the spec is as it was), or any other change.
 */
export type ObservedChange = 'none' | 'status' | 'changed';

export interface ObjectCacheOptions {
  /** The label whose value indexes objects for `byLabel` (the deployment id). */
  readonly indexLabel: string;
  /**
   * The kinds `byLabel` is asked for (an index entry per object and label value costs some
   * 300 bytes: only these kinds pay it). Absent: every kind.
   */
  readonly indexedKinds?: readonly string[];
  /**
   * The kinds whose `status` anyone reads (rollout status); the others are held without it, and
   * without the fields of metadata and conditions nobody reads. Absent: every kind keeps them.
   */
  readonly statusKinds?: readonly string[];
  /**
   * With `statusKinds`: the condition types whose message and transition time are read; the
   * others keep type, status and reason.
   */
  readonly detailedConditions?: readonly string[];
  /**
   * The kinds whose body nobody reads from the cache (the inventories' ConfigMaps: their store
   * keeps what they record): held without it from the first event, as if checked.
   */
  readonly bodylessKinds?: readonly string[];
  /**
   * The annotations anyone reads of a cached object (those the agent writes, which its spec view
   * covers); the others (a controller's revision counter, a claim's binding notes) are not held.
   * Absent: every annotation is kept.
   */
  readonly keptAnnotations?: (key: string) => boolean;
  /**
   * Of the kept annotations, those whose values many objects carry alike (a deployment's name and
   * revision id on each of its objects): one copy of each value, as for label values.
   */
  readonly sharedAnnotations?: readonly string[];
}

export class ObjectCache implements ObjectReader {
  readonly #indexLabel: string;
  readonly #indexedKinds: ReadonlySet<string> | undefined;
  readonly #statusKinds: ReadonlySet<string> | undefined;
  readonly #bodylessKinds: ReadonlySet<string>;
  readonly #detailedConditions: ReadonlySet<string>;
  readonly #keptAnnotations: ((key: string) => boolean) | undefined;
  readonly #sharedAnnotations: ReadonlySet<string>;
  readonly #objects = new Map<string, LiveKubeObject>();
  /** `kind/namespace/label value` → keys of the objects carrying it. */
  readonly #index = new Map<string, Set<string>>();
  /** `kind/namespace` pairs whose watch has listed once. */
  readonly #synced = new Set<string>();
  /**
   * The slim objects this cache made, each with the digest of the body it was found to hold our
   * fields in (a later version with that body is held slim too); '' for a bodyless kind. Keyed by
   * the object, not by its key: a second key string and map entry per object cost some 100 bytes.
   */
  readonly #slim = new WeakMap<LiveKubeObject, string>();
  /** Label values and namespaces: one copy each, shared by every object that carries them. */
  readonly #strings = new StringPool();
  /** Conditions held by type, status and reason alone: one frozen copy of each combination. */
  readonly #conditions = new SharedConditions();

  constructor(options: ObjectCacheOptions) {
    this.#indexLabel = options.indexLabel;
    this.#indexedKinds = options.indexedKinds && new Set(options.indexedKinds);
    this.#statusKinds = options.statusKinds && new Set(options.statusKinds);
    this.#bodylessKinds = new Set(options.bodylessKinds);
    this.#detailedConditions = new Set(options.detailedConditions);
    this.#keptAnnotations = options.keptAnnotations;
    this.#sharedAnnotations = new Set(options.sharedAnnotations);
  }

  get size(): number {
    return this.#objects.size;
  }

  get(ref: ObjectRef): LiveKubeObject | undefined {
    return this.#objects.get(keyOf(ref.kind, ref.namespace, ref.name));
  }

  /** The objects of a kind in a namespace whose index label has this value. */
  byLabel(kind: string, namespace: string, value: string): LiveKubeObject[] {
    if (this.#indexedKinds && !this.#indexedKinds.has(kind))
      throw new Error(`ObjectCache: ${kind} is not indexed (indexedKinds)`);
    const keys = this.#index.get(indexKeyOf(kind, namespace, value));
    if (!keys) return [];
    return [...keys].flatMap((key) => this.#objects.get(key) ?? []);
  }

  /** The watch of these kinds in this namespace has listed: their listings are complete from now on. */
  markSynced(kinds: readonly string[], namespace: string): void {
    for (const kind of kinds) this.#synced.add(`${kind}/${namespace}`);
  }

  isSynced(kind: string, namespace: string): boolean {
    return this.#synced.has(`${kind}/${namespace}`);
  }

  /** Takes a watch event (or a relist's synthesized one), and says what it told. */
  observe(event: OwnedObjectEvent): ObservedChange {
    const { object } = event;
    const key = keyOf(object.kind, object.metadata.namespace, object.metadata.name);
    const held = this.#objects.get(key);
    if (event.type === 'DELETED') {
      // A deletion of an older incarnation (another uid) must not drop the object made since.
      if (held && held.metadata.uid !== object.metadata.uid) return 'none';
      this.#drop(key);
      return 'changed';
    }
    if (!this.#store(key, object)) return 'none';
    const sameGeneration =
      held?.metadata.uid === object.metadata.uid &&
      held.metadata.generation !== undefined &&
      held.metadata.generation === object.metadata.generation;
    return sameGeneration ? 'status' : 'changed';
  }

  /** Takes the server's answer to our own write, which the watch delivers only a little later. */
  written(object: LiveKubeObject): void {
    this.#store(keyOf(object.kind, object.metadata.namespace, object.metadata.name), object);
  }

  /**
   * A reconcile found `object` (as this cache or a write gave it) to hold every field the agent
   * sets: the cache keeps it without its body from now on, while that body is unchanged. Ignored
   * when the cache holds another version by now.
   */
  checked(object: LiveKubeObject): void {
    const key = keyOf(object.kind, object.metadata.namespace, object.metadata.name);
    const held = this.#objects.get(key);
    if (!held || this.#slim.has(held)) return;
    const { uid, resourceVersion } = object.metadata;
    if (held.metadata.uid !== uid || held.metadata.resourceVersion !== resourceVersion) return;
    const digest = bodyDigest(held);
    if (digest === undefined) return;
    this.#hold(key, held, digest);
  }

  /** Whether `object` is held without its body, which was found to hold every field of ours. */
  isSlim(object: LiveKubeObject): boolean {
    return this.#slim.has(object);
  }

  #store(key: string, object: LiveKubeObject): boolean {
    const held = this.#objects.get(key);
    if (held && held.metadata.uid === object.metadata.uid) {
      // A watch event in flight when we wrote must not take the cache back to before our write.
      if (isOlder(object, held)) return false;
      if (held.metadata.resourceVersion === object.metadata.resourceVersion) return false;
    }
    // Taken before the held version lets go, so that the values both carry keep their copy.
    const metadata = this.#heldMetadata(object.metadata);
    if (held) {
      this.#unindex(key, held);
      this.#releaseStrings(held);
    }
    const stored = this.#withReadStatus({ ...object, metadata } as LiveKubeObject);
    // The same body as checked (another uid cannot have it: checked anew): held slim again.
    const checkedBody = held && this.#slim.get(held);
    if (this.#bodylessKinds.has(stored.kind)) this.#hold(key, stored, '');
    else if (checkedBody && held?.metadata.uid === object.metadata.uid && bodyDigest(stored) === checkedBody)
      this.#hold(key, stored, checkedBody);
    else this.#objects.set(key, stored);
    const indexKey = this.#indexKeyOf(stored);
    if (indexKey !== undefined) {
      const keys = this.#index.get(indexKey) ?? new Set<string>();
      keys.add(key);
      this.#index.set(indexKey, keys);
    }
    return true;
  }

  /** Holds `object` without its body (the index keys stay: labels are kept). */
  #hold(key: string, object: LiveKubeObject, digest: string): void {
    const slim = withoutBody(object);
    this.#slim.set(slim, digest);
    this.#objects.set(key, slim);
  }

  /** The object with the status fields anyone reads: none for most kinds; conditions trimmed. */
  #withReadStatus(object: LiveKubeObject): LiveKubeObject {
    if (!this.#statusKinds || !('status' in object)) return object;
    if (!this.#statusKinds.has(object.kind)) {
      const { status: _status, ...rest } = object;
      return rest as LiveKubeObject;
    }
    const status = object.status;
    if (!isRecord(status) || !Array.isArray(status.conditions)) return object;
    // Most conditions are read for their type, status and reason alone; every workload holds them,
    // mostly the same few (Available True MinimumReplicasAvailable…): one shared copy of each.
    const conditions = status.conditions.map((condition: unknown) => {
      if (!isRecord(condition)) return condition;
      const { type, status: conditionStatus, reason, message, lastTransitionTime } = condition;
      return this.#detailedConditions.has(String(type))
        ? { type, status: conditionStatus, reason, message, lastTransitionTime }
        : this.#conditions.take(type, conditionStatus, reason);
    });
    return { ...object, status: { ...status, conditions } };
  }

  #indexKeyOf(object: LiveKubeObject): string | undefined {
    if (this.#indexedKinds && !this.#indexedKinds.has(object.kind)) return undefined;
    const value = object.metadata.labels[this.#indexLabel];
    return value === undefined ? undefined : indexKeyOf(object.kind, object.metadata.namespace ?? '', value);
  }

  /**
   * The metadata anyone reads (identity, version, generation, deletion, labels, the kept
   * annotations), as one object literal of those fields: the rest of what the server sent
   * (managed fields, owner references, finalizers, timestamps) is not held, and a fixed set of
   * fields keeps V8 from giving each object an overflow array for the ones it did not expect.
   * Label values, the namespace and the shared annotations' values are the pooled copies, swapped
   * in place in the labels and annotations the server sent (equal strings: whoever else holds the
   * event sees no change), which JSON.parse sized to their entries.
   */
  #heldMetadata(metadata: LiveKubeObject['metadata']): LiveKubeObject['metadata'] {
    const { labels } = metadata;
    for (const [name, value] of Object.entries(labels)) labels[name] = this.#strings.take(value);
    const { name, uid, resourceVersion, generation, deletionTimestamp } = metadata;
    const annotations = this.#heldAnnotations(metadata.annotations);
    // V8 sizes an object literal to its fields: one added later goes to an overflow array. The
    // agent's objects are namespaced, and its workloads and policies have a generation.
    const namespace = metadata.namespace === undefined ? undefined : this.#strings.take(metadata.namespace);
    const held: LiveKubeObject['metadata'] =
      namespace === undefined
        ? { name, uid, resourceVersion, labels, annotations }
        : generation === undefined
          ? { name, namespace, uid, resourceVersion, labels, annotations }
          : { name, namespace, uid, resourceVersion, generation, labels, annotations };
    if (namespace === undefined && generation !== undefined) held.generation = generation;
    if (deletionTimestamp !== undefined) held.deletionTimestamp = deletionTimestamp;
    return held;
  }

  #heldAnnotations(annotations: Record<string, string>): Record<string, string> {
    const keep = this.#keptAnnotations;
    const names = Object.keys(annotations);
    const kept = keep ? names.filter(keep) : names;
    if (kept.length === 0) return NO_ANNOTATIONS;
    // Every one kept (the agent's objects, mostly): the server's object, its values swapped.
    const held: Record<string, string> = kept.length === names.length ? annotations : {};
    for (const name of kept) {
      const value = annotations[name] as string;
      held[name] = this.#sharedAnnotations.has(name) ? this.#strings.take(value) : value;
    }
    return held;
  }

  #releaseStrings(object: LiveKubeObject): void {
    const { labels, annotations, namespace } = object.metadata;
    for (const value of Object.values(labels)) this.#strings.release(value);
    for (const [name, value] of Object.entries(annotations))
      if (this.#sharedAnnotations.has(name)) this.#strings.release(value);
    if (namespace !== undefined) this.#strings.release(namespace);
  }

  /** Distinct label values and namespaces the cached objects share (for tests and diagnostics). */
  get pooledStrings(): number {
    return this.#strings.size;
  }

  #drop(key: string): void {
    const held = this.#objects.get(key);
    if (!held) return;
    this.#unindex(key, held);
    this.#releaseStrings(held);
    this.#objects.delete(key);
  }

  #unindex(key: string, object: LiveKubeObject): void {
    const indexKey = this.#indexKeyOf(object);
    if (indexKey === undefined) return;
    const keys = this.#index.get(indexKey);
    keys?.delete(key);
    if (keys?.size === 0) this.#index.delete(indexKey);
  }
}

/**
 * The few type/status/reason combinations the controllers write, each held once. Bounded: past
 * `MAX_SHARED_CONDITIONS` distinct ones (reasons are the controllers' constants, so only a
 * misbehaving writer gets there) each object keeps its own copy, as before.
 */
class SharedConditions {
  readonly #held = new Map<string, Readonly<Record<string, unknown>>>();

  take(type: unknown, status: unknown, reason: unknown): Readonly<Record<string, unknown>> {
    const key = `${String(type)}\u0000${String(status)}\u0000${String(reason)}`;
    const held = this.#held.get(key);
    if (held) return held;
    const condition = Object.freeze({ type, status, reason });
    if (this.#held.size < MAX_SHARED_CONDITIONS) this.#held.set(key, condition);
    return condition;
  }
}

const MAX_SHARED_CONDITIONS = 256;

/** The annotations of every object that keeps none: one frozen empty object. */
const NO_ANNOTATIONS: Record<string, string> = Object.freeze({});

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function indexKeyOf(kind: string, namespace: string, value: string): string {
  return `${kind}/${namespace}/${value}`;
}

function keyOf(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}

/**
 * The API contract calls resourceVersion opaque; every etcd3-backed API server gives the store's
 * revision as a decimal integer, which orders the versions of one object. Anything else is
 * taken as newer, so the cache can only be as stale as the watch.
 */
function isOlder(candidate: LiveKubeObject, held: LiveKubeObject): boolean {
  const a = candidate.metadata.resourceVersion;
  const b = held.metadata.resourceVersion;
  if (!/^\d+$/.test(a ?? '') || !/^\d+$/.test(b ?? '')) return false;
  return BigInt(a as string) < BigInt(b as string);
}
