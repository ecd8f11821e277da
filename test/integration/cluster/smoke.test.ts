import { describe, expect, inject, it } from 'vitest';
import { adminKube, createNamespace, kubectl, uniqueNamespace } from '../../support/adminKube.ts';
import { eventually } from '../../support/eventually.ts';

const kubeconfigPath = inject('kubeconfigPath');
const binDir = inject('clusterBinDir');
const kube = adminKube(kubeconfigPath);

describe('test cluster', () => {
  it('is a real kube-apiserver at the pinned version', async () => {
    const version = await kube.config
      .makeApiClient((await import('@kubernetes/client-node')).VersionApi)
      .getCode();
    if (inject('clusterKind') === 'local') expect(version.gitVersion).toBe('v1.34.4');
    expect(Number(version.minor.replace(/\D/g, ''))).toBeGreaterThanOrEqual(27);
  });

  it('runs a Deployment and a StatefulSet with a volume claim to readiness, and garbage-collects their pods', async () => {
    const namespace = uniqueNamespace('smoke');
    await createNamespace(kube, namespace);
    const labels = { app: 'web' };
    const container = { name: 'web', image: 'nginx:1.27' };
    await kube.apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [container] } },
        },
      },
    });
    await kube.apps.createNamespacedStatefulSet({
      namespace,
      body: {
        metadata: { name: 'db' },
        spec: {
          replicas: 1,
          serviceName: 'db',
          selector: { matchLabels: { app: 'db' } },
          template: {
            metadata: { labels: { app: 'db' } },
            spec: {
              containers: [
                { name: 'db', image: 'postgres:17', volumeMounts: [{ name: 'data', mountPath: '/data' }] },
              ],
            },
          },
          volumeClaimTemplates: [
            {
              metadata: { name: 'data' },
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          ],
        },
      },
    });

    await eventually('Deployment web available', async () => {
      const deployment = await kube.apps.readNamespacedDeployment({ name: 'web', namespace });
      return deployment.status?.availableReplicas === 2 ? true : undefined;
    });
    await eventually('StatefulSet db ready', async () => {
      const statefulSet = await kube.apps.readNamespacedStatefulSet({ name: 'db', namespace });
      return statefulSet.status?.readyReplicas === 1 ? true : undefined;
    });
    const claim = await kube.core.readNamespacedPersistentVolumeClaim({ name: 'data-db-0', namespace });
    expect(claim.status?.phase).toBe('Bound');

    const listed = JSON.parse(
      await kubectl(binDir, kubeconfigPath, ['get', 'deploy,sts', '-n', namespace, '-o', 'json']),
    ) as {
      items: { kind: string; metadata: { name: string } }[];
    };
    expect(listed.items.map((item) => `${item.kind}/${item.metadata.name}`).sort()).toEqual([
      'Deployment/web',
      'StatefulSet/db',
    ]);

    const pods = await kube.core.listNamespacedPod({ namespace });
    expect(pods.items).toHaveLength(3);
    await kube.core.deleteNamespace({ name: namespace });
    await eventually(
      'namespace and its pods gone',
      async () => {
        try {
          await kube.core.readNamespace({ name: namespace });
          return undefined;
        } catch {
          const remaining = await kube.core.listNamespacedPod({ namespace });
          return remaining.items.length === 0 ? true : undefined;
        }
      },
      120_000,
    );
  });
});
