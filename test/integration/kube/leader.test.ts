// LeaderElector against a real API server with short durations (lease 3 s, renew 2 s, retry
// 0.5 s): one leader at a time, takeover after expiry or at once after release, and a leader cut
// off from the API server steps down before anyone else can lead.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { KubeClient, LeaderElector } from '../../../src/kube/index.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { eventually } from '../../support/eventually.ts';
import { kubeConfigConnection } from '../../support/kubeConfigConnection.ts';
import { proxiedKubeConfig, type TcpProxy } from '../../support/tcpProxy.ts';

const kubeconfigPath = inject('kubeconfigPath');
const admin = adminKube(kubeconfigPath);
const logger = pino({ level: 'silent' });
const namespace = uniqueNamespace('kube-leader');
const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };

interface Candidate {
  readonly identity: string;
  readonly elector: LeaderElector;
  readonly log: { event: 'started' | 'stopped'; at: number }[];
  signal: AbortSignal | undefined;
  running: Promise<void>;
}

let direct: KubeClient;
let proxied: KubeClient;
let proxy: TcpProxy;
const candidates: Candidate[] = [];

function candidate(
  identity: string,
  lease: string,
  client: KubeClient = direct,
  log: pino.Logger = logger,
): Candidate {
  const elector = new LeaderElector({ client, logger: log, namespace, name: lease, identity, ...timing });
  const entry: Candidate = { identity, elector, log: [], signal: undefined, running: Promise.resolve() };
  entry.running = elector.run({
    onStartedLeading: (signal) => {
      entry.signal = signal;
      entry.log.push({ event: 'started', at: Date.now() });
    },
    onStoppedLeading: () => entry.log.push({ event: 'stopped', at: Date.now() }),
  });
  candidates.push(entry);
  return entry;
}

async function leaderOf(pair: readonly Candidate[]): Promise<Candidate> {
  return eventually('a leader', async () => pair.find((each) => each.elector.isLeader()), 15_000, 50);
}

function started(entry: Candidate): number | undefined {
  return entry.log.find((item) => item.event === 'started')?.at;
}

beforeAll(async () => {
  await createNamespace(admin, namespace);
  direct = await KubeClient.fromKubeconfig(kubeconfigPath, { logger, requestTimeoutMs: 5_000 });
  const through = await proxiedKubeConfig(kubeconfigPath);
  proxy = through.proxy;
  proxied = await KubeClient.fromConnection(await kubeConfigConnection(through.config), {
    logger,
    requestTimeoutMs: 1_000,
  });
});

afterEach(async () => {
  for (const entry of candidates.splice(0)) {
    await entry.elector.stop();
    await entry.running;
  }
  proxy.refuse(false);
});

afterAll(async () => {
  await direct?.close();
  await proxied?.close();
  await proxy?.close();
  await admin.core.deleteNamespace({ name: namespace }).catch(() => {});
});

describe('LeaderElector', () => {
  it('elects exactly one leader and writes a well-formed Lease', async () => {
    const lease = `lease-${randomBytes(3).toString('hex')}`;
    const pair = [candidate('alpha', lease), candidate('beta', lease)];
    const leader = await leaderOf(pair);
    const follower = pair.find((each) => each !== leader);

    // For a few renew periods, never two leaders and never a change of leader.
    for (let i = 0; i < 30; i++) {
      expect(pair.filter((each) => each.elector.isLeader())).toEqual([leader]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(follower?.log).toEqual([]);

    const live = await direct.get({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace,
      name: lease,
    });
    const spec = live?.spec as Record<string, unknown>;
    expect(spec.holderIdentity).toBe(leader.identity);
    expect(spec.leaseDurationSeconds).toBe(3);
    expect(spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(spec.acquireTime).toMatch(/\.\d{6}Z$/);
    // Renewed since acquisition.
    expect(Date.parse(String(spec.renewTime))).toBeGreaterThan(Date.parse(String(spec.acquireTime)));
  });

  it('hands over within the lease duration when the leader stops without releasing', async () => {
    const lease = `lease-${randomBytes(3).toString('hex')}`;
    const pair = [candidate('alpha', lease), candidate('beta', lease)];
    const leader = await leaderOf(pair);
    const follower = pair.find((each) => each !== leader) as Candidate;

    const stoppedAt = Date.now();
    await leader.elector.stop();
    expect(leader.signal?.aborted).toBe(true);
    await eventually(
      'follower leads',
      async () => (follower.elector.isLeader() ? true : undefined),
      15_000,
      20,
    );
    const takeover = (started(follower) ?? 0) - stoppedAt;
    // Not before the lease could have expired. At the latest: the follower sees the last renewal
    // up to one jittered retry (≤ 1.1 s) late, waits the 3 s lease, then up to one more retry.
    expect(takeover).toBeGreaterThan(3_000 - 2 * 500);
    expect(takeover).toBeLessThan(3_000 + 2 * 1_100 + 800);
    const live = await direct.get({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace,
      name: lease,
    });
    expect(live?.spec).toMatchObject({ holderIdentity: follower.identity, leaseTransitions: 1 });
  });

  it('hands over at once after release()', async () => {
    const lease = `lease-${randomBytes(3).toString('hex')}`;
    const pair = [candidate('alpha', lease), candidate('beta', lease)];
    const leader = await leaderOf(pair);
    const follower = pair.find((each) => each !== leader) as Candidate;

    const releasedAt = Date.now();
    await leader.elector.release();
    await leader.running;
    expect(leader.elector.isLeader()).toBe(false);
    expect(leader.log.map((item) => item.event)).toEqual(['started', 'stopped']);
    await eventually(
      'follower leads',
      async () => (follower.elector.isLeader() ? true : undefined),
      15_000,
      20,
    );
    // One jittered retry period (≤ 1.1 s) plus request time; far below the 3 s lease.
    expect((started(follower) ?? 0) - releasedAt).toBeLessThan(1_800);
  });

  it('steps down when it cannot renew, before anyone else can lead', async () => {
    const lease = `lease-${randomBytes(3).toString('hex')}`;
    // The first candidate alone, reaching the API server through the proxy.
    const cutOff = candidate('cut-off', lease, proxied);
    await leaderOf([cutOff]);
    const rival = candidate('rival', lease);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(rival.elector.isLeader()).toBe(false);

    const cutAt = Date.now();
    proxy.refuse(true);
    await eventually(
      'cut-off leader steps down',
      async () => (cutOff.signal?.aborted ? true : undefined),
      10_000,
      20,
    );
    const stoppedAt = cutOff.log.find((item) => item.event === 'stopped')?.at ?? 0;
    // Within the renew deadline (2 s) of its last renewal, which was at most a retry period before the cut.
    expect(stoppedAt - cutAt).toBeLessThan(2_000 + 600);
    await cutOff.running;

    await eventually('rival leads', async () => (rival.elector.isLeader() ? true : undefined), 15_000, 20);
    // Never two writers: the rival started only after the old leader had stopped.
    expect(started(rival)).toBeGreaterThan(stoppedAt);
  });

  it('steps down after its own process stalls, and says the process stalled', async () => {
    const lines: {
      msg?: string;
      timerLateMs?: number;
      sinceRenewalMs?: number;
      lastRenewalTookMs?: number;
    }[] = [];
    const recording = pino(
      { level: 'error' },
      { write: (line: string) => void lines.push(JSON.parse(line)) },
    );
    const stalled = candidate('stalled', `lease-${randomBytes(3).toString('hex')}`, direct, recording);
    await leaderOf([stalled]);
    // A long synchronous pause (as a full GC on a starved CPU is): no timer fires meanwhile.
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      // busy: the event loop is blocked
    }
    await eventually(
      'stalled leader steps down',
      async () => (stalled.signal?.aborted ? true : undefined),
      5_000,
      20,
    );
    const failed = lines.find((line) => line.msg === 'failed to renew the lease in time');
    // Past the renew deadline (2 s), and the 3 s stall shows: as a retry timer fired late or, when
    // the stall caught a renewal in flight (a few ms of every 500), as that renewal's length.
    expect(failed?.sinceRenewalMs).toBeGreaterThan(2_000);
    expect((failed?.timerLateMs ?? 0) + (failed?.lastRenewalTookMs ?? 0)).toBeGreaterThan(2_000);
  });
});
