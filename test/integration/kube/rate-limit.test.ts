// The client-side rate limit (client-go's qps/burst) against the real API server: a burst goes
// through at once, the rest at qps; a request waiting for its token
// ends at once when its signal aborts, as an aborted request.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isAborted, KubeClient } from '../../../src/kube/index.ts';

const kubeconfigPath = inject('kubeconfigPath');
const logger = pino({ level: 'silent' });
const ref = { apiVersion: 'v1', kind: 'Namespace', name: 'default' } as const;
let limited: KubeClient;
let unlimited: KubeClient;

beforeAll(async () => {
  limited = await KubeClient.fromKubeconfig(kubeconfigPath, { logger, rateLimit: { qps: 10, burst: 3 } });
  unlimited = await KubeClient.fromKubeconfig(kubeconfigPath, { logger });
});

afterAll(async () => {
  await limited?.close();
  await unlimited?.close();
});

describe('the client-side rate limit', () => {
  it('lets the burst through, then paces requests at qps', async () => {
    const started = performance.now();
    // 3 at once (the burst), then 7 more at 10/s: at least 0.7 s in all.
    for (let i = 0; i < 10; i++) expect(await limited.get(ref)).toBeDefined();
    const limitedMs = performance.now() - started;
    expect(limitedMs).toBeGreaterThanOrEqual(650);

    const free = performance.now();
    for (let i = 0; i < 10; i++) await unlimited.get(ref);
    // The same requests without a limit are much faster (the difference is the limiter's).
    expect(performance.now() - free).toBeLessThan(limitedMs);
  });

  it('ends a request still waiting for its token when its signal aborts', async () => {
    for (let i = 0; i < 5; i++) void limited.get(ref).catch(() => undefined); // drain the bucket
    const controller = new AbortController();
    const waiting = limited.get(ref, { signal: controller.signal });
    controller.abort();
    const error = await waiting.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAborted(error)).toBe(true);
  });
});
