// The agent's own objects as its watches last saw them, so that a reconcile reads them without a
// request: the informer cache of controller-runtime, kept to what the reconciler needs (one
// object by reference). A miss is not proof of absence (the watch may not have listed yet, and
// an object of the same name made by someone else is not watched): callers fall back to a GET.

import type { LiveKubeObject } from './kubeClient.ts';
import type { ObjectRef } from './resources.ts';
import type { OwnedObjectEvent } from './watch.ts';

export interface ObjectReader {
  /** The object as last seen, or undefined when the cache does not hold it. */
  get(ref: ObjectRef): LiveKubeObject | undefined;
}

export class ObjectCache implements ObjectReader {
  readonly #objects = new Map<string, LiveKubeObject>();

  get size(): number {
    return this.#objects.size;
  }

  get(ref: ObjectRef): LiveKubeObject | undefined {
    return this.#objects.get(keyOf(ref.kind, ref.namespace, ref.name));
  }

  /** Takes a watch event (or a relist's synthesized one). */
  observe(event: OwnedObjectEvent): void {
    const { object } = event;
    const key = keyOf(object.kind, object.metadata.namespace, object.metadata.name);
    if (event.type === 'DELETED') {
      // A deletion of an older incarnation (another uid) must not drop the object made since.
      const held = this.#objects.get(key);
      if (!held || held.metadata.uid === object.metadata.uid) this.#objects.delete(key);
      return;
    }
    this.#store(key, object);
  }

  /** Takes the server's answer to our own write, which the watch delivers only a little later. */
  written(object: LiveKubeObject): void {
    this.#store(keyOf(object.kind, object.metadata.namespace, object.metadata.name), object);
  }

  #store(key: string, object: LiveKubeObject): void {
    const held = this.#objects.get(key);
    // A watch event in flight when we wrote must not take the cache back to before our write.
    if (held && held.metadata.uid === object.metadata.uid && isOlder(object, held)) return;
    const { managedFields: _managedFields, ...metadata } = object.metadata;
    this.#objects.set(key, { ...object, metadata } as LiveKubeObject);
  }
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
