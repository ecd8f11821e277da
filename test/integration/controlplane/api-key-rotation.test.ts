// API-key rotation as it happens in a cluster: `k8s-listener run` reads its key from a mounted
// Secret (controlPlane.apiKeyFile); the control plane rotates, the old key is refused, the kubelet
// publishes the new Secret version, and the same process goes on working without a restart.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ApiKeySource } from '../../../src/controlplane/apiKey.ts';
import { type RunningEmulator, startEmulator } from '../../../src/emulator/server.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { app, FAST_RECONCILE, type World, waitForRevision } from '../../support/agentHarness.ts';
import { ControlPlaneTestClient } from '../../support/controlPlaneTestClient.ts';
import { eventually } from '../../support/eventually.ts';
import { type MountedSecret, mountedSecret } from '../../support/mountedSecret.ts';

const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;
const OLD_KEY = 'sk-rotation-old-5c1d2e3f4a';
const NEW_KEY = 'sk-rotation-new-9b8a7c6d5e';

let emulator: RunningEmulator;
let world: World;
let secret: MountedSecret;
let agent: { child: ChildProcess; output: () => string; exited: Promise<number | null> } | undefined;
/** The key the test's own client sends: it follows the control plane's rotation. */
let testKey = OLD_KEY;

beforeAll(async () => {
  const kubeconfigPath = inject('kubeconfigPath');
  const kube = adminKube(kubeconfigPath);
  const namespace = uniqueNamespace('rot');
  await createNamespace(kube, namespace);
  emulator = await startEmulator({ apiKey: OLD_KEY });
  const source: ApiKeySource = { current: async () => testKey, refused: () => {}, close: () => {} };
  const client = new ControlPlaneTestClient({
    baseUrl: emulator.url,
    apiKeySource: source,
    logger: pino({ level: 'silent' }),
    retry: { retries: 1, minDelayMs: 5, maxDelayMs: 20 },
  });
  const listener = await client.createListener({
    compute_type: 'k8s',
    compute_id: `test-${namespace}`,
    compute_config: { k8s_namespaces: [namespace] },
  });
  world = {
    kube,
    kubeconfigPath,
    emulator,
    client,
    listenerId: listener.id,
    namespaces: [namespace],
    close: async () => {
      await client.close();
      await emulator.close();
      await kube.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
  secret = await mountedSecret({ 'api-key': `${OLD_KEY}\n` });
});

afterAll(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  await secret?.remove();
  await world?.close();
});

function startAgent(configPath: string) {
  const child = spawn(process.execPath, [MAIN, 'run', '--config', configPath], {
    env: { PATH: process.env.PATH ?? '', POD_NAME: 'rotation', POD_NAMESPACE: 'default' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('API key rotation through a mounted Secret', () => {
  it('refuses the old key after the control plane rotates, then works with the new one, in the same process', async () => {
    const namespace = world.namespaces[0] ?? '';
    const configPath = join(await mkdtemp(join(tmpdir(), 'k8s-listener-rotation-')), 'config.yaml');
    await writeFile(
      configPath,
      JSON.stringify({
        listenerId: world.listenerId,
        controlPlane: { baseUrl: emulator.url, apiKeyFile: secret.path('api-key') },
        kubeconfig: world.kubeconfigPath,
        agentNamespace: 'default',
        namespaces: world.namespaces,
        probes: { host: '127.0.0.1', port: 0 },
        log: { level: 'info', format: 'json' },
        reconcile: { ...FAST_RECONCILE, leaderElection: { enabled: false } },
      }),
    );
    agent = startAgent(configPath);
    const running = agent;
    const pid = running.child.pid;

    const before = await world.client.createDeployment(app(world, 'before', namespace));
    await waitForRevision(world, before, 'DEPLOYED');

    // The control plane rotates first: the agent's key is refused, and it says so (no key shown).
    emulator.setApiKey(NEW_KEY);
    testKey = NEW_KEY;
    await eventually(
      'the old key refused',
      async () => (running.output().includes('failed with 401') ? true : undefined),
      15_000,
    );

    // The kubelet publishes the new version of the Secret: new directory, atomic ..data swap.
    await secret.update({ 'api-key': `${NEW_KEY}\n` });
    const after = await world.client.createDeployment(app(world, 'after', namespace));
    await waitForRevision(world, after, 'DEPLOYED');

    expect(running.child.pid).toBe(pid);
    expect(running.child.exitCode).toBeNull();
    expect(running.output()).toContain('"msg":"API key file changed; using the new key"');
    expect(running.output()).not.toContain(OLD_KEY);
    expect(running.output()).not.toContain(NEW_KEY);

    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
  });
});
