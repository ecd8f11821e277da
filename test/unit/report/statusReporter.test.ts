import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ControlPlaneError } from '../../../src/controlplane/errors.ts';
import type { StatusReportBatch } from '../../../src/controlplane/schemas/index.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import { StatusReporter } from '../../../src/report/statusReporter.ts';

const D1 = '00000000-0000-4000-8000-000000000001';
const D2 = '00000000-0000-4000-8000-000000000002';
const R1 = '00000000-0000-4000-8000-000000000101';

function reporter(post: (batch: StatusReportBatch) => Promise<void>) {
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
  const r = new StatusReporter({
    sink: {
      postStatusReports: async (_listener, batch) => {
        await post(batch);
        sent.push(batch);
      },
    },
    listenerId: '00000000-0000-4000-8000-0000000000aa',
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
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
