// Shutdown ends the agent at once wherever it waits: a SIGTERM while registration retries against
// a control plane that does not answer (a real `k8s-listener run` process), and stop() while a
// poll is retrying.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import { Agent } from '../../../src/manager/agent.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import { FAST_RECONCILE, startWorld } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { startFaultyControlPlane } from '../../support/faultyControlPlane.ts';

const MAIN = fileURLToPath(new URL('../../../src/cli/main.ts', import.meta.url));

/** A local port nothing listens on: connections are refused, so every attempt fails. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('shutdown', () => {
  it('stops promptly on SIGTERM while registration is still retrying', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-shutdown-'));
    const configPath = join(dir, 'config.yaml');
    await writeFile(
      configPath,
      JSON.stringify({
        listenerId: randomUUID(),
        controlPlane: { baseUrl: `http://127.0.0.1:${await closedPort()}` },
        kubeconfig: inject('kubeconfigPath'),
        agentNamespace: 'default',
        namespaces: ['apps'],
        probes: { host: '127.0.0.1', port: 0 },
        log: { level: 'info' },
      }),
    );
    const child = spawn(process.execPath, [MAIN, 'run', '--config', configPath], {
      env: { ...process.env, POD_NAME: 'shutdown-test', POD_NAMESPACE: 'default' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // Registration is under way and failing: the control-plane client retries.
      await eventually(
        'registration retrying',
        async () => (output.includes('control-plane request failed; retrying') ? true : undefined),
        30_000,
      );
      const sent = performance.now();
      child.kill('SIGTERM');
      const code = await Promise.race([
        exited,
        new Promise<'still running'>((r) => setTimeout(() => r('still running'), 5_000)),
      ]);
      const seconds = (performance.now() - sent) / 1000;
      expect(code, output.slice(-2_000)).toBe(0);
      expect(seconds).toBeLessThan(3);
      expect(output).toContain('signal received while registering');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  }, 60_000);
});

describe('stop() while a poll is in progress', () => {
  it('cancels the poll and its control-plane retries instead of waiting them out', async () => {
    const world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
    const proxy = await startFaultyControlPlane(world.emulator.url);
    const agent = new Agent({
      listenerId: world.listenerId,
      // Retries that would take up to a minute: what stop() used to wait out.
      controlPlane: {
        baseUrl: proxy.url,
        retry: { retries: 20, minDelayMs: 3_000, maxDelayMs: 5_000, maxElapsedMs: 60_000 },
      },
      kubeconfigPath: world.kubeconfigPath,
      allowedNamespaces: undefined,
      identity: 'poll-cancel-test',
      agentNamespace: 'default',
      render: RenderConfig.parse({}),
      reconcile: ReconcileConfig.parse({ ...FAST_RECONCILE, leaderElection: { enabled: false } }),
      metrics: createMetrics({ defaultMetrics: false }),
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    });
    try {
      await agent.start();
      const polls = () => proxy.requests.filter((r) => r === 'GET /v2/deployments').length;
      await eventually('a first poll', async () => (polls() > 0 ? true : undefined), 15_000);
      proxy.fault = 'errors';
      const failing = proxy.requests.length;
      // A poll cycle is now failing and retrying (the listener read, then the listing).
      await eventually(
        'a failing poll',
        async () => (proxy.requests.length > failing ? true : undefined),
        15_000,
      );
      const started = performance.now();
      const done = await Promise.race([
        agent.stop().then(() => 'stopped'),
        new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 10_000)),
      ]);
      expect(done).toBe('stopped');
      expect((performance.now() - started) / 1000).toBeLessThan(2);
    } finally {
      await agent.stop();
      await proxy.close();
      await world.close();
    }
  }, 60_000);
});
