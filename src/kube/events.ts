// Records events.k8s.io/v1 Events about the agent's objects, folding repeats into a series so a
// recurring failure does not flood the API server. Recording never throws.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { formatRef } from '../objects/objectRef.ts';
import { AGENT_NAME, LABEL_MANAGED_BY } from '../objects/ownership.ts';
import { isNotFound } from './errors.ts';
import type { KubeClient, LiveKubeObject } from './kubeClient.ts';
import { formatMicroTime } from './microTime.ts';

export type EventType = 'Normal' | 'Warning';

/** The object an Event is about; `uid` ties the Event to this incarnation of the object. */
export interface EventSubject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string | undefined;
  readonly uid?: string | undefined;
  readonly resourceVersion?: string | undefined;
}

export interface EventDetails {
  readonly type: EventType;
  /** Short CamelCase reason such as `ApplyFailed`; at most 128 characters. */
  readonly reason: string;
  /** Human-readable text from the caller; must hold no secret value. At most 1 KiB is kept. */
  readonly note: string;
  /** What the agent did or tried (`Apply`, `Prune`, …); defaults to the reason. */
  readonly action?: string | undefined;
}

export interface EventRecorderOptions {
  readonly client: Pick<KubeClient, 'create' | 'mergePatch'>;
  readonly logger: Logger;
  /** `reportingInstance`: this replica's identity. */
  readonly identity: string;
  /** A repeat within this long of the previous one joins its series. Default 6 min (as client-go). */
  readonly seriesWindowMs?: number;
  /** At most one series update per Event this often; counts in between are sent later. Default 30 s. */
  readonly seriesUpdateIntervalMs?: number;
  /** Bound on the remembered Events (oldest forgotten first). Default 1000. */
  readonly maxTracked?: number;
}

interface Tracked {
  readonly name: string;
  readonly namespace: string;
  readonly ref: string;
  readonly reason: string;
  count: number;
  lastObservedAt: number;
  lastWriteAt: number;
  /** The count last written to the server. */
  writtenCount: number;
  /** Serialises writes of one Event so a series update never overtakes its creation. */
  chain: Promise<void>;
  timer: NodeJS.Timeout | undefined;
  /** False when creation failed: the next repeat starts a new Event. */
  alive: boolean;
}

const NOTE_MAX_BYTES = 1024;
const SHORT_FIELD_MAX = 128;

export class EventRecorder {
  readonly #client: EventRecorderOptions['client'];
  readonly #logger: Logger;
  readonly #identity: string;
  readonly #windowMs: number;
  readonly #intervalMs: number;
  readonly #maxTracked: number;
  readonly #tracked = new Map<string, Tracked>();
  #closed = false;

  constructor(options: EventRecorderOptions) {
    this.#client = options.client;
    this.#logger = options.logger.child({ component: 'event-recorder' });
    this.#identity = options.identity.slice(0, SHORT_FIELD_MAX);
    this.#windowMs = options.seriesWindowMs ?? 6 * 60_000;
    this.#intervalMs = options.seriesUpdateIntervalMs ?? 30_000;
    this.#maxTracked = options.maxTracked ?? 1000;
  }

  /**
   * Records an Event about `subject`. Resolves when the write (if any) is done; never rejects:
   * failures are logged and the Event dropped.
   */
  record(subject: EventSubject | LiveKubeObject, details: EventDetails): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const regarding = subjectOf(subject);
    const now = Date.now();
    const key = [
      regarding.apiVersion,
      regarding.kind,
      regarding.namespace ?? '',
      regarding.name,
      regarding.uid ?? '',
      details.type,
      details.reason,
      details.note,
    ].join('\u0000');
    const existing = this.#tracked.get(key);
    if (existing?.alive && now - existing.lastObservedAt < this.#windowMs) {
      existing.count++;
      existing.lastObservedAt = now;
      // Most recently used last, so eviction drops the stalest.
      this.#tracked.delete(key);
      this.#tracked.set(key, existing);
      return this.#scheduleSeries(existing);
    }
    if (existing !== undefined) this.#forget(key, existing);
    const tracked: Tracked = {
      name: eventName(regarding.name),
      namespace: regarding.namespace || 'default',
      ref: formatRef(regarding),
      reason: details.reason,
      count: 1,
      lastObservedAt: now,
      lastWriteAt: now,
      writtenCount: 1,
      chain: Promise.resolve(),
      timer: undefined,
      alive: true,
    };
    this.#tracked.set(key, tracked);
    this.#evict();
    return this.#enqueue(tracked, () => this.#create(tracked, regarding, details, now));
  }

  /** Sends pending series counts and waits for every write in flight. */
  async flush(): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const tracked of this.#tracked.values()) {
      if (tracked.timer !== undefined) {
        clearTimeout(tracked.timer);
        tracked.timer = undefined;
        pending.push(this.#enqueue(tracked, () => this.#patchSeries(tracked)));
      } else {
        pending.push(tracked.chain);
      }
    }
    await Promise.all(pending);
  }

  /** Flushes, then records nothing more. */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    this.#tracked.clear();
  }

  #scheduleSeries(tracked: Tracked): Promise<void> {
    if (tracked.timer !== undefined) return Promise.resolve();
    const wait = tracked.lastWriteAt + this.#intervalMs - Date.now();
    if (wait <= 0) return this.#enqueue(tracked, () => this.#patchSeries(tracked));
    tracked.timer = setTimeout(() => {
      tracked.timer = undefined;
      void this.#enqueue(tracked, () => this.#patchSeries(tracked));
    }, wait);
    tracked.timer.unref();
    return Promise.resolve();
  }

  #enqueue(tracked: Tracked, write: () => Promise<void>): Promise<void> {
    tracked.chain = tracked.chain.then(write).catch((error: unknown) => {
      // Only the object and reason: the note is the caller's text and need not be logged twice.
      this.#logger.warn(
        { err: error, object: tracked.ref, reason: tracked.reason },
        'could not record event',
      );
    });
    return tracked.chain;
  }

  async #create(
    tracked: Tracked,
    regarding: EventSubject,
    details: EventDetails,
    now: number,
  ): Promise<void> {
    const regardingRef: Record<string, string> = {
      apiVersion: regarding.apiVersion,
      kind: regarding.kind,
      name: regarding.name,
    };
    if (regarding.namespace) regardingRef.namespace = regarding.namespace;
    if (regarding.uid) regardingRef.uid = regarding.uid;
    if (regarding.resourceVersion) regardingRef.resourceVersion = regarding.resourceVersion;
    try {
      await this.#client.create({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: {
          name: tracked.name,
          namespace: tracked.namespace,
          labels: { [LABEL_MANAGED_BY]: AGENT_NAME },
          annotations: {},
        },
        eventTime: formatMicroTime(now),
        reportingController: AGENT_NAME,
        reportingInstance: this.#identity,
        action: (details.action ?? details.reason).slice(0, SHORT_FIELD_MAX),
        reason: details.reason.slice(0, SHORT_FIELD_MAX),
        note: truncateUtf8(details.note, NOTE_MAX_BYTES),
        type: details.type,
        regarding: regardingRef,
      });
    } catch (error) {
      tracked.alive = false;
      throw error;
    }
  }

  async #patchSeries(tracked: Tracked): Promise<void> {
    if (!tracked.alive || tracked.count === tracked.writtenCount) return;
    const count = tracked.count;
    const ref = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      namespace: tracked.namespace,
      name: tracked.name,
    };
    try {
      await this.#client.mergePatch(ref, {
        series: { count, lastObservedTime: formatMicroTime(tracked.lastObservedAt) },
      });
      tracked.writtenCount = count;
      tracked.lastWriteAt = Date.now();
    } catch (error) {
      // Events expire (1 h by default): the next repeat starts a new one.
      tracked.alive = false;
      if (!isNotFound(error)) throw error;
    }
  }

  #forget(key: string, tracked: Tracked): void {
    clearTimeout(tracked.timer);
    this.#tracked.delete(key);
  }

  #evict(): void {
    for (const [key, tracked] of this.#tracked) {
      if (this.#tracked.size <= this.#maxTracked) return;
      this.#forget(key, tracked);
    }
  }
}

function subjectOf(subject: EventSubject | LiveKubeObject): EventSubject {
  if ('metadata' in subject) {
    return {
      apiVersion: subject.apiVersion,
      kind: subject.kind,
      name: subject.metadata.name,
      namespace: subject.metadata.namespace,
      uid: subject.metadata.uid || undefined,
      resourceVersion: subject.metadata.resourceVersion || undefined,
    };
  }
  return subject;
}

/** `<object name>.<random hex>`, as kubectl shows them, within the 253-character limit. */
function eventName(objectName: string): string {
  return `${objectName.slice(0, 200)}.${randomBytes(8).toString('hex')}`;
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  // Cut on a character boundary and mark the cut.
  let cut = maxBytes - 3;
  while (cut > 0 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return `${bytes.subarray(0, cut).toString('utf8')}...`;
}
