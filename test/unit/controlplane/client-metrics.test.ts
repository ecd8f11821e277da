import { createServer } from 'node:net';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../../src/emulator/server.ts';
import { ControlPlaneTestClient } from '../../support/controlPlaneTestClient.ts';
import { SEED_DEPLOYMENTS, SEED_LISTENER_ID, SEED_PATH } from '../../support/emulatorHarness.ts';

const logger = pino({ level: 'silent' });
let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startEmulator({ seedPath: SEED_PATH });
});
afterAll(() => emulator.close());

function client(baseUrl: string, registry: Registry) {
  return new ControlPlaneTestClient({
    baseUrl,
    logger,
    registry,
    retry: { retries: 1, minDelayMs: 1, maxDelayMs: 2 },
  });
}

/** `name{labels} value` lines of one metric family. */
async function series(registry: Registry, name: string): Promise<string[]> {
  return (await registry.getSingleMetricAsString(name)).split('\n').filter((l) => l && !l.startsWith('#'));
}

describe('control-plane request metrics', () => {
  it('count each request by endpoint template, method and status code, never by id', async () => {
    const registry = new Registry();
    const c = client(emulator.url, registry);
    const listenerId = SEED_LISTENER_ID;
    const deployment = { id: SEED_DEPLOYMENTS.helloWeb };
    await c.listAllDeployments();
    await c.getListener(listenerId);
    await c.listAllRevisions(deployment.id);
    await c.getListener('00000000-0000-4000-8000-000000000000').catch(() => undefined);
    await c.close();

    const requests = await series(registry, 'k8s_listener_control_plane_requests_total');
    const text = requests.join('\n');
    expect(text).not.toContain(listenerId);
    expect(text).not.toContain(deployment.id);
    expect(requests).toContain(
      'k8s_listener_control_plane_requests_total{endpoint="/v2/listeners/{listener_id}",method="GET",code="200"} 1',
    );
    expect(requests).toContain(
      'k8s_listener_control_plane_requests_total{endpoint="/v2/listeners/{listener_id}",method="GET",code="404"} 1',
    );
    // Two pages (items, then the empty page that ends the listing).
    expect(requests).toContain(
      'k8s_listener_control_plane_requests_total{endpoint="/v2/deployments/{deployment_id}/revisions",method="GET",code="200"} 2',
    );
    expect(
      requests.some((l) =>
        l.startsWith(
          'k8s_listener_control_plane_requests_total{endpoint="/v2/deployments",method="GET",code="200"}',
        ),
      ),
    ).toBe(true);

    const durations = await series(registry, 'k8s_listener_control_plane_request_duration_seconds');
    expect(durations).toContain(
      'k8s_listener_control_plane_request_duration_seconds_count{endpoint="/v2/listeners/{listener_id}",method="GET"} 2',
    );
  });

  it('labels a request that got no response `error`, once per attempt', async () => {
    // A port that was free a moment ago: connection refused.
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const registry = new Registry();
    const c = client(`http://127.0.0.1:${port}`, registry);
    await expect(c.getListener('x')).rejects.toMatchObject({ code: 'NETWORK' });
    await c.close();
    expect(await series(registry, 'k8s_listener_control_plane_requests_total')).toEqual([
      'k8s_listener_control_plane_requests_total{endpoint="/v2/listeners/{listener_id}",method="GET",code="error"} 2',
    ]);
  });

  it('shares one set of series between clients on one registry', async () => {
    const registry = new Registry();
    const a = client(emulator.url, registry);
    const b = client(emulator.url, registry);
    await a.listOAuthProviders();
    await b.listOAuthProviders();
    await a.close();
    await b.close();
    expect(await series(registry, 'k8s_listener_control_plane_requests_total')).toEqual([
      'k8s_listener_control_plane_requests_total{endpoint="/v2/auth/providers",method="GET",code="200"} 2',
    ]);
  });
});
