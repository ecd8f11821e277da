import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ControlPlaneError } from '../../../src/controlplane/errors.ts';
import type { StatusReportBatch } from '../../../src/controlplane/schemas/index.ts';
import { ControlPlaneReporter } from '../../../src/report/controlPlaneReporter.ts';
import { createMetrics } from '../../../src/report/metrics.ts';

const D1 = '00000000-0000-4000-8000-000000000001';
const D2 = '00000000-0000-4000-8000-000000000002';
const R1 = '00000000-0000-4000-8000-000000000101';

function reporter(post: (batch: StatusReportBatch) => Promise<void>, promptMs?: number) {
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _e, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  const sent: StatusReportBatch[] = [];
  const r = new ControlPlaneReporter({
    sink: {
      postStatusReports: async (_listener, batch) => {
        await post(batch);
        sent.push(batch);
      },
    },
    listenerId: '00000000-0000-4000-8000-0000000000aa',
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
    promptMs,
  });
  return { r, sent, lines };
}

describe('status reporter', () => {
  it('sends one batch per flush holding only what changed', async () => {
    const { r, sent } = reporter(async () => {});
    expect(r.record({ deployment_id: D1, revision_id: R1, revision_status: 'DEPLOYING' })).toBe(true);
    expect(
      r.record({
        deployment_id: D1,
        revision_id: R1,
        revision_status: 'DEPLOYED',
        deployment_status: 'READY',
      }),
    ).toBe(true);
    expect(r.record({ deployment_id: D2, deleted: true })).toBe(true);
    await r.flush();
    expect(sent).toHaveLength(1);
    expect(
      sent[0]?.reports.map((x) => [x.deployment_id, x.revision_status ?? null, x.deleted ?? null]),
    ).toEqual([
      [D1, 'DEPLOYED', null],
      [D2, null, true],
    ]);
    expect(
      r.record({
        deployment_id: D1,
        revision_id: R1,
        revision_status: 'DEPLOYED',
        deployment_status: 'READY',
      }),
    ).toBe(false);
    await r.flush();
    expect(sent).toHaveLength(1);
  });

  it('keeps pending reports after a failure and sends them next time', async () => {
    let fail = true;
    const { r, sent } = reporter(async () => {
      if (fail)
        throw new ControlPlaneError('down', { code: 'HTTP', method: 'POST', path: '/x', status: 503 });
    });
    r.record({ deployment_id: D1, revision_status: 'DEPLOYED' });
    await r.flush();
    expect(sent).toHaveLength(0);
    fail = false;
    await r.flush();
    expect(sent[0]?.reports.map((x) => x.deployment_id)).toEqual([D1]);
  });

  it.each([404, 405])(
    'turns itself off with one warning when the control plane answers %i',
    async (status) => {
      let calls = 0;
      const { r, lines } = reporter(async () => {
        calls++;
        throw new ControlPlaneError('no such endpoint', { code: 'HTTP', method: 'POST', path: '/x', status });
      });
      r.record({ deployment_id: D1, revision_status: 'DEPLOYED' });
      await r.flush();
      r.record({ deployment_id: D2, revision_status: 'DEPLOYED' });
      await r.flush();
      expect(calls).toBe(1);
      expect(r.enabled).toBe(false);
      expect(lines.filter((l) => l.includes('"level":40'))).toHaveLength(1);
    },
  );
});

describe('status reporter: refusals and volume', () => {
  const refuse = (status: number) =>
    new ControlPlaneError('refused', { code: 'HTTP', method: 'POST', path: '/x', status });

  it.each([400, 409, 413, 422])(
    'drops a batch refused with %i once, with one warning and a metric, and sends later reports',
    async (status) => {
      let calls = 0;
      const { r, sent, lines } = reporter(async () => {
        calls++;
        if (calls === 1) throw refuse(status);
      });
      r.record({ deployment_id: D1, revision_status: 'DEPLOYED' });
      await r.flush();
      await r.flush();
      expect(calls).toBe(1);
      expect(lines.filter((l) => l.includes('"level":40'))).toHaveLength(1);
      r.record({ deployment_id: D2, revision_status: 'DEPLOYING' });
      await r.flush();
      expect(sent.map((b) => b.reports.map((x) => x.deployment_id))).toEqual([[D2]]);
      expect(r.enabled).toBe(true);
    },
  );

  it('counts a refused batch as rejected, not sent', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const r = new ControlPlaneReporter({
      sink: {
        postStatusReports: async () => {
          throw refuse(422);
        },
      },
      listenerId: '00000000-0000-4000-8000-0000000000aa',
      logger: pino({ level: 'silent' }),
      metrics,
    });
    r.record({ deployment_id: D1, revision_status: 'DEPLOYED' });
    await r.flush();
    const text = await metrics.registry.getSingleMetricAsString('k8s_listener_status_reports_total');
    expect(text).toContain('result="rejected"} 1');
    expect(text).not.toContain('result="sent"');
  });

  it.each([401, 403, 429])('keeps a batch refused with %i for the next cycle', async (status) => {
    let calls = 0;
    const { r, sent } = reporter(async () => {
      calls++;
      if (calls === 1) throw refuse(status);
    });
    r.record({ deployment_id: D1, revision_status: 'DEPLOYED' });
    await r.flush();
    await r.flush();
    expect(sent.map((b) => b.reports.map((x) => x.deployment_id))).toEqual([[D1]]);
  });

  it('keeps the latest status of every deployment, however many, and sends them all in batches', async () => {
    const { r, sent } = reporter(async () => {});
    const ids = Array.from(
      { length: 1_234 },
      (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    );
    for (const id of ids) r.record({ deployment_id: id, revision_status: 'DEPLOYING' });
    for (const id of ids) r.record({ deployment_id: id, revision_status: 'DEPLOYED' });
    await r.flush();
    expect(sent.length).toBe(3);
    for (const batch of sent) expect(batch.reports.length).toBeLessThanOrEqual(500);
    const reports = sent.flatMap((b) => b.reports);
    expect(new Set(reports.map((x) => x.deployment_id)).size).toBe(ids.length);
    expect(reports.every((x) => x.revision_status === 'DEPLOYED')).toBe(true);
  });

  it('a status recorded while a batch is in flight is sent next, not lost', async () => {
    let release: () => void = () => {};
    const { r, sent } = reporter(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    r.record({ deployment_id: D1, revision_status: 'DEPLOYING' });
    const flushing = r.flush();
    r.record({ deployment_id: D1, revision_status: 'DEPLOYED' });
    release();
    await flushing;
    const second = r.flush();
    release();
    await second;
    expect(sent.map((b) => b.reports.map((x) => x.revision_status))).toEqual([['DEPLOYING'], ['DEPLOYED']]);
  });
});

describe('an outcome is sent at once', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const deployed = { deployment_id: D1, revision_id: R1, revision_status: 'DEPLOYED' as const };
  /** What `takeSent` gives for D1 once `deployed` went. */
  const deployedSent = [{ deployment_status: undefined, revision_status: 'DEPLOYED' }];
  const statuses = (sent: readonly StatusReportBatch[]) =>
    sent.map((batch) => batch.reports.map((x) => `${x.deployment_id.slice(-1)}:${x.revision_status}`));

  it('DEPLOYED is sent promptMs after it is recorded, without waiting for the poll', async () => {
    vi.useFakeTimers();
    const { r, sent } = reporter(async () => {}, 100);
    r.record(deployed);
    await vi.advanceTimersByTimeAsync(99);
    expect(sent).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(statuses(sent)).toEqual([['1:DEPLOYED']]);
  });

  it('DEPLOYING waits for the poll', async () => {
    vi.useFakeTimers();
    const { r, sent } = reporter(async () => {}, 100);
    r.record({ ...deployed, revision_status: 'DEPLOYING' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent).toHaveLength(0);
  });

  it('outcomes reached together go in one batch, with whatever else is pending', async () => {
    vi.useFakeTimers();
    const { r, sent } = reporter(async () => {}, 100);
    r.record({ ...deployed, deployment_id: D2, revision_status: 'DEPLOYING' });
    r.record(deployed);
    r.record({ ...deployed, deployment_id: D2, revision_status: 'DEPLOY_FAILED' });
    await vi.advanceTimersByTimeAsync(100);
    expect(statuses(sent)).toEqual([['1:DEPLOYED', '2:DEPLOY_FAILED']]);
  });

  it("waits while a poll's listing is under way, and goes with that poll's flush", async () => {
    vi.useFakeTimers();
    const { r, sent } = reporter(async () => {}, 100);
    await r.takeSent();
    r.record(deployed);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent).toHaveLength(0);
    await r.flush();
    expect(statuses(sent)).toEqual([['1:DEPLOYED']]);
    // Taken by the next listing as the agent's own report.
    expect((await r.takeSent()).get(D1)).toEqual(deployedSent);
  });

  /** `deployed` recorded and its prompt send under way; each `release` answers the latest send. */
  async function promptSendHeld() {
    vi.useFakeTimers();
    let answer: () => void = () => undefined;
    const { r, sent } = reporter(() => new Promise<void>((resolve) => (answer = resolve)), 10);
    r.record(deployed);
    await vi.advanceTimersByTimeAsync(10);
    return { r, sent, release: () => answer() };
  }

  it('a prompt send in flight when a listing starts counts as sent before that listing', async () => {
    const { r, sent, release } = await promptSendHeld();
    // The control plane has the report (the listing may show it) but has not answered yet.
    const taken = r.takeSent();
    release();
    expect((await taken).get(D1)).toEqual(deployedSent);
    expect(statuses(sent)).toEqual([['1:DEPLOYED']]);
  });

  it('a prompt send and a poll flush together send each report once', async () => {
    const { r, sent, release } = await promptSendHeld();
    const polled = r.flush();
    release();
    await vi.advanceTimersByTimeAsync(0);
    release();
    await polled;
    expect(statuses(sent)).toEqual([['1:DEPLOYED']]);
  });
});
