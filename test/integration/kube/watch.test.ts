// OwnedObjectWatcher against a real API server, through a TCP proxy that can cut or freeze the
// connection: events for owned objects only, recovery after a cut stream and a silent one.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  KubeClient,
  type KubeObject,
  type OwnedObjectEvent,
  OwnedObjectWatcher,
} from '../../../src/kube/index.ts';
import { LABEL_LISTENER_ID } from '../../../src/objects/ownership.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { eventually } from '../../support/eventually.ts';
import { kubeConfigConnection } from '../../support/kubeConfigConnection.ts';
import { proxiedKubeConfig, type TcpProxy } from '../../support/tcpProxy.ts';

const kubeconfigPath = inject('kubeconfigPath');
const admin = adminKube(kubeconfigPath);
const logger = pino({ level: 'silent' });
const namespaces = [uniqueNamespace('kube-watch-a'), uniqueNamespace('kube-watch-b')];
let writer: KubeClient;
let watchClient: KubeClient;
let proxy: TcpProxy;
let watcher: OwnedObjectWatcher | undefined;
let events: string[];

function owned(
  kind: 'ConfigMap' | 'Secret',
  namespace: string,
  name: string,
  listenerId: string,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind,
    metadata: { name, namespace, labels: { [LABEL_LISTENER_ID]: listenerId }, annotations: {} },
    data: {},
  };
}

function startWatcher(
  listenerId: string,
  extra: { watchdogMs?: number; watchTimeoutSeconds?: number } = {},
): OwnedObjectWatcher {
  events = [];
  watcher = new OwnedObjectWatcher({
    client: watchClient,
    logger,
    kinds: ['ConfigMap', 'Secret'],
    namespaces,
    labelSelector: `${LABEL_LISTENER_ID}=${listenerId}`,
    onEvent: (event: OwnedObjectEvent) =>
      events.push(
        `${event.type} ${event.object.kind}/${event.object.metadata.namespace}/${event.object.metadata.name}`,
      ),
    backoffInitialMs: 100,
    backoffMaxMs: 1_000,
    ...extra,
  });
  watcher.start();
  return watcher;
}

/** Every stream has sent its watch request (and the server has had a moment to start it). */
async function streamsOpen(): Promise<void> {
  await watcher?.whenSynced();
  await eventually('4 watch requests sent', async () =>
    (watcher?.stats().watches ?? 0) >= 4 ? true : undefined,
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(proxy.connections).toBeGreaterThanOrEqual(4);
}

const seen = (entry: string) => async () => (events.includes(entry) ? true : undefined);

beforeAll(async () => {
  for (const namespace of namespaces) await createNamespace(admin, namespace);
  writer = await KubeClient.fromKubeconfig(kubeconfigPath, { logger });
  const proxied = await proxiedKubeConfig(kubeconfigPath);
  proxy = proxied.proxy;
  watchClient = await KubeClient.fromConnection(await kubeConfigConnection(proxied.config), {
    logger,
    requestTimeoutMs: 5_000,
  });
});

afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
  // No frozen idle connection may outlive its test.
  proxy.cutAll();
});

afterAll(async () => {
  await watchClient?.close();
  await writer?.close();
  await proxy?.close();
  for (const namespace of namespaces) await admin.core.deleteNamespace({ name: namespace }).catch(() => {});
});

describe('OwnedObjectWatcher on a real API server', () => {
  it('sees ADDED, MODIFIED and DELETED for owned objects of several kinds in several namespaces', async () => {
    const id = randomBytes(4).toString('hex');
    const [first = '', second = ''] = namespaces;
    await writer.apply(owned('ConfigMap', first, 'before-start', id), { force: false });
    startWatcher(id);
    expect(await watcher?.whenSynced()).toBe(true);
    expect(events).toEqual([`ADDED ConfigMap/${first}/before-start`]);

    await writer.apply(owned('Secret', second, 'creds', id), { force: false });
    await writer.apply(owned('ConfigMap', second, 'not-ours', `${id}-other`), { force: false });
    await writer.apply(
      { ...owned('ConfigMap', first, 'before-start', id), data: { changed: 'yes' } },
      { force: false },
    );
    await writer.delete({ apiVersion: 'v1', kind: 'Secret', namespace: second, name: 'creds' });

    await eventually('Secret deletion seen', seen(`DELETED Secret/${second}/creds`), 15_000);
    // Streams are independent: order holds per object, not across objects.
    expect([...events].sort()).toEqual(
      [
        `ADDED ConfigMap/${first}/before-start`,
        `ADDED Secret/${second}/creds`,
        `MODIFIED ConfigMap/${first}/before-start`,
        `DELETED Secret/${second}/creds`,
      ].sort(),
    );
    expect(events.filter((event) => event.endsWith(`${first}/before-start`))).toEqual([
      `ADDED ConfigMap/${first}/before-start`,
      `MODIFIED ConfigMap/${first}/before-start`,
    ]);
    // One listing and one stream per kind and namespace.
    expect(watcher?.stats()).toMatchObject({ lists: 4, watches: 4, failures: 0 });
  });

  it('recovers after its connections are cut, and misses nothing that changed meanwhile', async () => {
    const id = randomBytes(4).toString('hex');
    const [first = ''] = namespaces;
    startWatcher(id);
    await streamsOpen();

    proxy.refuse(true);
    // Written while the watcher cannot reach the server.
    await writer.apply(owned('ConfigMap', first, 'during-outage', id), { force: false });
    await new Promise((resolve) => setTimeout(resolve, 500));
    proxy.refuse(false);

    await eventually('change made during the outage', seen(`ADDED ConfigMap/${first}/during-outage`), 20_000);
    await writer.apply(owned('ConfigMap', first, 'after-outage', id), { force: false });
    await eventually('change made after the outage', seen(`ADDED ConfigMap/${first}/after-outage`), 20_000);
    const stats = watcher?.stats();
    expect(stats?.failures).toBeGreaterThanOrEqual(4);
    expect(stats?.watches).toBeGreaterThan(4);
    expect(events.filter((event) => event.endsWith('/during-outage'))).toHaveLength(1);
  });

  it('restarts a stream that went silent (frozen connection) after the watchdog period', async () => {
    const id = randomBytes(4).toString('hex');
    const [, second = ''] = namespaces;
    startWatcher(id, { watchdogMs: 1_500 });
    await streamsOpen();

    proxy.freezeAll();
    await writer.apply(owned('Secret', second, 'while-frozen', id), { force: false });
    await eventually('event after the watchdog restart', seen(`ADDED Secret/${second}/while-frozen`), 20_000);
    expect(watcher?.stats().watchdogRestarts).toBeGreaterThanOrEqual(1);
  });

  it('renews streams the server ends on schedule, without relisting or counting failures', async () => {
    const id = randomBytes(4).toString('hex');
    const [first = ''] = namespaces;
    // Streams of 2–4 s: the server ends each one normally (bookmarks, when it sends them, must not hurt).
    startWatcher(id, { watchTimeoutSeconds: 2 });
    await streamsOpen();
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    const stats = watcher?.stats();
    expect(stats?.watches).toBeGreaterThanOrEqual(8);
    expect(stats?.failures).toBe(0);
    expect(stats?.lists).toBe(4);
    await writer.apply(owned('ConfigMap', first, 'after-renewals', id), { force: false });
    await eventually('event after renewals', seen(`ADDED ConfigMap/${first}/after-renewals`), 10_000);
  });
});
