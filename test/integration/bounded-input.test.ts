// Issue 18, finding 6: what the control plane sends is untrusted input, its size included. A
// 300 MiB listing body and a listing that never ends each fail that poll with a typed error — the
// body refused past controlPlane.maxResponseBytes, the listing past controlPlane.maxPages — nothing
// is deleted, and the agent process (the real one) grows by no more than the cap allows.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../support/adminKube.ts';
import { app, FAST_RECONCILE, startWorld, type World, waitForRevision } from '../support/agentHarness.ts';
import { type AgentProcess, startAgentProcess } from '../support/agentProcess.ts';
import { type FaultyControlPlane, startFaultyControlPlane } from '../support/faultyControlPlane.ts';
import { buildBundle, IMAGE_ENV } from '../support/imageRuntime.ts';

let world: World;
let proxy: FaultyControlPlane;
let agent: AgentProcess;
let ns: string;

/** The agent process's peak resident memory (VmHWM), in MiB. */
async function peakRssMiB(): Promise<number> {
  const status = await readFile(`/proc/${agent.child.pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? Number.NaN) / 1024;
}

const workloads = async () =>
  (await world.kube.apps.listNamespacedDeployment({ namespace: ns })).items.map((d) => d.metadata?.name);

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  [ns = ''] = world.namespaces;
  proxy = await startFaultyControlPlane(world.emulator.url);
  const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-bounded-'));
  const configPath = join(dir, 'config.yaml');
  await writeFile(
    configPath,
    JSON.stringify({
      listenerId: world.listenerId,
      controlPlane: { baseUrl: proxy.url },
      kubeconfig: world.kubeconfigPath,
      agentNamespace: 'default',
      namespaces: world.namespaces,
      probes: { host: '127.0.0.1', port: 0 },
      log: { level: 'info', format: 'json' },
      reconcile: { ...FAST_RECONCILE, leaderElection: { leaseName: `lease-${ns}` } },
    }),
  );
  const kept = await world.client.createDeployment(app(world, 'kept', ns));
  // As the image runs it: the bundle, with the image's environment.
  agent = startAgentProcess(configPath, 'bounded-input', {
    main: await buildBundle(join(dir, 'dist')),
    env: IMAGE_ENV,
  });
  await waitForRevision(world, kept, 'DEPLOYED');
}, 120_000);
afterAll(async () => {
  agent?.child.kill('SIGTERM');
  await agent?.exited;
  await proxy?.close();
  await world?.close();
});

describe('a control plane that answers too much', () => {
  // Each refused body is held up to the cap (16 MiB) until the next collection; unbounded, one such
  // body took the agent from about 100 to 1,000 MiB.
  it('a 300 MiB listing body: refused past the cap, a typed error, nothing deleted, RSS under 150 MiB', async () => {
    const before = await peakRssMiB();
    proxy.fault = 'huge-body';
    await eventually(
      'the refusal logged',
      async () => (agent.output().includes('"code":"RESPONSE_TOO_LARGE"') ? true : undefined),
      60_000,
    );
    // Several polls of it: still refused each time, nothing deleted.
    const refusals = () => (agent.output().match(/"code":"RESPONSE_TOO_LARGE"/g) ?? []).length;
    await eventually('three refusals', async () => (refusals() >= 3 ? true : undefined), 60_000);
    expect(await workloads()).toEqual(['kept']);
    const peak = await peakRssMiB();
    console.log(
      `bounded input: agent peak RSS ${before.toFixed(1)} MiB before, ${peak.toFixed(1)} MiB after ${refusals()} refused 300 MiB bodies`,
    );
    expect(peak - before).toBeLessThan(5 * 16);
    expect(peak).toBeLessThan(150);
  });

  it('a listing that never ends: refused at the page cap, a typed error, nothing deleted', async () => {
    proxy.fault = 'endless-pages';
    await eventually(
      'the refusal logged',
      async () => (agent.output().includes('"code":"TOO_MANY_PAGES"') ? true : undefined),
      60_000,
    );
    expect(await workloads()).toEqual(['kept']);
    proxy.fault = 'none';
    // Answered normally again: the agent carries on (a change is applied).
    const kept = (await world.client.listAllDeployments({ name_contains: 'kept' })).items[0];
    const changed = await world.client.patchDeployment(kept?.id ?? '', {
      source_revision_config: { image_uri: 'nginx:1.28' },
    });
    await waitForRevision(world, changed, 'DEPLOYED');
  });
});
