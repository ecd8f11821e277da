// Transport benchmark: the agent's HTTP/1.1 pool against HTTP/2 (client-go's transport: requests
// as streams of a shared connection), the same KubeClient on each, on a fresh local cluster. Each
// round sends N server-side applies of ConfigMaps (some 4 KiB, as the agent's objects) at the
// agent's concurrency, with no client rate limit, into a namespace of its own; the protocols
// alternate, three rounds each, so that a cluster warming up favours neither. Per protocol: the
// client's CPU and the API server's CPU a request, requests a second, and the TCP connections the
// client held (fewer on HTTP/2: it was negotiated). The agent stays on HTTP/1.1 unless HTTP/2 is
// cheaper on both sides.
// Run: npm run bench:transport [-- --requests 4000]
import { readdir, readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { KubeClient } from '../src/kube/kubeClient.ts';
import { ensureClusterBinaries, startLocalCluster } from '../test/cluster/localCluster.ts';
import { connectionsTo, cpuSeconds } from './procfs.ts';
import { loadAverage, machine, writeRecord } from './record.ts';
import { median } from './statistics.ts';

const ROUNDS = 3;
const CONCURRENCY = 4;
const PROTOCOLS = ['http/1.1', 'h2'] as const;
type Protocol = (typeof PROTOCOLS)[number];

const { values } = parseArgs({ options: { requests: { type: 'string', default: '4000' } } });
const requests = Number(values.requests);
if (!Number.isInteger(requests) || requests < 100) throw new Error('--requests takes a whole number ≥ 100');

interface Round {
  readonly protocol: Protocol;
  readonly clientCpuMsPerRequest: number;
  readonly apiServerCpuMsPerRequest: number;
  readonly requestsPerSecond: number;
  readonly connections: number;
}

/** The kube-apiserver process serving `runDir`'s cluster. */
async function apiServerPid(runDir: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const [command = '', ...args] = cmdline.split('\0');
    if (command.endsWith('kube-apiserver') && args.some((a) => a.includes(runDir))) return Number(entry);
  }
  throw new Error(`no kube-apiserver of ${runDir} found`);
}

async function round(
  kubeconfigPath: string,
  port: number,
  apiPid: number,
  protocol: Protocol,
  index: number,
) {
  const kube = await KubeClient.fromKubeconfig(kubeconfigPath, {
    logger: pino({ level: 'silent' }),
    http2: protocol === 'h2',
  });
  try {
    const namespace = `transport-${index}`;
    await kube.apply(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: {}, annotations: {} } },
      { force: true },
    );
    const payload = 'x'.repeat(4096);
    let next = 0;
    let connections = 0;
    const client = process.cpuUsage();
    const server = await cpuSeconds(apiPid);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests) {
          const i = next++;
          await kube.apply(
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: {
                name: `object-${i}`,
                namespace,
                labels: { 'app.kubernetes.io/name': 'bench' },
                annotations: {},
              },
              data: { payload, index: String(i) },
            },
            { force: true },
          );
          // Mid-round, every connection the protocol needs is open.
          if (i === requests / 2) connections = await connectionsTo(port);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(client);
    const result: Round = {
      protocol,
      clientCpuMsPerRequest: Number(((used.user + used.system) / 1000 / requests).toFixed(3)),
      apiServerCpuMsPerRequest: Number(
        ((((await cpuSeconds(apiPid)) - server) * 1000) / requests).toFixed(3),
      ),
      requestsPerSecond: Math.round(requests / seconds),
      connections,
    };
    console.log(JSON.stringify(result));
    return result;
  } finally {
    await kube.close();
  }
}

const startedAt = new Date();
const loadAtStart = loadAverage();
const cluster = await startLocalCluster({ binDir: await ensureClusterBinaries() });
const rounds: Round[] = [];
try {
  const port = Number(new URL(cluster.server).port);
  const apiPid = await apiServerPid(cluster.runDir);
  for (let r = 0; r < ROUNDS * PROTOCOLS.length; r++) {
    const protocol = PROTOCOLS[r % PROTOCOLS.length] ?? 'http/1.1';
    rounds.push(await round(cluster.kubeconfigPath, port, apiPid, protocol, r));
  }
} finally {
  await cluster.stop();
}

const medians = Object.fromEntries(
  PROTOCOLS.map((protocol) => {
    const of = rounds.filter((r) => r.protocol === protocol);
    const m = (pick: (r: Round) => number) => Number(median(of.map(pick)).toFixed(3));
    return [
      protocol,
      {
        clientCpuMsPerRequest: m((r) => r.clientCpuMsPerRequest),
        apiServerCpuMsPerRequest: m((r) => r.apiServerCpuMsPerRequest),
        requestsPerSecond: m((r) => r.requestsPerSecond),
        connections: m((r) => r.connections),
      },
    ];
  }),
);
const path = await writeRecord(startedAt, 'transport', {
  benchmark: 'transport',
  startedAt: startedAt.toISOString(),
  requestsPerRound: requests,
  concurrency: CONCURRENCY,
  rounds,
  medians,
  node: process.version,
  machine: machine(loadAtStart),
});
console.log(`medians ${JSON.stringify(medians)} — ${path}`);
// HTTP/2 negotiated (its streams share a connection or two), or the comparison compared nothing.
if (!((medians.h2?.connections ?? Number.POSITIVE_INFINITY) < (medians['http/1.1']?.connections ?? 0))) {
  console.error('HTTP/2 was not negotiated: its rounds held as many connections as HTTP/1.1');
  process.exitCode = 1;
}
