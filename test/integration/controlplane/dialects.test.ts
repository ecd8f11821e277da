// Both dialects of the control plane, one meaning: `external_docker` (the real control plane's,
// sent by its CLI) runs as `external_container` does, `dev_zero` runs as `dev` and says so; and a
// value the agent does not know (a newer control plane's source, deployment type, status, revision
// status) makes that deployment alone a typed problem — reported, shown by `status`, nothing written
// or deleted for it — while every other deployment of the same listing converges.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runStatusCommand } from '../../../src/cli/status.ts';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { DEV_ZERO_NOTE } from '../../../src/render/plan.ts';
import { StatusList } from '../../../src/report/deploymentStatusRow.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { type FaultyControlPlane, startFaultyControlPlane } from '../../support/faultyControlPlane.ts';

let world: World;
let proxy: FaultyControlPlane;
let agent: Agent;
let ns: string;

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  [ns = ''] = world.namespaces;
  proxy = await startFaultyControlPlane(world.emulator.url);
  agent = await startAgent(world, { baseUrl: proxy.url, allowedNamespaces: world.namespaces });
});
afterAll(async () => {
  await agent?.stop();
  await proxy?.close();
  await world?.close();
});

const deploymentNames = async () =>
  (await world.kube.apps.listNamespacedDeployment({ namespace: ns })).items
    .map((d) => d.metadata?.name)
    .sort();

const revisionOf = (deployment: Deployment, id = deployment.latest_revision_id) =>
  world.emulator
    .state()
    .deployments.find((d) => d.deployment.id === deployment.id)
    ?.revisions.find((r) => r.id === id);

const logsOf = (deployment: Deployment) =>
  world.emulator.state().deployments.find((d) => d.deployment.id === deployment.id)?.deploy_logs ?? [];

async function statusJson(): Promise<StatusList> {
  let out = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      out += String(chunk);
      done();
    },
  });
  const stderr = new Writable({ write: (_chunk, _encoding, done) => done() });
  await runStatusCommand(
    [
      '--output',
      'json',
      '--listener-id',
      world.listenerId,
      '--control-plane',
      proxy.url,
      '--kubeconfig',
      world.kubeconfigPath,
      '--namespaces',
      ns,
    ],
    { stdout, stderr },
  );
  return StatusList.parse(JSON.parse(out));
}

describe('a listing that mixes both dialects and values the agent does not know', () => {
  let docker: Deployment;
  let zero: Deployment;
  let future: Deployment;
  let futureRevision: Deployment;
  let known: Deployment;

  it('converges every valid deployment; each unknown value fails its deployment alone, nothing written for it', async () => {
    docker = await world.client.createDeployment({ ...app(world, 'docker', ns), source: 'external_docker' });
    zero = await world.client.createDeployment(
      app(world, 'zero', ns, {
        source_config: {
          listener_id: world.listenerId,
          listener_config: { k8s_namespace: ns },
          deployment_type: 'dev_zero',
          resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.1, memory_mb: 64 },
        },
      }),
    );
    future = await world.client.createDeployment(app(world, 'future', ns));
    futureRevision = await world.client.createDeployment(app(world, 'future-revision', ns));
    // A newer control plane: a source, a deployment type, a status and a revision status of its own.
    proxy.rewrite.set(future.id, (d) => {
      d.source = 'external_oci';
      (d.source_config as Record<string, unknown>).deployment_type = 'dev_turbo';
      d.status = 'PAUSED';
    });
    proxy.rewriteRevisions.set(futureRevision.id, (r) => {
      r.status = 'ROLLED_BACK';
    });

    await waitForRevision(world, docker, 'DEPLOYED');
    await waitForRevision(world, zero, 'DEPLOYED');
    await waitForRevision(world, future, 'DEPLOY_FAILED');
    await waitForRevision(world, futureRevision, 'DEPLOY_FAILED');
    expect(revisionOf(docker)?.source).toBe('external_docker');
    // Only the two valid ones have objects.
    expect(await deploymentNames()).toEqual(['docker', 'zero']);

    // The reasons reached the control plane (its deploy logs) and name the fields.
    const futureLog = logsOf(future).at(-1)?.message ?? '';
    expect(futureLog).toMatch(/^DEPLOY_FAILED: deployment \S+ is invalid: /);
    expect(futureLog).toContain('source:');
    expect(futureLog).toContain('source_config.deployment_type:');
    expect(futureLog).toContain('status:');
    expect(logsOf(futureRevision).at(-1)?.message).toMatch(/revision \S+ is invalid: status: /);
    // dev_zero runs as dev, and its message says so.
    expect(logsOf(zero).at(-1)?.message).toContain(DEV_ZERO_NOTE);
  });

  it('`status` shows them: the valid ones DEPLOYED (dev_zero with its note), the others DEPLOY_FAILED with the field', async () => {
    const rows = (await statusJson()).deployments;
    const byName = new Map(rows.map((r) => [r.name, r]));
    expect(byName.get('docker')?.state).toBe('DEPLOYED');
    expect(byName.get('zero')).toMatchObject({
      state: 'DEPLOYED',
      message: expect.stringContaining(DEV_ZERO_NOTE),
    });
    expect(byName.get('future')).toMatchObject({
      state: 'DEPLOY_FAILED',
      message: expect.stringContaining('source:'),
    });
    expect(byName.get('future-revision')).toMatchObject({
      state: 'DEPLOY_FAILED',
      message: expect.stringContaining('status:'),
    });
  });

  it('a running one that starts carrying an unknown value keeps its objects and its verdict; known again, it converges', async () => {
    known = docker;
    const deployedRevision = known.latest_revision_id;
    proxy.rewrite.set(known.id, (d) => {
      d.source = 'external_oci';
    });
    await eventually('the problem reported', async () =>
      logsOf(known).some((l) => l.level === 'ERROR' && l.message.includes('source:')) ? true : undefined,
    );
    // Several polls later: its objects are all there, and its revision is still DEPLOYED.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await deploymentNames()).toEqual(['docker', 'zero']);
    expect(revisionOf(known, deployedRevision)?.status).toBe('DEPLOYED');
    proxy.rewrite.delete(known.id);
    expect((await statusJson()).deployments.find((r) => r.name === 'docker')?.state).toBe('DEPLOYED');
  });

  it('one that never ran rolls out once it is readable: its failure was the reading, not the revision', async () => {
    expect(revisionOf(future)?.status).toBe('DEPLOY_FAILED');
    proxy.rewrite.delete(future.id);
    await waitForRevision(world, future, 'DEPLOYED');
    expect(await deploymentNames()).toEqual(['docker', 'future', 'zero']);
  });
});
