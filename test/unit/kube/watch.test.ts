// OwnedObjectWatcher against a scripted API server: relist after 410 Gone (with the changes missed
// meanwhile), backoff after errors, watchdog on a silent stream, handler exceptions, stop.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  KubeClient,
  ListGate,
  type LiveKubeObject,
  type OwnedObjectEvent,
  OwnedObjectWatcher,
  type WatchSource,
} from '../../../src/kube/index.ts';
import { eventually } from '../../support/eventually.ts';
import { FakeApiServer } from '../../support/fakeApiServer.ts';
import { kubeConfigConnection } from '../../support/kubeConfigConnection.ts';

const logger = pino({ level: 'silent' });
let fake: FakeApiServer;
let client: KubeClient;
let watcher: OwnedObjectWatcher | undefined;
let events: string[];

beforeEach(async () => {
  fake = await FakeApiServer.start();
  client = await KubeClient.fromConnection(await kubeConfigConnection(fake.kubeConfig()), {
    logger,
    requestTimeoutMs: 2_000,
  });
  events = [];
});

afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
  await client.close();
  await fake.close();
});

function record(event: OwnedObjectEvent): void {
  events.push(`${event.type} ${event.object.metadata.name}`);
}

function startWatcher(options: Partial<ConstructorParameters<typeof OwnedObjectWatcher>[0]> = {}) {
  watcher = new OwnedObjectWatcher({
    client,
    logger,
    kinds: ['ConfigMap'],
    namespaces: ['fake'],
    labelSelector: 'owner=test',
    onEvent: record,
    backoffInitialMs: 50,
    backoffMaxMs: 400,
    ...options,
  });
  watcher.start();
  return watcher;
}

async function until(what: string, check: () => boolean, timeoutMs = 5_000): Promise<void> {
  await eventually(
    () => `${what}; events: ${events.join(', ')}`,
    () => check() || undefined,
    timeoutMs,
    10,
  );
}

const watchRequests = () => fake.requests.filter((request) => request.query.get('watch') === 'true');

describe('OwnedObjectWatcher', () => {
  it('lists, then streams changes with the selector, bookmarks and the list resourceVersion', async () => {
    const a = fake.put('a');
    startWatcher();
    expect(await watcher?.whenSynced()).toBe(true);
    await until('watch open', () => fake.openWatches === 1);
    fake.put('b');
    fake.put('a', { k: 'v' });
    fake.remove('b');
    await until('4 events', () => events.length === 4);
    expect(events).toEqual(['ADDED a', 'ADDED b', 'MODIFIED a', 'DELETED b']);
    const [watch] = watchRequests();
    expect(watch?.query.get('labelSelector')).toBe('owner=test');
    expect(watch?.query.get('allowWatchBookmarks')).toBe('true');
    // Continues from the listing's version: nothing between list and watch is lost.
    expect(watch?.query.get('resourceVersion')).toBe(a.resourceVersion);
  });

  it('resumes from the latest bookmark without relisting', async () => {
    fake.put('a');
    startWatcher();
    await until('watch open', () => fake.openWatches === 1);
    const bookmarked = fake.bookmark();
    await until('bookmark counted', () => watcher?.stats().bookmarks === 1);
    fake.endWatches();
    await until('second watch', () => watchRequests().length === 2 && fake.openWatches === 1);
    expect(watchRequests()[1]?.query.get('resourceVersion')).toBe(bookmarked);
    expect(watcher?.stats()).toMatchObject({ lists: 1, gone: 0 });
    expect(events).toEqual(['ADDED a']);
  });

  it('relists after 410 Gone and reports what changed while it was not watching', async () => {
    fake.put('a');
    fake.put('b');
    startWatcher();
    await until('watch open', () => fake.openWatches === 1);
    expect(events).toEqual(['ADDED a', 'ADDED b']);

    fake.removeQuietly('a');
    fake.putQuietly('b', { changed: 'yes' });
    fake.putQuietly('c');
    fake.watchScripts.push({ watchError: 410, reason: 'Expired' });
    fake.cutWatches();

    await until('relist events', () => events.length === 5);
    expect(events.slice(2).sort()).toEqual(['ADDED c', 'DELETED a', 'MODIFIED b']);
    expect(watcher?.stats()).toMatchObject({ lists: 2, gone: 1 });

    await until('watch reopened', () => fake.openWatches === 1);
    fake.put('d');
    await until('event after relist', () => events.includes('ADDED d'));
  });

  it('a deletion noticed by a relist carries only the labels it was told to remember', async () => {
    const seen: OwnedObjectEvent[] = [];
    fake.put('a');
    startWatcher({ keptLabels: [], onEvent: (event) => seen.push(event) });
    await until('watch open', () => fake.openWatches === 1);
    fake.removeQuietly('a');
    fake.watchScripts.push({ watchError: 410, reason: 'Expired' });
    fake.cutWatches();
    await until('the missed deletion', () => seen.some((event) => event.type === 'DELETED'));
    expect(seen.map((event) => [event.type, event.object.metadata.labels])).toEqual([
      ['ADDED', { owner: 'test' }],
      ['DELETED', {}],
    ]);
  });

  it('a deletion noticed by a relist carries the identity, version and kept labels last seen', async () => {
    const seen: OwnedObjectEvent[] = [];
    const a = fake.put('a');
    startWatcher({ keptLabels: ['owner', 'absent'], onEvent: (event) => seen.push(event) });
    await until('watch open', () => fake.openWatches === 1);
    fake.removeQuietly('a');
    fake.watchScripts.push({ watchError: 410, reason: 'Expired' });
    fake.cutWatches();
    await until('the missed deletion', () => seen.some((event) => event.type === 'DELETED'));
    const added = seen[0]?.object;
    expect(seen[1]).toEqual({
      type: 'DELETED',
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'a',
          namespace: 'fake',
          uid: added?.metadata.uid,
          resourceVersion: a.resourceVersion,
          labels: { owner: 'test' },
          annotations: {},
        },
      },
    });
  });

  it('backs off exponentially (capped) after repeated errors, then recovers', async () => {
    for (let i = 0; i < 5; i++) fake.watchScripts.push({ status: 500, reason: 'InternalError' });
    startWatcher();
    await until('watch open after failures', () => fake.openWatches === 1);
    const times = watchRequests().map((request) => request.at);
    expect(times).toHaveLength(6);
    expect(watcher?.stats().failures).toBe(5);
    const gaps = times.slice(1).map((at, i) => at - (times[i] ?? at));
    // Delays are 50 ms × 2^n, jittered to 50–100 %, capped at 400 ms (+ request time).
    expect(gaps[0]).toBeLessThan(100);
    expect(gaps[3]).toBeGreaterThanOrEqual(195);
    expect(gaps[4]).toBeGreaterThanOrEqual(195);
    expect(gaps[4]).toBeLessThan(500);
    fake.put('late');
    await until('event after recovery', () => events.includes('ADDED late'));
  });

  it('restarts a stream that stays silent past the watchdog', async () => {
    fake.watchScripts.push({ silentWatch: true });
    startWatcher({ watchdogMs: 300 });
    await until('second watch open', () => fake.openWatches === 1 && watchRequests().length === 2);
    expect(watcher?.stats().watchdogRestarts).toBe(1);
    fake.put('after-silence');
    await until('event after watchdog restart', () => events.includes('ADDED after-silence'));
  });

  it('survives a handler that throws', async () => {
    let calls = 0;
    startWatcher({
      onEvent: (event) => {
        calls++;
        if (calls === 1) throw new Error('handler bug');
        record(event);
      },
    });
    await until('watch open', () => fake.openWatches === 1);
    fake.put('first');
    fake.put('second');
    await until('second event', () => events.includes('ADDED second'));
    expect(events).toEqual(['ADDED second']);
  });

  it('stop closes its streams; whenSynced is false when stopped before the first listing', async () => {
    startWatcher();
    await until('watch open', () => fake.openWatches === 1);
    await watcher?.stop();
    await until('stream closed', () => fake.openWatches === 0);

    fake.listScripts.push({ hang: true });
    const second = startWatcher();
    await until('list requested', () => fake.requests.filter((r) => !r.query.get('watch')).length === 2);
    await second.stop();
    expect(await second.whenSynced()).toBe(false);
  });
});

describe('OwnedObjectWatcher listings page by page', () => {
  const listRequests = () => fake.requests.filter((request) => request.query.get('watch') !== 'true').length;

  async function pagedClient(): Promise<KubeClient> {
    return KubeClient.fromConnection(await kubeConfigConnection(fake.kubeConfig()), {
      logger,
      requestTimeoutMs: 2_000,
      listPageSize: 2,
    });
  }

  it('hands each page to the handler before it asks for the next', async () => {
    for (const name of ['a', 'b', 'c', 'd', 'e']) fake.put(name);
    const paged = await pagedClient();
    // How many list requests had been made when each object reached the handler.
    const requestsAtEvent: string[] = [];
    startWatcher({
      client: paged,
      onEvent: (event) => requestsAtEvent.push(`${event.object.metadata.name} ${listRequests()}`),
    });
    expect(await watcher?.whenSynced()).toBe(true);
    expect(requestsAtEvent).toEqual(['a 1', 'b 1', 'c 2', 'd 2', 'e 3']);
    await watcher?.stop();
    await paged.close();
  });

  it('tells each object once when a listing starts over, and a deletion only from a complete one', async () => {
    for (const name of ['a', 'b', 'c', 'd', 'e']) fake.put(name);
    const paged = await pagedClient();
    startWatcher({
      client: paged,
      onEvent: (event) => {
        record(event);
        // Seen changed by the relist's first page, then gone before the listing starts over.
        if (event.type === 'MODIFIED' && event.object.metadata.name === 'a') fake.removeQuietly('a');
      },
    });
    expect(await watcher?.whenSynced()).toBe(true);
    await until('watch open', () => fake.openWatches === 1);
    expect(events).toEqual(['ADDED a', 'ADDED b', 'ADDED c', 'ADDED d', 'ADDED e']);
    // Missed while not watching: a changed, d is gone. The relist's continue token expires after
    // its first page: the listing started over no longer holds a, and only it may say what is gone.
    fake.putQuietly('a', { k: 'v' });
    fake.removeQuietly('d');
    fake.watchScripts.push({ watchError: 410, reason: 'Expired' });
    fake.listScripts.push({ pass: true }, { status: 410, reason: 'Expired' });
    fake.cutWatches();
    await until('the missed deletions', () => events.includes('DELETED d') && events.includes('DELETED a'));
    expect(events.slice(5)).toEqual(['MODIFIED a', 'DELETED a', 'DELETED d']);
    await watcher?.stop();
    await paged.close();
  });
});

describe('OwnedObjectWatcher memory', () => {
  it('keeps no reference to its listing while its watch is open', async () => {
    // gc() for this test alone: whether the listing can be collected is the question.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const items: LiveKubeObject[] = Array.from({ length: 100 }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `cm-${i}`,
        namespace: 'fake',
        uid: `uid-${i}`,
        resourceVersion: `${i + 1}`,
        labels: {},
        annotations: {},
      },
    }));
    const listing = new WeakRef(items[0] as LiveKubeObject);
    let listed = false;
    const idle = new AbortController();
    const source: WatchSource = {
      listPages: async (_kind, _opts, onPage) => {
        listed = true;
        onPage(items.splice(0), false);
        return '100';
      },
      // A watch that stays open, silent, until the watcher stops it.
      watch: (_kind, opts) => ({
        async *[Symbol.asyncIterator]() {
          await new Promise<void>((resolve) => {
            opts.signal?.addEventListener('abort', () => resolve(), { once: true });
            idle.signal.addEventListener('abort', () => resolve(), { once: true });
          });
        },
      }),
    };
    watcher = new OwnedObjectWatcher({
      client: source,
      logger,
      kinds: ['ConfigMap'],
      namespaces: ['fake'],
      labelSelector: 'owner=test',
      onEvent: () => {},
    });
    watcher.start();
    expect(await watcher.whenSynced()).toBe(true);
    expect(listed).toBe(true);
    for (let i = 0; i < 3 && listing.deref() !== undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
    }
    // The watcher remembers a skeleton of each object, never the listed object itself.
    expect(listing.deref()).toBeUndefined();
    idle.abort();
  });
});

describe('OwnedObjectWatcher listings through a shared gate', () => {
  it('lists no more streams at once than the gate lets through, across watchers', async () => {
    let running = 0;
    let most = 0;
    let listings = 0;
    const stopping = new AbortController();
    const source: WatchSource = {
      listPages: async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
        listings++;
        return '1';
      },
      watch: () => ({
        async *[Symbol.asyncIterator]() {
          await new Promise<void>((resolve) =>
            stopping.signal.addEventListener('abort', () => resolve(), { once: true }),
          );
        },
      }),
    };
    const gate = new ListGate(2);
    const watchers = [0, 1].map(
      () =>
        new OwnedObjectWatcher({
          client: source,
          logger,
          kinds: ['ConfigMap', 'Secret', 'Service'],
          namespaces: ['a', 'b'],
          labelSelector: 'owner=test',
          listGate: gate,
          onEvent: () => {},
        }),
    );
    for (const each of watchers) each.start();
    expect(await Promise.all(watchers.map((each) => each.whenSynced()))).toEqual([true, true]);
    expect(listings).toBe(12);
    expect(most).toBe(2);
    stopping.abort();
    await Promise.all(watchers.map((each) => each.stop()));
  });
});
