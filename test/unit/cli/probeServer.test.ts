import pino from 'pino';
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningProbeServer, startProbeServer } from '../../../src/cli/probeServer.ts';

describe('probe server', () => {
  let server: RunningProbeServer | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it('answers liveness, readiness and metrics from the given state', async () => {
    const registry = new Registry();
    new Counter({ name: 'probe_test_total', help: 'a test counter', registers: [registry] }).inc(3);
    let ready = false;
    server = await startProbeServer({
      host: '127.0.0.1',
      port: 0,
      registry,
      isLive: () => true,
      isReady: () => ready,
      logger: pino({ level: 'silent' }),
    });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    ready = true;
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const metrics = await fetch(`${server.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('probe_test_total 3');
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    expect((await fetch(`${server.url}/healthz`, { method: 'POST' })).status).toBe(405);
  });
});
