// Watches the agent's own objects (several kinds × namespaces, one label selector) and hands each
// change to a handler that only enqueues; every stream relists, restarts and backs off by itself.
import type { Logger } from 'pino';
import { isGone } from './errors.ts';
import type { ListOptions, LiveKubeObject, RawWatchEvent, WatchOptions } from './kubeClient.ts';
import type { ListGate } from './listGate.ts';
import type { KindRef, ManagedKind } from './resources.ts';

export type OwnedObjectEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface OwnedObjectEvent {
  readonly type: OwnedObjectEventType;
  /**
   * The object as the server sent it; for a deletion noticed by a relist (missed while the watch
   * was down), only its apiVersion, kind and last known metadata.
   */
  readonly object: LiveKubeObject;
}

/** What the watcher needs of a client; `KubeClient` provides it. */
export interface WatchSource {
  listPages(
    kind: ManagedKind | KindRef,
    opts: ListOptions,
    onPage: (items: LiveKubeObject[], restarted: boolean) => void,
  ): Promise<string>;
  watch(kind: ManagedKind | KindRef, opts: WatchOptions): AsyncIterable<RawWatchEvent>;
}

export interface OwnedObjectWatcherOptions {
  readonly client: WatchSource;
  readonly logger: Logger;
  readonly kinds: readonly (ManagedKind | KindRef)[];
  /** One stream per kind and namespace; undefined: one cluster-wide stream per kind. */
  readonly namespaces: readonly string[] | undefined;
  /** Usually `k8s-listener.io/listener-id=<id>`. */
  readonly labelSelector: string;
  /** Must only enqueue: it runs on the stream's loop. Exceptions are logged and dropped. */
  readonly onEvent: (event: OwnedObjectEvent) => void;
  /**
   * The labels a relist remembers of each object, so that a deletion it notices (missed while
   * the watch was down) carries them to the handler; absent: every label. Each remembered object
   * costs memory for as long as it exists: keep only what the handler reads.
   */
  readonly keptLabels?: readonly string[];
  /**
   * Shared by the watchers of one agent: how many listings (with the handling of what they
   * listed) run at once. Absent: no limit.
   */
  readonly listGate?: ListGate;
  /** A stream with no event and no bookmark for this long is restarted. Default 5 min. */
  readonly watchdogMs?: number;
  /** Exponential backoff after failures: first delay and cap. Defaults 1 s and 60 s. */
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** Server-side watch duration; each stream picks a value between this and twice this. Default 300 s. */
  readonly watchTimeoutSeconds?: number;
}

export interface WatcherStats {
  /** Complete listings made (the first one of each stream included). */
  readonly lists: number;
  /** Watch requests opened. */
  readonly watches: number;
  /** Relists because the server answered 410 Gone. */
  readonly gone: number;
  /** Bookmarks received (each moves the resume point forward without an event). */
  readonly bookmarks: number;
  /** Restarts because the watchdog saw nothing for too long. */
  readonly watchdogRestarts: number;
  /** Failures (errors and unexpectedly closed streams) followed by a backoff. */
  readonly failures: number;
}

interface Stream {
  readonly kind: ManagedKind | KindRef;
  readonly namespace: string | undefined;
  readonly logger: Logger;
  controller: AbortController | undefined;
  synced: boolean;
}

const DEFAULT_WATCHDOG_MS = 5 * 60_000;
const DEFAULT_BACKOFF_INITIAL_MS = 1_000;
const DEFAULT_BACKOFF_MAX_MS = 60_000;
const DEFAULT_WATCH_TIMEOUT_SECONDS = 300;

export class OwnedObjectWatcher {
  readonly #options: OwnedObjectWatcherOptions;
  readonly #logger: Logger;
  readonly #streams: Stream[];
  readonly #loops: Promise<void>[] = [];
  readonly #stopping = new AbortController();
  readonly #synced: Promise<boolean>;
  #resolveSynced: (synced: boolean) => void = () => {};
  #started = false;
  #stats = { lists: 0, watches: 0, gone: 0, bookmarks: 0, watchdogRestarts: 0, failures: 0 };

  constructor(options: OwnedObjectWatcherOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'owned-object-watcher' });
    const namespaces = options.namespaces ?? [undefined];
    this.#streams = options.kinds.flatMap((kind) =>
      namespaces.map((namespace) => ({
        kind,
        namespace,
        logger: this.#logger.child({ kind: kindName(kind), namespace: namespace ?? '*' }),
        controller: undefined,
        synced: false,
      })),
    );
    this.#synced = new Promise((resolve) => {
      this.#resolveSynced = resolve;
    });
    if (this.#streams.length === 0) this.#resolveSynced(true);
  }

  /** Starts every stream; calling it again does nothing. */
  start(): void {
    if (this.#started || this.#stopping.signal.aborted) return;
    this.#started = true;
    for (const stream of this.#streams) this.#loops.push(this.#run(stream));
  }

  /** Closes every stream and waits for the loops to end. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    for (const stream of this.#streams) stream.controller?.abort();
    this.#resolveSynced(false);
    await Promise.all(this.#loops);
  }

  /** True once every stream has completed its first listing; false when stopped before that. */
  whenSynced(): Promise<boolean> {
    return this.#synced;
  }

  stats(): WatcherStats {
    return { ...this.#stats };
  }

  async #run(stream: Stream): Promise<void> {
    const options = this.#options;
    const watchdogMs = options.watchdogMs ?? DEFAULT_WATCHDOG_MS;
    const baseTimeout = options.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT_SECONDS;
    // Last known version and identity of each object (by uid), so a relist can tell what changed
    // or vanished.
    const known = new Map<string, Remembered>();
    let resourceVersion: string | undefined;
    let failures = 0;
    while (!this.#stopping.signal.aborted) {
      const controller = new AbortController();
      stream.controller = controller;
      let watchdogFired = false;
      let listedNow = false;
      let watchdog: NodeJS.Timeout | undefined;
      const armWatchdog = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => {
          watchdogFired = true;
          controller.abort();
        }, watchdogMs);
      };
      // The watchdog ended a silent stream: a failure of this round, whichever way the stream ended.
      const restartSilent = () => {
        this.#stats.watchdogRestarts++;
        stream.logger.warn({ watchdogMs }, 'watch silent for too long; restarting it');
        failures++;
      };
      try {
        if (resourceVersion === undefined) {
          resourceVersion = await this.#list(stream, known, controller.signal);
          listedNow = true;
          this.#markSynced(stream);
        }
        const timeoutSeconds = Math.round(baseTimeout * (1 + Math.random()));
        const opened = Date.now();
        this.#stats.watches++;
        armWatchdog();
        for await (const event of options.client.watch(stream.kind, {
          namespace: stream.namespace,
          labelSelector: options.labelSelector,
          resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
          signal: controller.signal,
        })) {
          armWatchdog();
          failures = 0;
          resourceVersion = event.object.metadata.resourceVersion || resourceVersion;
          if (event.type === 'BOOKMARK') {
            this.#stats.bookmarks++;
            continue;
          }
          this.#applyEvent(known, event.type, event.object);
        }
        if (this.#stopping.signal.aborted) break;
        if (watchdogFired) {
          restartSilent();
        } else if (Date.now() - opened < timeoutSeconds * 1000 - 1000) {
          // Closed before the server-side timeout: treat it like an error, so a flapping
          // connection cannot make the loop spin.
          stream.logger.info(
            { openMs: Date.now() - opened, timeoutSeconds },
            'watch stream closed early; restarting it',
          );
          failures++;
        }
      } catch (error) {
        if (this.#stopping.signal.aborted) break;
        if (watchdogFired) {
          restartSilent();
        } else if (isGone(error)) {
          // The resourceVersion is too old: a fresh listing says what changed meanwhile.
          this.#stats.gone++;
          stream.logger.info('watch resourceVersion expired (410 Gone); relisting');
          resourceVersion = undefined;
          // Relist right away, unless this round's own fresh listing was already too old.
          if (listedNow) failures++;
        } else {
          failures++;
          stream.logger.warn({ err: error, failures }, 'watch failed; restarting after a backoff');
        }
      } finally {
        clearTimeout(watchdog);
        controller.abort();
        stream.controller = undefined;
      }
      if (failures > 0) {
        this.#stats.failures++;
        await this.#sleep(this.#backoffMs(failures));
      }
    }
  }

  /**
   * Lists the stream's objects, hands what changed to the handler page by page, and returns the
   * listing's resourceVersion; through the list gate, when there is one. Only one page of whole
   * objects (managedFields and all) is alive at a time: a relist after a restart of a large
   * listener held every object of the stream at once, some 10 KiB a pod. What vanished is told
   * once the listing is complete. A method of its own, not inline in #run: a suspended async
   * function keeps the locals of its finished blocks, and #run waits on its watch for minutes.
   */
  async #list(stream: Stream, known: Map<string, Remembered>, signal: AbortSignal): Promise<string> {
    const listing = async () => {
      const seen = new Set<string>();
      const resourceVersion = await this.#options.client.listPages(
        stream.kind,
        { namespace: stream.namespace, labelSelector: this.#options.labelSelector, signal },
        (items, restarted) => {
          if (restarted) seen.clear();
          this.#applyPage(known, seen, items);
        },
      );
      this.#stats.lists++;
      this.#applyVanished(known, seen);
      return resourceVersion;
    };
    return this.#options.listGate ? this.#options.listGate.run(listing) : listing();
  }

  #applyPage(known: Map<string, Remembered>, seen: Set<string>, items: readonly LiveKubeObject[]): void {
    for (const item of items) {
      const uid = item.metadata.uid;
      seen.add(uid);
      const previous = known.get(uid);
      if (previous === undefined) this.#applyEvent(known, 'ADDED', item);
      else if (versionOf(previous) !== item.metadata.resourceVersion) {
        this.#applyEvent(known, 'MODIFIED', item);
      }
    }
  }

  #applyVanished(known: Map<string, Remembered>, seen: ReadonlySet<string>): void {
    for (const [uid, remembered] of known) {
      if (!seen.has(uid))
        this.#applyEvent(known, 'DELETED', recall(remembered, uid, this.#options.keptLabels));
    }
  }

  #applyEvent(known: Map<string, Remembered>, type: OwnedObjectEventType, object: LiveKubeObject): void {
    if (type === 'DELETED') known.delete(object.metadata.uid);
    else known.set(object.metadata.uid, remember(object, this.#options.keptLabels));
    try {
      this.#options.onEvent({ type, object });
    } catch (error) {
      this.#logger.error(
        {
          err: error,
          type,
          kind: object.kind,
          namespace: object.metadata.namespace,
          name: object.metadata.name,
        },
        'watch event handler threw; event dropped',
      );
    }
  }

  #markSynced(stream: Stream): void {
    if (stream.synced) return;
    stream.synced = true;
    if (this.#streams.every((each) => each.synced)) this.#resolveSynced(true);
  }

  #backoffMs(failures: number): number {
    const initial = this.#options.backoffInitialMs ?? DEFAULT_BACKOFF_INITIAL_MS;
    const max = this.#options.backoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS;
    const capped = Math.min(max, initial * 2 ** Math.min(failures - 1, 30));
    // Jitter in [50 %, 100 %] so that many streams failing together do not retry together.
    return capped * (0.5 + Math.random() * 0.5);
  }

  #sleep(ms: number): Promise<void> {
    const signal = this.#stopping.signal;
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/**
 * What a relist remembers of an object: its resourceVersion, then apiVersion, kind, name,
 * namespace and its labels (the values of `keptLabels`, or every name and value), in one string.
 * One string is one heap object, where a skeleton object is four (object, metadata, labels,
 * annotations) with their own copies of the strings: the watcher remembers every object the
 * listener owns, pods included, and the skeletons held some 500 bytes an object beside the watch
 * cache's own record. No field can hold the separator: Kubernetes refuses NUL in names,
 * namespaces, label keys and values.
 */
type Remembered = string & { readonly __remembered: unique symbol };

const FIELD_SEPARATOR = '\u0000';

function remember(object: LiveKubeObject, keptLabels?: readonly string[]): Remembered {
  const { name, namespace, resourceVersion, labels } = object.metadata;
  const fields = [resourceVersion ?? '', object.apiVersion, object.kind, name, namespace ?? ''];
  // With `keptLabels`, their values alone, in that order (a missing one as U+0001, which no label
  // value can be): the label names were most of each string, the same for every object.
  if (keptLabels) for (const key of keptLabels) fields.push(labels[key] ?? MISSING_LABEL);
  else for (const [key, value] of Object.entries(labels)) fields.push(key, value);
  return fields.join(FIELD_SEPARATOR) as Remembered;
}

const MISSING_LABEL = '\u0001';

function versionOf(remembered: Remembered): string {
  const end = remembered.indexOf(FIELD_SEPARATOR);
  return end < 0 ? remembered : remembered.slice(0, end);
}

/** The skeleton of a remembered object: what a deletion noticed by a relist hands to the handler. */
function recall(remembered: Remembered, uid: string, keptLabels?: readonly string[]): LiveKubeObject {
  const [resourceVersion = '', apiVersion = '', kind = '', name = '', namespace = '', ...rest] =
    remembered.split(FIELD_SEPARATOR);
  const labels: Record<string, string> = {};
  if (keptLabels)
    keptLabels.forEach((key, i) => {
      const value = rest[i];
      if (value !== undefined && value !== MISSING_LABEL) labels[key] = value;
    });
  else for (let i = 0; i + 1 < rest.length; i += 2) labels[rest[i] ?? ''] = rest[i + 1] ?? '';
  const metadata = { name, uid, resourceVersion, labels, annotations: NO_ANNOTATIONS };
  return { apiVersion, kind, metadata: namespace === '' ? metadata : { ...metadata, namespace } };
}

/** One empty annotations object for every skeleton (the watch cache holds a pod summary each). */
const NO_ANNOTATIONS: Record<string, string> = Object.freeze({});

/**
 * An object's identity, version and labels (`keptLabels` of them, when given), nothing else: what
 * a relist remembers of it (and, for a deletion it missed, hands to the handler). Labels kept
 * whole are shared with the object, not copied.
 */
export function skeleton(object: LiveKubeObject, keptLabels?: readonly string[]): LiveKubeObject {
  const { name, namespace, uid, resourceVersion } = object.metadata;
  const labels = keptLabels ? pickLabels(object.metadata.labels, keptLabels) : object.metadata.labels;
  const metadata = { name, uid, resourceVersion, labels, annotations: NO_ANNOTATIONS };
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: namespace === undefined ? metadata : { ...metadata, namespace },
  };
}

function pickLabels(
  labels: Readonly<Record<string, string>>,
  kept: readonly string[],
): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of kept) {
    const value = labels[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

function kindName(kind: ManagedKind | KindRef): string {
  return typeof kind === 'string' ? kind : `${kind.apiVersion}/${kind.kind}`;
}
