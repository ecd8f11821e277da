// Poll benchmark: one complete listing of 1,000 remotely reconciled deployments through the
// typed client from the emulator over loopback (10 pages of 100, plus the empty last page).
// Target: median under 250 ms per complete listing, so a 10 s poll interval leaves ample room.
// Run: npm run bench
import pino from 'pino';
import { startEmulator } from '../src/emulator/server.ts';
import { AGENT_VERSION } from '../src/version.ts';
import { ControlPlaneTestClient } from '../test/support/controlPlaneTestClient.ts';
import { loadAverage, machine, writeRecord } from './record.ts';
import { median } from './statistics.ts';

const COUNT = 1_000;
const startedAt = new Date();
const loadAtStart = loadAverage();
const emulator = await startEmulator({});
const client = new ControlPlaneTestClient({ baseUrl: emulator.url, logger: pino({ level: 'silent' }) });
const listener = await client.createListener({
  compute_type: 'k8s',
  compute_id: 'bench',
  compute_config: { k8s_namespaces: ['apps'] },
});
for (let i = 0; i < COUNT; i++) {
  await client.createDeployment({
    name: `bench-${i}`,
    source: 'external_container',
    source_config: {
      listener_id: listener.id,
      listener_config: { k8s_namespace: 'apps' },
      resource_spec: { min_scale: 1, cpu: 0.5, memory_mb: 512 },
    },
    source_revision_config: { image_uri: `registry.example.test/bench:${i}` },
    secrets: [{ name: 'TOKEN', value: 'x'.repeat(64) }],
  });
}
const times: number[] = [];
for (let run = 0; run < 15; run++) {
  const started = performance.now();
  const listing = await client.listAllDeployments({ remote_reconciled: true });
  times.push(performance.now() - started);
  if (listing.items.length !== COUNT) throw new Error(`listed ${listing.items.length} of ${COUNT}`);
}
await client.close();
await emulator.close();
const report = {
  deployments: COUNT,
  medianMs: Number(median(times).toFixed(1)),
  maxMs: Number(Math.max(...times).toFixed(1)),
};
console.log(JSON.stringify(report));
await writeRecord(startedAt, 'poll', {
  benchmark: 'poll',
  startedAt: startedAt.toISOString(),
  ...report,
  machine: machine(loadAtStart),
  versions: { agent: AGENT_VERSION, node: process.version },
});
if (report.medianMs >= 250) {
  console.error(`poll benchmark over target: median ${report.medianMs} ms ≥ 250 ms`);
  process.exit(1);
}
