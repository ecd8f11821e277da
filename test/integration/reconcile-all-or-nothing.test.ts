// DESIGN.md safety rule 7 (issue 18): a revision is applied all or nothing. A new revision whose
// free-form content the API server refuses (an unknown field under strict validation), with a new
// image and new secret values besides, writes nothing: every object of the previous revision — its
// Secret, Service, Deployment and inventory — stays byte-for-byte as it was, and the revision is
// reported DEPLOY_FAILED with the API server's reason.
import { describe, expect, inject, it } from 'vitest';
import { LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../../src/objects/ownership.ts';
import { kubectl } from '../support/adminKube.ts';
import { app, useAgentWorld, waitForRevision } from '../support/agentHarness.ts';

const setup = useAgentWorld();

/** Every object of this listener in the namespace, as the API server holds it, by kind/name. */
async function snapshot(
  selector = `${LABEL_LISTENER_ID}=${setup.world.listenerId}`,
): Promise<Map<string, string>> {
  const text = await kubectl(inject('clusterBinDir'), setup.world.kubeconfigPath, [
    '-n',
    setup.ns,
    'get',
    'deployments,services,secrets,configmaps,networkpolicies',
    '-l',
    selector,
    '-o',
    'json',
  ]);
  const items = (JSON.parse(text) as { items: { kind: string; metadata: { name: string } }[] }).items;
  return new Map(items.map((item) => [`${item.kind}/${item.metadata.name}`, JSON.stringify(item)]));
}

describe('a revision the API server refuses', () => {
  it('writes nothing: the previous revision’s objects stay byte-for-byte, and the reason is reported', async () => {
    const deployment = await setup.world.client.createDeployment(app(setup.world, 'whole', setup.ns));
    await waitForRevision(setup.world, deployment, 'DEPLOYED');
    const before = await snapshot();
    expect([...before.keys()].sort()).toEqual([
      `ConfigMap/k8s-listener-inv-${deployment.id}`,
      'Deployment/whole',
      'NetworkPolicy/whole',
      'Secret/whole-secrets',
      'Service/whole',
    ]);

    // New secret values and a new image (the Secret comes first in render order), and a volume
    // whose free-form source the API server refuses under strict field validation.
    const refused = await setup.world.client.patchDeployment(deployment.id, {
      secrets: [{ name: 'API_TOKEN', value: 'a-new-value' }],
      source_revision_config: { image_uri: 'nginx:1.28' },
      source_config: {
        resource_spec: {
          min_scale: 1,
          max_scale: 1,
          cpu: 0.1,
          memory_mb: 64,
          volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Gi', notAField: true } }],
          volume_mounts: [{ name: 'scratch', mountPath: '/scratch' }],
        },
      },
    });
    await waitForRevision(setup.world, refused, 'DEPLOY_FAILED');
    const log = setup.world.emulator
      .state()
      .deployments.find((d) => d.deployment.id === deployment.id)
      ?.deploy_logs.at(-1);
    expect(log?.message).toMatch(/notAField/);

    // A few reconciles later, still nothing written.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await snapshot()).toEqual(before);
  });

  it('a first apply is not dry-run: refused, what it wrote is deleted, its inventory too', async () => {
    const kube = setup.agent.kube;
    if (!kube) throw new Error('agent has no Kubernetes client');
    const dryRuns = () => kube.requestCounts({ kind: 'Deployment' })['patch:dryRun'] ?? 0;
    const before = dryRuns();
    // Its Secret and Service come before the Deployment the API server refuses.
    const refused = await setup.world.client.createDeployment(
      app(setup.world, 'first', setup.ns, {
        source_config: {
          listener_id: setup.world.listenerId,
          listener_config: { k8s_namespace: setup.ns },
          deployment_type: 'dev',
          resource_spec: {
            min_scale: 1,
            max_scale: 1,
            cpu: 0.1,
            memory_mb: 64,
            volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Gi', notAField: true } }],
            volume_mounts: [{ name: 'scratch', mountPath: '/scratch' }],
          },
        },
      }),
    );
    await waitForRevision(setup.world, refused, 'DEPLOY_FAILED');
    const log = setup.world.emulator
      .state()
      .deployments.find((d) => d.deployment.id === refused.id)
      ?.deploy_logs.at(-1);
    expect(log?.message).toMatch(/notAField/);
    expect(dryRuns()).toBe(before);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect([...(await snapshot(`${LABEL_DEPLOYMENT_ID}=${refused.id}`)).keys()]).toEqual([]);
  });
});
