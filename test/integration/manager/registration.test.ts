import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Listener } from '../../../src/controlplane/schemas/index.ts';
import { type RunningEmulator, startEmulator } from '../../../src/emulator/server.ts';
import { KubeClient } from '../../../src/kube/kubeClient.ts';
import { Agent } from '../../../src/manager/agent.ts';
import { RegistrationError } from '../../../src/manager/registration.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import { SUSPENSIONS_CONFIGMAP } from '../../../src/reconcile/policy/suspensions.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { type AgentMetrics, createMetrics } from '../../../src/report/metrics.ts';
import { AGENT_VERSION } from '../../../src/version.ts';
import { ControlPlaneTestClient } from '../../support/controlPlaneTestClient.ts';
import { startListenerEditProxy } from '../../support/listenerEditProxy.ts';

const API_KEY = 'registration-test-key';
let emulator: RunningEmulator;
let client: ControlPlaneTestClient;
let k8sListener: string;
let otherListener: string;

beforeAll(async () => {
  emulator = await startEmulator({ apiKey: API_KEY });
  client = new ControlPlaneTestClient({
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

interface AgentParts {
  /** Where the agent finds the control plane; the emulator by default. */
  readonly baseUrl?: string;
  readonly metrics?: AgentMetrics;
  readonly logger?: Logger;
}

function agent(
  listenerId: string,
  apiKey: string,
  allowedNamespaces?: string[],
  parts: AgentParts = {},
): Agent {
  return new Agent({
    listenerId,
    controlPlane: { baseUrl: parts.baseUrl ?? emulator.url, apiKey, retry: { retries: 0 } },
    kubeconfigPath: inject('kubeconfigPath'),
    allowedNamespaces,
    identity: 'registration-test',
    agentNamespace: 'default',
    render: RenderConfig.parse({}),
    reconcile: ReconcileConfig.parse({ leaderElection: { enabled: false } }),
    metrics: parts.metrics ?? createMetrics({ defaultMetrics: false }),
    logger: parts.logger ?? pino({ level: 'silent' }),
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

  it('sends no PUT at a leader start when the listener already records its version', async () => {
    const { id } = await client.createListener({
      compute_type: 'k8s',
      compute_id: 'reg-same-version',
      compute_config: { k8s_namespaces: ['reg-b'] },
      version: AGENT_VERSION,
    });
    const proxy = await startListenerEditProxy(emulator.url);
    const subject = agent(id, API_KEY, ['reg-b'], { baseUrl: proxy.url });
    try {
      await subject.start();
      // Registration's read, the leader's before its (skipped) write, and a poll's.
      await expect
        .poll(() => proxy.requests.filter((r) => r === `GET /v2/listeners/${id}`).length, { timeout: 10_000 })
        .toBeGreaterThanOrEqual(3);
      expect(proxy.requests.filter((r) => r.startsWith('PUT'))).toEqual([]);
    } finally {
      await subject.stop();
      await proxy.close();
    }
  });

  it('warns (log, Event, metric) of an operator edit that crossed its version record, and serves what is stored', async () => {
    const { id } = await client.createListener({
      compute_type: 'k8s',
      compute_id: 'reg-edit-race',
      compute_config: { k8s_namespaces: ['reg-a', 'reg-b'] },
      version: '0.0.1-previous',
    });
    const path = `/v2/listeners/${id}`;
    // The operator reads the listener once the agent's read is answered, before the agent's write,
    // and writes its edit (its read, other namespaces) once the agent's write is stored.
    const proxy = await startListenerEditProxy(emulator.url);
    let operatorRead: Listener | undefined;
    proxy.afterAnswer = async (request, nth) => {
      if (request === `GET ${path}` && !proxy.requests.includes(`PUT ${path}`))
        operatorRead = await client.getListener(id);
      if (request === `PUT ${path}` && nth === 1 && operatorRead)
        await client.putListener(id, {
          compute_type: operatorRead.compute_type,
          compute_id: operatorRead.compute_id,
          compute_config: { ...operatorRead.compute_config, k8s_namespaces: ['reg-b', 'reg-c'] },
          version: operatorRead.version ?? null,
        });
    };
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _encoding, done) {
          for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
          done();
        },
      }),
    );
    const metrics = createMetrics({ defaultMetrics: false });
    const subject = agent(id, API_KEY, ['reg-b', 'reg-c'], { baseUrl: proxy.url, metrics, logger });
    const kube = await KubeClient.fromKubeconfig(inject('kubeconfigPath'), {
      logger: pino({ level: 'silent' }),
    });
    try {
      await subject.start();
      expect(subject.namespaces).toEqual(['reg-b']);
      // The operator's edit stands, and the agent follows it: reg-c is served without a restart.
      await expect.poll(() => subject.namespaces, { timeout: 10_000 }).toEqual(['reg-b', 'reg-c']);
      expect((await client.getListener(id)).compute_config?.k8s_namespaces).toEqual(['reg-b', 'reg-c']);
      expect(proxy.requests.filter((r) => r === `PUT ${path}`)).toHaveLength(1);

      expect((await metrics.listenerEditConflicts.get()).values[0]?.value).toBe(1);
      expect(lines.filter((line) => line.level === 40 && line.listenerId === id)).toEqual([
        expect.objectContaining({
          namespacesRead: ['reg-a', 'reg-b'],
          namespacesStored: ['reg-b', 'reg-c'],
          versionKept: false,
        }),
      ]);
      const conflictEvents = async () =>
        (await kube.list('Event', { namespace: 'default' })).filter(
          (e) =>
            (e as { reason?: string }).reason === 'ListenerEditConflict' &&
            String((e as { note?: string }).note).startsWith(`listener ${id} changed`),
        );
      await expect.poll(conflictEvents, { timeout: 10_000 }).toHaveLength(1);
      const [event] = await conflictEvents();
      expect(event).toMatchObject({
        type: 'Warning',
        regarding: { kind: 'ConfigMap', namespace: 'default', name: SUSPENSIONS_CONFIGMAP },
      });
      expect(String((event as { note?: string }).note)).toContain(
        '[reg-a, reg-b] read before the write, [reg-b, reg-c] stored after it',
      );
    } finally {
      await subject.stop();
      await kube.close();
      await proxy.close();
    }
  });
});
