import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ControlPlaneClient } from '../../src/controlplane/client.ts';
import { type RunningEmulator, startEmulator } from '../../src/emulator/server.ts';
import { Agent } from '../../src/manager/agent.ts';
import { RegistrationError } from '../../src/manager/registration.ts';
import { ReconcileConfig } from '../../src/reconcile/reconcileConfig.ts';
import { RenderConfig } from '../../src/render/index.ts';
import { createMetrics } from '../../src/report/metrics.ts';
import { AGENT_VERSION } from '../../src/version.ts';

const API_KEY = 'registration-test-key';
let emulator: RunningEmulator;
let client: ControlPlaneClient;
let k8sListener: string;
let otherListener: string;

beforeAll(async () => {
  emulator = await startEmulator({ apiKey: API_KEY });
  client = new ControlPlaneClient({
    baseUrl: emulator.url,
    apiKey: API_KEY,
    logger: pino({ level: 'silent' }),
  });
  k8sListener = (
    await client.createListener({
      compute_type: 'k8s',
      compute_id: 'reg',
      compute_config: { k8s_namespaces: ['reg-a', 'reg-b'] },
    })
  ).id;
  otherListener = (await client.createListener({ compute_type: 'ecs', compute_id: 'reg' })).id;
});
afterAll(async () => {
  await client.close();
  await emulator.close();
});

function agent(listenerId: string, apiKey: string, allowedNamespaces?: string[]): Agent {
  return new Agent({
    listenerId,
    controlPlane: { baseUrl: emulator.url, apiKey, retry: { retries: 0 } },
    kubeconfigPath: inject('kubeconfigPath'),
    allowedNamespaces,
    identity: 'registration-test',
    agentNamespace: 'default',
    render: RenderConfig.parse({}),
    reconcile: ReconcileConfig.parse({ leaderElection: { enabled: false } }),
    metrics: createMetrics({ defaultMetrics: false }),
    logger: pino({ level: 'silent' }),
  });
}

async function startFailure(subject: Agent): Promise<Error> {
  try {
    await subject.start();
  } catch (error) {
    return error as Error;
  } finally {
    await subject.stop();
  }
  throw new Error('the agent started');
}

describe('registration', () => {
  it.each([
    ['a missing listener', () => agent('00000000-0000-4000-8000-00000000dead', API_KEY), 'does not exist'],
    ['a listener of another compute type', () => agent(otherListener, API_KEY), 'compute type ecs, not k8s'],
    ['refused credentials', () => agent(k8sListener, 'wrong-key'), 'refused the API key'],
    [
      'no namespace left by the allow-list',
      () => agent(k8sListener, API_KEY, ['elsewhere']),
      'no namespace to manage',
    ],
  ])('stops the agent at start on %s, with a clear message', async (_name, make, message) => {
    const error = await startFailure(make());
    expect(error).toBeInstanceOf(RegistrationError);
    expect(error.message).toContain(message);
    expect(error.message).not.toContain('wrong-key');
  });

  it('takes the listener namespaces intersected with the allow-list, and records its version', async () => {
    const subject = agent(k8sListener, API_KEY, ['reg-b', 'reg-c']);
    try {
      await subject.start();
      expect(subject.namespaces).toEqual(['reg-b']);
      await expect
        .poll(async () => (await client.getListener(k8sListener)).version, { timeout: 10_000 })
        .toBe(AGENT_VERSION);
    } finally {
      await subject.stop();
    }
  });
});
