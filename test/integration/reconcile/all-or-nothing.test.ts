// docs/design.md, "All or nothing": a revision is applied whole or not at all. A new revision whose
// free-form content the API server refuses (an unknown field under strict validation), with a new
// image and new secret values besides, writes nothing: every object of the previous revision — its
// Secret, Service, Deployment and inventory — stays byte-for-byte as it was, and the revision is
// reported DEPLOY_FAILED with the API server's reason. A first revision that the API server refuses
// leaves nothing, and no pod of it ever runs: its first workload is not written before every other
// workload passed a dry run.
import * as k8s from '@kubernetes/client-node';
import { describe, expect, inject, it } from 'vitest';
import type { ResourceSpec } from '../../../src/controlplane/schemas/index.ts';
import { LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../../../src/objects/ownership.ts';
import { kubectl } from '../../support/adminKube.ts';
import { app, useAgentWorld, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

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

  it('a first apply of one workload is not dry-run: refused, what it wrote is deleted, its inventory too', async () => {
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
  it('a first revision whose queue Deployment is refused never runs a pod of its main one, and leaves nothing', async () => {
    // Replicas past int32: the main Deployment is rendered as the API server accepts it, not the queue's.
    const { message, workloads } = await refusedFirstRevision('twice', {
      queue_min_scale: 3_000_000_000,
      queue_max_scale: 3_000_000_000,
    });
    expect(message).toMatch(/Deployment\/\S+\/twice-queue apply failed: .*replicas/);
    expect(workloads).toEqual([]);
  });

  it('a first revision whose database StatefulSet is refused never runs a pod of its main Deployment, and leaves nothing', async () => {
    // The StatefulSet comes before the Deployment in render order; an admission policy refuses it.
    const name = `no-statefulsets-${setup.ns}`;
    const admission = setup.world.kube.config.makeApiClient(k8s.AdmissionregistrationV1Api);
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: ['apps'],
                apiVersions: ['v1'],
                operations: ['CREATE'],
                resources: ['statefulsets'],
              },
            ],
          },
          validations: [{ expression: 'false', message: 'no StatefulSets here (test policy)' }],
        },
      },
    });
    await admission.createValidatingAdmissionPolicyBinding({
      body: {
        metadata: { name },
        spec: {
          policyName: name,
          validationActions: ['Deny'],
          matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': setup.ns } } },
        },
      },
    });
    try {
      // In force once a dry-run create of a StatefulSet meets it.
      await eventually('the admission policy in force', async () => {
        const refused = await setup.world.kube.apps
          .createNamespacedStatefulSet({ namespace: setup.ns, dryRun: 'All', body: probeStatefulSet() })
          .then(
            () => false,
            (error: unknown) => String(error).includes('test policy'),
          );
        return refused ? true : undefined;
      });
      const { message, workloads } = await refusedFirstRevision('thrice', { db_storage_gi: 1 });
      expect(message).toMatch(
        /StatefulSet\/\S+\/thrice-db apply failed: .*no StatefulSets here \(test policy\)/,
      );
      expect(workloads).toEqual([]);
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name });
      await admission.deleteValidatingAdmissionPolicy({ name });
    }
  });
});

/**
 * Creates a deployment (a first revision the API server refuses in part) while watching the
 * namespace's workloads and pods; waits until it is reported DEPLOY_FAILED, checks that nothing
 * of it remains a few reconciles later, and returns the reason reported and every workload,
 * ReplicaSet or pod of it that ever appeared.
 */
async function refusedFirstRevision(
  name: string,
  spec: ResourceSpec,
): Promise<{ message: string; workloads: string[] }> {
  const seen = await watchWorkloads();
  try {
    const refused = await setup.world.client.createDeployment(
      app(setup.world, name, setup.ns, {
        source_config: {
          listener_id: setup.world.listenerId,
          listener_config: { k8s_namespace: setup.ns },
          deployment_type: 'dev',
          resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.1, memory_mb: 64, ...spec },
        },
      }),
    );
    await waitForRevision(setup.world, refused, 'DEPLOY_FAILED');
    const message =
      setup.world.emulator
        .state()
        .deployments.find((d) => d.deployment.id === refused.id)
        ?.deploy_logs.at(-1)?.message ?? '';
    // A few reconciles later (it is not retried), nothing of it is left.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect([...(await snapshot(`${LABEL_DEPLOYMENT_ID}=${refused.id}`)).keys()]).toEqual([]);
    return { message, workloads: seen.of(refused.id) };
  } finally {
    seen.stop();
  }
}

/** A StatefulSet to dry-run, for the admission policy's test. */
function probeStatefulSet(): k8s.V1StatefulSet {
  const labels = { app: 'probe' };
  return {
    metadata: { name: 'probe' },
    spec: {
      serviceName: 'probe',
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } },
    },
  };
}

/**
 * Watches the namespace's Deployments, StatefulSets, ReplicaSets and Pods from now on, and says
 * which of them carried a deployment's id label (`Kind/name`, each once).
 */
async function watchWorkloads(): Promise<{ of(deploymentId: string): string[]; stop(): void }> {
  const watch = new k8s.Watch(setup.world.kube.config);
  const seen = new Map<string, Set<string>>();
  const paths = [
    `/apis/apps/v1/namespaces/${setup.ns}/deployments`,
    `/apis/apps/v1/namespaces/${setup.ns}/statefulsets`,
    `/apis/apps/v1/namespaces/${setup.ns}/replicasets`,
    `/api/v1/namespaces/${setup.ns}/pods`,
  ];
  const failures: unknown[] = [];
  const controllers = await Promise.all(
    paths.map((path) =>
      watch.watch(
        path,
        {},
        (_phase, object: k8s.KubernetesObject) => {
          const id = object.metadata?.labels?.[LABEL_DEPLOYMENT_ID];
          if (!id) return;
          const names = seen.get(id) ?? new Set<string>();
          names.add(`${object.kind ?? path}/${object.metadata?.name ?? ''}`);
          seen.set(id, names);
        },
        (error: unknown) => {
          if (error && !(error instanceof Error && error.name === 'AbortError')) failures.push(error);
        },
      ),
    ),
  );
  return {
    of: (deploymentId) => {
      if (failures.length > 0) throw new Error('a watch failed', { cause: failures[0] });
      return [...(seen.get(deploymentId) ?? [])].sort();
    },
    stop: () => {
      for (const controller of controllers) controller.abort();
    },
  };
}
