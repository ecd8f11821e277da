// The leader records its version on the listener with a whole-listener PUT (the interface has no
// concurrency token): only when the listener records another version, and with a re-read after the
// write that warns (log, Event, metric) when the listener then holds other namespaces or compute
// configuration than were read — an operator's edit made meanwhile. The control plane is the real
// emulator; a proxy lets the test play the operator between the agent's requests.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ControlPlaneClient } from '../../../src/controlplane/client.ts';
import type { Listener, ListenerWrite } from '../../../src/controlplane/schemas/index.ts';
import type { EventDetails, EventSubject } from '../../../src/kube/events.ts';
import { recordVersion } from '../../../src/manager/registration.ts';
import { suspensionsRef } from '../../../src/reconcile/policy/suspensions.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import { AGENT_VERSION } from '../../../src/version.ts';
import { type Harness, startHarness } from '../../support/emulatorHarness.ts';
import { type ListenerEditProxy, startListenerEditProxy } from '../../support/listenerEditProxy.ts';

const PREVIOUS_VERSION = '0.0.1-previous';
const SUBJECT: EventSubject = suspensionsRef('k8s-listener');

let harness: Harness;
let proxy: ListenerEditProxy;
let agentClient: ControlPlaneClient;
let listener: Listener;
let computeIds = 0;

beforeAll(async () => {
  harness = await startHarness({ seed: false });
  proxy = await startListenerEditProxy(harness.emulator.url);
  agentClient = new ControlPlaneClient({
    baseUrl: proxy.url,
    logger: pino({ level: 'silent' }),
    retry: { retries: 0 },
  });
});
afterAll(async () => {
  await agentClient.close();
  await proxy.close();
  await harness.close();
});

beforeEach(async () => {
  listener = await harness.client.createListener({
    compute_type: 'k8s',
    compute_id: `cluster-${++computeIds}`,
    compute_config: { k8s_namespaces: ['apps', 'apps-staging'], region: 'eu-1' },
    version: PREVIOUS_VERSION,
  });
  proxy.requests.length = 0;
});
afterEach(() => {
  proxy.afterAnswer = undefined;
  proxy.refuse = undefined;
});

const path = () => `/v2/listeners/${listener.id}`;

/** recordVersion as the leader calls it, with what it logs, counts and records kept. */
async function record() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    }),
  );
  const metrics = createMetrics({ defaultMetrics: false });
  const events: { subject: EventSubject; details: EventDetails }[] = [];
  const returned = await recordVersion({
    client: agentClient,
    listener,
    logger,
    metrics,
    events: {
      record: async (subject, details) => {
        events.push({ subject: subject as EventSubject, details });
      },
    },
    eventSubject: SUBJECT,
  });
  const conflicts = (await metrics.listenerEditConflicts.get()).values[0]?.value;
  const warnings = lines.filter((line) => line.level === 40);
  return { returned, conflicts, warnings, events };
}

/** The operator's write: their read of the listener with other namespaces, sent back whole. */
function edited(read: Listener, namespaces: string[], config: Record<string, unknown> = {}): ListenerWrite {
  return {
    compute_type: read.compute_type,
    compute_id: read.compute_id,
    compute_config: { ...read.compute_config, k8s_namespaces: namespaces, ...config },
    version: read.version ?? null,
  };
}

describe('recording the agent version on the listener', () => {
  it('sends no PUT when the listener already records this version', async () => {
    await harness.client.putListener(listener.id, { ...edited(listener, ['apps']), version: AGENT_VERSION });
    proxy.requests.length = 0;
    const { returned, conflicts, warnings, events } = await record();
    expect(proxy.requests).toEqual([`GET ${path()}`]);
    expect(returned.version).toBe(AGENT_VERSION);
    expect(returned.compute_config?.k8s_namespaces).toEqual(['apps']);
    expect([conflicts, warnings, events]).toEqual([0, [], []]);
  });

  it('writes right after its read and re-reads; nothing to warn of when nobody else wrote', async () => {
    const { returned, conflicts, warnings, events } = await record();
    expect(proxy.requests).toEqual([`GET ${path()}`, `PUT ${path()}`, `GET ${path()}`]);
    const stored = await harness.client.getListener(listener.id);
    expect(stored.version).toBe(AGENT_VERSION);
    expect(stored.compute_config).toEqual(listener.compute_config);
    expect(returned).toEqual(stored);
    expect([conflicts, warnings, events]).toEqual([0, [], []]);
  });

  it.each([
    {
      what: 'an operator edit that crosses the write (read before it, stored after it)',
      // The operator reads between the agent's read and its write, and writes after the agent's write.
      operator: async (proxyRequest: string, read: { listener?: Listener }) => {
        if (proxyRequest.startsWith('GET')) read.listener = await harness.client.getListener(listener.id);
        if (proxyRequest.startsWith('PUT') && read.listener)
          await harness.client.putListener(listener.id, edited(read.listener, ['apps', 'apps-prod']));
      },
      namespacesStored: ['apps', 'apps-prod'],
      otherKeysChanged: [],
      versionKept: false,
    },
    {
      what: 'an operator edit made after the write',
      operator: async (proxyRequest: string) => {
        if (!proxyRequest.startsWith('PUT')) return;
        const now = await harness.client.getListener(listener.id);
        await harness.client.putListener(listener.id, edited(now, ['apps-prod']));
      },
      namespacesStored: ['apps-prod'],
      otherKeysChanged: [],
      versionKept: true,
    },
    {
      what: 'an edit of compute_config other than the namespaces',
      operator: async (proxyRequest: string) => {
        if (!proxyRequest.startsWith('PUT')) return;
        const now = await harness.client.getListener(listener.id);
        await harness.client.putListener(
          listener.id,
          edited(now, ['apps', 'apps-staging'], { region: 'secret-looking-value' }),
        );
      },
      namespacesStored: ['apps', 'apps-staging'],
      otherKeysChanged: ['region'],
      versionKept: true,
    },
  ])('$what: warned by log, Event and metric, and what is stored is followed', async (edit) => {
    const operatorRead: { listener?: Listener } = {};
    proxy.afterAnswer = (request, nth) =>
      nth === 1 ? edit.operator(request, operatorRead) : Promise.resolve();
    const { returned, conflicts, warnings, events } = await record();

    const stored = await harness.client.getListener(listener.id);
    expect(stored.compute_config?.k8s_namespaces).toEqual(edit.namespacesStored);
    expect(stored.version === AGENT_VERSION).toBe(edit.versionKept);
    // The session goes on with the listener as stored, not as the agent read or wrote it.
    expect(returned).toEqual(stored);

    expect(conflicts).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      listenerId: listener.id,
      namespacesRead: ['apps', 'apps-staging'],
      namespacesStored: edit.namespacesStored,
      otherKeysChanged: edit.otherKeysChanged,
      versionKept: edit.versionKept,
    });
    expect(events).toHaveLength(1);
    expect(events[0]?.subject).toEqual(SUBJECT);
    expect(events[0]?.details).toMatchObject({ type: 'Warning', reason: 'ListenerEditConflict' });
    const note = events[0]?.details.note ?? '';
    expect(note).toContain(`listener ${listener.id}`);
    expect(note).toContain(
      `namespaces [apps, apps-staging] read before the write, [${edit.namespacesStored.join(', ')}] stored after it`,
    );
    expect(note.includes('was not kept')).toBe(!edit.versionKept);
    // A compute_config key the agent does not know is named, its value never printed.
    expect(JSON.stringify([warnings, events])).not.toContain('secret-looking-value');
  });

  it('says so when the listener cannot be re-read after the write, and returns what it wrote', async () => {
    proxy.refuse = (request, nth) => request === `GET ${path()}` && nth === 2;
    const { returned, conflicts, warnings, events } = await record();
    expect(proxy.requests).toEqual([`GET ${path()}`, `PUT ${path()}`, `GET ${path()}`]);
    expect(returned.version).toBe(AGENT_VERSION);
    expect(returned.compute_config).toEqual(listener.compute_config);
    expect(warnings.map((w) => w.msg)).toEqual([
      'could not re-read the listener after recording the agent version: an edit made meanwhile is not checked',
    ]);
    expect([conflicts, events]).toEqual([0, []]);
  });

  it('keeps the listener it was given when the control plane cannot be read, and writes nothing', async () => {
    proxy.refuse = () => true;
    const { returned, conflicts, warnings } = await record();
    expect(proxy.requests).toEqual([`GET ${path()}`]);
    expect(returned).toBe(listener);
    expect(warnings.map((w) => w.msg)).toEqual(['could not record the agent version on the listener']);
    expect(conflicts).toBe(0);
  });
});
