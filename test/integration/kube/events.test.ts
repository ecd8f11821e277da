// EventRecorder against a real API server: an events.k8s.io/v1 Event about the object, repeats
// folded into a series on the same Event, and failures logged instead of thrown.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EventRecorder, KubeClient, type LiveKubeObject } from '../../../src/kube/index.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';

const kubeconfigPath = inject('kubeconfigPath');
const admin = adminKube(kubeconfigPath);
const namespace = uniqueNamespace('kube-events');
const logLines: string[] = [];
const logger = pino(
  { level: 'warn' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  }),
);
let client: KubeClient;
let subject: LiveKubeObject;

async function eventsAbout(uid: string): Promise<Record<string, unknown>[]> {
  const all = await client.list('Event', { namespace });
  return all.filter((event) => (event.regarding as { uid?: string } | undefined)?.uid === uid);
}

beforeAll(async () => {
  await createNamespace(admin, namespace);
  client = await KubeClient.fromKubeconfig(kubeconfigPath, { logger });
  subject = await client.apply(
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'web', namespace, labels: {}, annotations: {} },
      data: {},
    },
    { force: false },
  );
});

afterAll(async () => {
  await client?.close();
  await admin.core.deleteNamespace({ name: namespace }).catch(() => {});
});

describe('EventRecorder', () => {
  it('records an Event about the object, with the reporting controller and instance', async () => {
    const recorder = new EventRecorder({ client, logger, identity: 'agent-0' });
    await recorder.record(subject, {
      type: 'Warning',
      reason: 'ApplyFailed',
      note: 'Deployment web: quota exceeded',
    });
    const [event, ...others] = await eventsAbout(subject.metadata.uid);
    expect(others).toEqual([]);
    expect(event).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      type: 'Warning',
      reason: 'ApplyFailed',
      action: 'ApplyFailed',
      note: 'Deployment web: quota exceeded',
      reportingController: 'k8s-listener',
      reportingInstance: 'agent-0',
      regarding: { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: 'web', uid: subject.metadata.uid },
    });
    expect(event?.eventTime).toMatch(/\.\d{6}Z$/);
    expect(event?.series).toBeUndefined();

    // core/v1 readers (kubectl describe) see it too.
    const core = await admin.core.listNamespacedEvent({ namespace });
    expect(core.items.some((item) => item.involvedObject.uid === subject.metadata.uid)).toBe(true);
    await recorder.close();
  });

  it('folds repeats into a series on one Event; a different note is a new Event', async () => {
    const other = await client.apply(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'api', namespace, labels: {}, annotations: {} },
      },
      { force: false },
    );
    const recorder = new EventRecorder({ client, logger, identity: 'agent-0', seriesUpdateIntervalMs: 0 });
    const details = { type: 'Normal', reason: 'Applied', note: 'revision r1 applied' } as const;
    const before = client.requestCounts({ kind: 'Event' });
    await recorder.record(other, details);
    await recorder.record(other, details);
    await recorder.record(other, details);
    await recorder.record(other, { ...details, note: 'revision r2 applied' });
    await recorder.flush();

    const events = await eventsAbout(other.metadata.uid);
    const byNote = new Map(events.map((event) => [event.note, event]));
    expect(events).toHaveLength(2);
    expect(byNote.get('revision r1 applied')?.series).toMatchObject({ count: 3 });
    expect(byNote.get('revision r2 applied')?.series).toBeUndefined();
    const after = client.requestCounts({ kind: 'Event' });
    expect((after.create ?? 0) - (before.create ?? 0)).toBe(2);
    expect((after.patch ?? 0) - (before.patch ?? 0)).toBe(2);
    await recorder.close();
  });

  it('rate-limits series updates: counts between updates are sent on flush', async () => {
    const recorder = new EventRecorder({
      client,
      logger,
      identity: 'agent-0',
      seriesUpdateIntervalMs: 60_000,
    });
    const details = { type: 'Warning', reason: 'Degraded', note: 'replicas unavailable' } as const;
    const before = client.requestCounts({ kind: 'Event' }).patch ?? 0;
    for (let i = 0; i < 5; i++) await recorder.record(subject, details);
    expect(client.requestCounts({ kind: 'Event' }).patch ?? 0).toBe(before);
    await recorder.flush();
    expect(client.requestCounts({ kind: 'Event' }).patch ?? 0).toBe(before + 1);
    const degraded = (await eventsAbout(subject.metadata.uid)).find((event) => event.reason === 'Degraded');
    expect(degraded?.series).toMatchObject({ count: 5 });
    await recorder.close();
  });

  it('never throws: a failed write is logged without the note', async () => {
    const recorder = new EventRecorder({ client, logger, identity: 'agent-0' });
    const ghost = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'no-such-namespace-x', name: 'ghost' };
    const linesBefore = logLines.length;
    await expect(
      recorder.record(ghost, { type: 'Warning', reason: 'ApplyFailed', note: 'note-text-7f3a' }),
    ).resolves.toBeUndefined();
    const logged = logLines.slice(linesBefore).join('');
    expect(logged).toContain('could not record event');
    expect(logged).toContain('ConfigMap/no-such-namespace-x/ghost');
    expect(logged).not.toContain('note-text-7f3a');
    await recorder.close();
  });
});
