// Every name a rendered pod can use to read an object of its namespace, one
// row per field, found with where it is — the list the reconciler checks against the cluster.
import { describe, expect, it } from 'vitest';
import { Deployment, type ResourceSpec } from '../../../src/controlplane/schemas/index.ts';
import type { KubeObject } from '../../../src/objects/kubeObject.ts';
import { renderDeployment } from '../../../src/render/index.ts';
import { podReferences } from '../../../src/render/references.ts';
import { config, minimalDeployment, withSpec } from '../../support/renderFixtures.ts';

function rendered(spec: ResourceSpec): KubeObject[] {
  const result = renderDeployment(
    withSpec({ min_scale: 1, max_scale: 1, ...spec }),
    config({ policy: { csiDrivers: ['secrets-store.csi.k8s.io'] } }),
  );
  if (!result.ok) throw result.error;
  return result.value.objects;
}

const mounted = (volume: NonNullable<ResourceSpec['volumes']>[number]): ResourceSpec => ({
  volumes: [volume],
  volume_mounts: [{ name: volume.name, mountPath: '/mnt' }],
});
const sidecar = (fields: Record<string, unknown>): ResourceSpec => ({
  sidecars: [{ name: 'side', image: 'busybox', ...fields }],
});

describe('podReferences', () => {
  it.each([
    [
      'an image pull secret',
      { image_pull_secrets: [{ name: 'x' }] },
      'Secret',
      'spec.imagePullSecrets[0].name',
    ],
    [
      'a secret volume',
      mounted({ name: 'v', secret: { secretName: 'x' } }),
      'Secret',
      'spec.volumes[0].secret.secretName',
    ],
    [
      'a configMap volume',
      mounted({ name: 'v', configMap: { name: 'x' } }),
      'ConfigMap',
      'spec.volumes[0].configMap.name',
    ],
    [
      'a claim',
      mounted({ name: 'v', persistentVolumeClaim: { claimName: 'x' } }),
      'PersistentVolumeClaim',
      'spec.volumes[0].persistentVolumeClaim.claimName',
    ],
    [
      'a projected Secret',
      mounted({
        name: 'v',
        projected: { sources: [{ downwardAPI: { items: [] } }, { secret: { name: 'x' } }] },
      }),
      'Secret',
      'spec.volumes[0].projected.sources[1].secret.name',
    ],
    [
      'a projected ConfigMap',
      mounted({ name: 'v', projected: { sources: [{ configMap: { name: 'x' } }] } }),
      'ConfigMap',
      'spec.volumes[0].projected.sources[0].configMap.name',
    ],
    [
      'a CSI volume’s node-publish Secret',
      mounted({
        name: 'v',
        csi: { driver: 'secrets-store.csi.k8s.io', nodePublishSecretRef: { name: 'x' } },
      }),
      'Secret',
      'spec.volumes[0].csi.nodePublishSecretRef.name',
    ],
    [
      'a variable from a Secret',
      sidecar({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'x', key: 'k' } } }] }),
      'Secret',
      'spec.containers[1](side).env[0].valueFrom.secretKeyRef.name',
    ],
    [
      'a variable from a ConfigMap',
      sidecar({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'x', key: 'k' } } }] }),
      'ConfigMap',
      'spec.containers[1](side).env[0].valueFrom.configMapKeyRef.name',
    ],
    [
      'envFrom a Secret',
      sidecar({ envFrom: [{ secretRef: { name: 'x' } }] }),
      'Secret',
      'spec.containers[1](side).envFrom[0].secretRef.name',
    ],
    [
      'envFrom a ConfigMap',
      sidecar({ envFrom: [{ configMapRef: { name: 'x' } }] }),
      'ConfigMap',
      'spec.containers[1](side).envFrom[0].configMapRef.name',
    ],
    [
      'an init container’s variable',
      { init_containers: [{ name: 'init', image: 'busybox', envFrom: [{ secretRef: { name: 'x' } }] }] },
      'Secret',
      'spec.initContainers[0](init).envFrom[0].secretRef.name',
    ],
  ] as const)('finds %s', (_, spec, kind, path) => {
    const found = podReferences(rendered(spec as ResourceSpec)).filter((r) => r.name === 'x');
    expect(found).toEqual([{ kind, namespace: 'apps', name: 'x', path: `Deployment/hello ${path}` }]);
  });

  it('finds a secret reference as the variable render makes of it', () => {
    const result = renderDeployment(
      withSpec({}, { secret_references: [{ name: 'TOKEN', secret_name: 'x', secret_key: 'k' }] }),
      config(),
    );
    if (!result.ok) throw result.error;
    expect(podReferences(result.value.objects).filter((r) => r.name === 'x')).toEqual([
      expect.objectContaining({
        kind: 'Secret',
        path: expect.stringContaining('.valueFrom.secretKeyRef.name'),
      }),
    ]);
  });

  // The other volume sources that name a Secret are not listed: none reaches a pod.
  it.each([
    ['azureFile', { secretName: 'x', shareName: 's' }],
    ['cephfs', { monitors: ['m'], secretRef: { name: 'x' } }],
    ['rbd', { monitors: ['m'], image: 'i', secretRef: { name: 'x' } }],
    ['iscsi', { targetPortal: 't', iqn: 'q', lun: 0, secretRef: { name: 'x' } }],
    ['flexVolume', { driver: 'd', secretRef: { name: 'x' } }],
    ['scaleIO', { gateway: 'g', system: 's', secretRef: { name: 'x' } }],
    ['storageos', { volumeName: 'v', secretRef: { name: 'x' } }],
  ])('a %s volume is refused by the deployment schema', (source, fields) => {
    const withVolume = (volume: Record<string, unknown>) => ({
      ...minimalDeployment,
      source_config: { ...minimalDeployment.source_config, resource_spec: { volumes: [volume] } },
    });
    expect(Deployment.safeParse(withVolume({ name: 'v', [source]: fields })).success).toBe(false);
    // The control: the same volume with a source the schema lists is read.
    expect(Deployment.safeParse(withVolume({ name: 'v', secret: { secretName: 'x' } })).success).toBe(true);
  });
});
