// A name the synced watch does not hold is not asked about: its object is applied create-only (a
// resourceVersion no object can have). On the real API server a missing object is created, with no
// GET, as any apply (managed fields: Apply, the agent's manager), while a same-named object made
// by someone else — which the label-filtered watch never sees — is never adopted or modified: the
// apply meets it as a 409, and the deployment is refused naming it.
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { kubectl } from '../../support/adminKube.ts';
import { app, useAgentWorld, waitForRevision } from '../../support/agentHarness.ts';

const setup = useAgentWorld();

// A first deployment converged: the agent leads, has read its digest key, and its watches have listed.
beforeAll(async () => {
  const warm = await setup.world.client.createDeployment(app(setup.world, 'warm', setup.ns));
  await waitForRevision(setup.world, warm, 'DEPLOYED');
});

async function getJson(args: readonly string[]): Promise<string> {
  return kubectl(inject('clusterBinDir'), setup.world.kubeconfigPath, [
    '-n',
    setup.ns,
    'get',
    ...args,
    '-o',
    'json',
    '--show-managed-fields',
  ]);
}

/** GETs the agent sent so far, by kind. */
function gets(kinds: readonly string[]): Record<string, number> {
  const kube = setup.agent.kube;
  if (!kube) throw new Error('agent has no Kubernetes client');
  return Object.fromEntries(kinds.map((kind) => [kind, kube.requestCounts({ kind }).get ?? 0]));
}

const KINDS = ['Deployment', 'Service', 'Secret', 'NetworkPolicy'];

describe('a name the synced watch does not hold', () => {
  it('is created by an apply alone: no GET, the agent’s Apply in managedFields', async () => {
    const before = gets(KINDS);
    const deployment = await setup.world.client.createDeployment(app(setup.world, 'fresh', setup.ns));
    await waitForRevision(setup.world, deployment, 'DEPLOYED');
    expect(gets(KINDS)).toEqual(before);
    const live = JSON.parse(await getJson(['deployment', 'fresh'])) as {
      metadata: { managedFields: { manager: string; operation: string }[] };
    };
    expect(live.metadata.managedFields).toContainEqual(
      expect.objectContaining({ manager: 'k8s-listener', operation: 'Apply' }),
    );
  });

  it('held by another owner is never adopted or modified: the deployment is refused naming it', async () => {
    await kubectl(inject('clusterBinDir'), setup.world.kubeconfigPath, [
      '-n',
      setup.ns,
      'create',
      'service',
      'clusterip',
      'taken',
      '--tcp=81:8081',
    ]);
    const foreign = await getJson(['service', 'taken']);
    const before = gets(KINDS);

    const deployment = await setup.world.client.createDeployment(app(setup.world, 'taken', setup.ns));
    await waitForRevision(setup.world, deployment, 'DEPLOY_FAILED');
    const log = setup.world.emulator
      .state()
      .deployments.find((d) => d.deployment.id === deployment.id)
      ?.deploy_logs.at(-1);
    expect(log?.message).toContain(`Service/${setup.ns}/taken exists and is not managed by this listener`);

    // A few reconciles later: the foreign Service byte-for-byte as it was, nothing of ours left.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await getJson(['service', 'taken'])).toBe(foreign);
    const ours = JSON.parse(
      await getJson([
        'deployments,services,secrets,configmaps,networkpolicies',
        '-l',
        `${LABEL_DEPLOYMENT_ID}=${deployment.id}`,
      ]),
    ) as { items: unknown[] };
    expect(ours.items).toEqual([]);
    // Met by its write, not by a read ahead: GETs of the Service alone, each after a 409.
    const { Service, ...others } = gets(KINDS);
    const { Service: serviceBefore = 0, ...othersBefore } = before;
    expect(others).toEqual(othersBefore);
    expect(Service).toBeGreaterThan(serviceBefore);
  });
});
