// The benchmark's fleet: N deployments over four namespaces, seeded into the control plane, and
// their rendered objects, which the floor and kubectl apply into namespaces of their own.
import type {
  Deployment,
  DeploymentCreate,
  Listener,
  Revision,
} from '../../src/controlplane/schemas/index.ts';
import type { RunningEmulator } from '../../src/emulator/server.ts';
import { ANNOTATION_CREATE_ONLY } from '../../src/objects/ownership.ts';
import { type KubeObject, RenderConfig, renderDeployment } from '../../src/render/index.ts';
import type { ControlPlaneTestClient } from '../../test/support/controlPlaneTestClient.ts';

export const NAMESPACES = ['bench-a', 'bench-b', 'bench-c', 'bench-d'];

export interface SeededDeployment {
  readonly deployment: Deployment;
  readonly revision: Revision | undefined;
}

export interface Fleet {
  readonly listener: Listener;
  readonly seeded: readonly SeededDeployment[];
  readonly renderConfig: RenderConfig;
  /** What the agent writes: every rendered object in the agent's namespaces. */
  readonly agentObjects: readonly KubeObject[];
  /** The objects the agent applies (a create-only Secret is created, not applied). */
  readonly expectedApplies: number;
}

/** Most with main + queue + secrets, a fifth with a database and a key-value store, some with sidecars and volumes. */
export function fleetDeployment(i: number, listenerId: string): DeploymentCreate {
  const withQueue = i % 10 < 8;
  const withData = i % 5 === 0;
  const withSidecar = i % 7 === 3;
  return {
    name: `bench-${i}`,
    source: 'external_container',
    source_config: {
      listener_id: listenerId,
      listener_config: { k8s_namespace: NAMESPACES[i % NAMESPACES.length] },
      deployment_type: 'dev',
      resource_spec: {
        min_scale: 1,
        max_scale: i % 3 === 0 ? 3 : 1,
        cpu: 0.1,
        memory_mb: 128,
        ...(withQueue ? { queue_min_scale: 1, queue_max_scale: 1, queue_cpu: 0.1, queue_memory_mb: 64 } : {}),
        ...(withData ? { db_cpu: 0.1, db_memory_mb: 256, db_storage_gi: 1, kvstore_memory_mb: 64 } : {}),
        ...(withSidecar
          ? {
              volumes: [{ name: 'cache', emptyDir: { sizeLimit: '256Mi' } }],
              volume_mounts: [{ name: 'cache', mountPath: '/var/cache/app' }],
              sidecars: [
                {
                  name: 'log-shipper',
                  image: 'busybox:1.36',
                  args: ['tail', '-F', '/var/cache/app/app.log'],
                  resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '32Mi' } },
                  volumeMounts: [{ name: 'cache', mountPath: '/var/cache/app', readOnly: true }],
                },
              ],
            }
          : {}),
      },
    },
    source_revision_config: { image_uri: `registry.example.test/bench/app:1.0.${i}` },
    secrets: [
      { name: 'API_TOKEN', value: `bench-secret-${i}` },
      { name: 'WEBHOOK_KEY', value: `bench-webhook-${i}` },
    ],
  };
}

/** A listener over NAMESPACES and `count` deployments for it, created in the emulator. */
export async function seedFleet(
  client: ControlPlaneTestClient,
  emulator: RunningEmulator,
  count: number,
): Promise<Fleet> {
  const listener = await client.createListener({
    compute_type: 'k8s',
    compute_id: 'bench',
    compute_config: { k8s_namespaces: NAMESPACES },
  });
  for (let i = 0; i < count; i++) await client.createDeployment(fleetDeployment(i, listener.id));
  const seeded = emulator
    .state()
    .deployments.map((d) => ({ deployment: d.deployment, revision: d.revisions.at(-1) }));
  const renderConfig = RenderConfig.parse({});
  const agentObjects = renderFleet(seeded, listener, (n) => n, renderConfig);
  const expectedApplies = agentObjects.filter(
    (o) => o.metadata.annotations?.[ANNOTATION_CREATE_ONLY] !== 'true',
  ).length;
  return { listener, seeded, renderConfig, agentObjects, expectedApplies };
}

/** The rendered objects of `deployments`, moved to other namespaces (the floor's and kubectl's). */
export function renderFleet(
  deployments: readonly SeededDeployment[],
  listener: Listener,
  namespaceOf: (original: string) => string,
  config: RenderConfig,
): KubeObject[] {
  const objects: KubeObject[] = [];
  const moved = {
    ...listener,
    compute_config: { ...listener.compute_config, k8s_namespaces: NAMESPACES.map(namespaceOf) },
  };
  for (const { deployment, revision } of deployments) {
    const copy = structuredClone(deployment);
    const original = copy.source_config.listener_config?.k8s_namespace ?? '';
    copy.source_config.listener_config = { k8s_namespace: namespaceOf(original) };
    const result = renderDeployment(
      { deployment: copy, revision, listener: moved, allowedNamespaces: undefined },
      config,
    );
    if (!result.ok) throw result.error;
    objects.push(...result.value.objects);
  }
  return objects;
}
