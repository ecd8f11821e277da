// `k8s-listener suspend`/`resume` against the real test cluster and a running agent: a suspended
// deployment keeps a hand edit, is shown SUSPENDED with who, when and why, is counted, told by an
// Event, stays suspended across an agent restart, and is pruned only after its resume when the
// control plane deleted it meanwhile; the whole listener likewise; an unknown deployment is refused.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { collectDeploymentDetail, collectStatusRows } from '../../../src/cli/statusObserver.ts';
import { runResumeCommand, runSuspendCommand } from '../../../src/cli/suspend.ts';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { KubeClient } from '../../../src/kube/kubeClient.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import {
  app,
  startAgent,
  startWorld,
  type World,
  waitForRevision,
  worldFlags,
} from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { textSink } from '../../support/textSink.ts';

let world: World;
let agent: Agent;
let ns: string;
let kube: KubeClient;

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  [ns = ''] = world.namespaces;
  agent = await startAgent(world, { allowedNamespaces: world.namespaces });
  kube = await KubeClient.fromKubeconfig(world.kubeconfigPath, { logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await agent?.stop();
  await kube?.close();
  await world?.close();
});

const flags = () => [...worldFlags(world, ns), '--timeout', '30'];

async function run(command: typeof runSuspendCommand, ...args: string[]) {
  const out = textSink();
  const err = textSink();
  const code = await command([...args, ...flags()], { stdout: out.stream, stderr: err.stream });
  return { code, stdout: out.text(), stderr: err.text() };
}

const deploymentRef = (name: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  namespace: ns,
  name,
});

/** A hand edit of a field the agent sets (replicas: 1), which it undoes whenever it may. */
async function editByHand(name: string, value: string): Promise<void> {
  await kube.mergePatch(deploymentRef(name), { spec: { replicas: Number(value) } });
}

async function replicasOf(name: string): Promise<unknown> {
  const live = await kube.get(deploymentRef(name));
  return (live as { spec?: { replicas?: unknown } } | undefined)?.spec?.replicas;
}

const sources = () => ({
  controlPlane: world.client,
  kube,
  listenerId: world.listenerId,
  allowedNamespaces: world.namespaces,
  agentNamespace: 'default',
});

async function deployed(name: string): Promise<Deployment> {
  const deployment = await world.client.createDeployment(app(world, name, ns));
  await waitForRevision(world, deployment, 'DEPLOYED');
  return deployment;
}

const suspendedGauge = async () =>
  (await agent.metrics.registry.getSingleMetric('k8s_listener_suspended_deployments')?.get())?.values[0]
    ?.value;

describe('suspend and resume a deployment', () => {
  let web: Deployment;
  let mainName: string;

  beforeAll(async () => {
    web = await deployed('suspended-web');
    mainName = (await collectDeploymentDetail(sources(), web.id)).objects.find((o) => o.kind === 'Deployment')
      ?.name as string;
  });

  it('refuses an unknown deployment, naming it', async () => {
    const result = await run(runSuspendCommand, 'no-such-deployment', '--reason', 'x');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no deployment named no-such-deployment is bound to listener');
  });

  it('keeps a hand edit while suspended, shows who and why, counts and tells it', async () => {
    const suspended = await run(runSuspendCommand, 'suspended-web', '--reason', 'incident 42: hand-tuning');
    expect(suspended.stderr).toBe('');
    expect(suspended.code).toBe(0);
    expect(suspended.stdout).toContain(`deployment suspended-web (${web.id}) suspended by `);
    expect(suspended.stdout).toContain('the agent acknowledged it');

    await editByHand(mainName, '3');
    // The agent would put it back within a second; give it several.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await replicasOf(mainName)).toBe(3);

    const row = (await collectStatusRows(sources())).find((r) => r.id === web.id);
    expect(row?.state).toBe('SUSPENDED');
    expect(row?.suspension?.reason).toBe('incident 42: hand-tuning');
    expect(row?.suspension?.by).not.toBe('');
    expect(row?.message).toContain('incident 42: hand-tuning');
    expect(await suspendedGauge()).toBe(1);
    const detail = await collectDeploymentDetail(sources(), web.id);
    expect(detail.events.some((e) => e.reason === 'Suspended' && e.message.includes('incident 42'))).toBe(
      true,
    );
  });

  it('stays suspended across a restart of the agent', async () => {
    await agent.stop();
    agent = await startAgent(world, { allowedNamespaces: world.namespaces });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await replicasOf(mainName)).toBe(3);
    await eventually('the gauge after a restart', async () =>
      (await suspendedGauge()) === 1 ? true : undefined,
    );
  });

  it('on resume puts the hand edit back', async () => {
    const resumed = await run(runResumeCommand, web.id);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('resumed');
    await eventually('the hand edit undone', async () =>
      (await replicasOf(mainName)) === 1 ? true : undefined,
    );
    const row = (await collectStatusRows(sources())).find((r) => r.id === web.id);
    expect(row?.state).not.toBe('SUSPENDED');
    expect(await suspendedGauge()).toBe(0);
    const again = await run(runResumeCommand, web.id);
    expect(again.stdout).toContain('is not suspended');
  });

  it('prunes a deployment deleted in the control plane only after its resume', async () => {
    const gone = await deployed('suspended-gone');
    const name = (await collectDeploymentDetail(sources(), gone.id)).objects.find(
      (o) => o.kind === 'Deployment',
    )?.name as string;
    expect((await run(runSuspendCommand, gone.id)).code).toBe(0);
    await world.client.deleteDeployment(gone.id);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await kube.get(deploymentRef(name))).toBeDefined();
    // Gone from the control plane: resumed by its id.
    expect((await run(runResumeCommand, gone.id)).code).toBe(0);
    await eventually('pruned after the resume', async () =>
      (await kube.get(deploymentRef(name))) === undefined ? true : undefined,
    );
  });
});

describe('suspend and resume the whole listener', () => {
  it('holds every deployment, then gives them back', async () => {
    const api = await deployed('listener-wide');
    const name = (await collectDeploymentDetail(sources(), api.id)).objects.find(
      (o) => o.kind === 'Deployment',
    )?.name as string;
    const suspended = await run(runSuspendCommand, '--all', '--reason', 'cluster upgrade');
    expect(suspended.code).toBe(0);
    expect(suspended.stdout).toContain(`listener ${world.listenerId} the whole listener suspended by`);
    await editByHand(name, '2');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await replicasOf(name)).toBe(2);
    const rows = await collectStatusRows(sources());
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.state === 'SUSPENDED' && r.suspension?.scope === 'listener')).toBe(true);
    // Told once for the listener, on the suspensions ConfigMap, not once per deployment.
    const told = (await kube.list('Event', { namespace: 'default' })).filter(
      (e) =>
        (e as { regarding?: { name?: string } }).regarding?.name === 'k8s-listener-suspensions' &&
        String((e as { note?: string }).note).startsWith(
          `listener ${world.listenerId}: the whole listener suspended`,
        ),
    );
    expect(told).toHaveLength(1);
    expect(
      (await agent.metrics.registry.getSingleMetric('k8s_listener_listener_suspended')?.get())?.values[0]
        ?.value,
    ).toBe(1);

    expect((await run(runResumeCommand, '--all')).code).toBe(0);
    await eventually('the hand edit undone', async () => ((await replicasOf(name)) === 1 ? true : undefined));
  });
});
