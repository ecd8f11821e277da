// Every container the agent renders has a memory and an ephemeral-storage limit, of every kind:
// main, queue, orchestrator, executor, sidecars, native sidecars, init containers, database and
// key-value store — from the deployment's own values or the configured defaults. A container
// without one can take a node's memory or disk from every other deployment on it.
import { describe, expect, it } from 'vitest';
import type { Container } from '../../../src/controlplane/schemas/index.ts';
import { type RenderConfigInput, renderDeployment } from '../../../src/render/index.ts';
import { podTemplateOf } from '../../../src/render/podSecurity.ts';
import { config, withSpec } from '../../support/renderFixtures.ts';

type Json = Record<string, unknown>;

/** A sidecar, a native sidecar and an init container that each give only a 1Mi memory request. */
const onlyARequest = (name: string, extra: Partial<Container> = {}): Container => ({
  name,
  image: 'busybox:1.36',
  resources: { requests: { memory: '1Mi' } },
  ...extra,
});

const everyKind = withSpec({
  queue_cpu: 0.5,
  orchestrator_cpu: 0.25,
  executor_cpu: 0.25,
  db_storage_gi: 1,
  kvstore_memory_mb: 64,
  sidecars: [onlyARequest('log'), { name: 'bare', image: 'busybox:1.36' }],
  init_containers: [
    onlyARequest('proxy', { restartPolicy: 'Always' }),
    onlyARequest('migrate'),
    { name: 'cpu-only', image: 'busybox:1.36', resources: { requests: { cpu: '10m' } } },
  ],
});

/** Each container of each pod template, `Kind/name container`, with its limits. */
function limitsOfEveryContainer(overrides: RenderConfigInput = {}): Map<string, Json | undefined> {
  const result = renderDeployment(everyKind, config(overrides));
  if (!result.ok) throw result.error;
  const found = new Map<string, Json | undefined>();
  for (const object of result.value.objects) {
    const template = podTemplateOf(object);
    if (!template) continue;
    for (const kind of ['initContainers', 'containers'] as const)
      for (const container of (template.spec[kind] ?? []) as Json[])
        found.set(
          `${object.kind}/${object.metadata.name} ${String(container.name)}`,
          (container.resources as Json | undefined)?.limits as Json | undefined,
        );
  }
  return found;
}

describe('container limits', () => {
  it('gives every container of every kind a memory and an ephemeral-storage limit', () => {
    const limits = limitsOfEveryContainer();
    // Four application workloads with the app and five containers of the deployment's each, the wait for the
    // stores in three (not the executors'), the database and the store.
    expect([...limits.keys()].filter((key) => key.startsWith('Deployment/hello ')).sort()).toEqual(
      ['app', 'bare', 'cpu-only', 'log', 'migrate', 'proxy', 'wait-for-stores'].map(
        (c) => `Deployment/hello ${c}`,
      ),
    );
    expect(limits.size).toBe(4 * 6 + 3 + 2);
    for (const [container, limit] of limits) {
      expect(limit?.memory, container).toBeDefined();
      expect(limit?.['ephemeral-storage'], container).toBeDefined();
    }
  });

  it('takes the request as the limit of a sidecar, native sidecar or init container given only a request', () => {
    const limits = limitsOfEveryContainer();
    for (const name of ['log', 'proxy', 'migrate'])
      expect(limits.get(`Deployment/hello ${name}`)).toEqual({
        memory: '1Mi',
        'ephemeral-storage': '1024Mi',
      });
    expect(limits.get('Deployment/hello cpu-only')).toEqual({
      memory: '64Mi',
      'ephemeral-storage': '1024Mi',
    });
  });

  it('follows the configured ephemeral-storage limit and request on every kind', () => {
    const result = renderDeployment(
      everyKind,
      config({ limits: { ephemeralStorageMb: 2048, ephemeralStorageRequestMb: 100 } }),
    );
    if (!result.ok) throw result.error;
    const resources = result.value.objects.flatMap((object) => {
      const template = podTemplateOf(object);
      if (!template) return [];
      return [
        ...((template.spec.initContainers ?? []) as Json[]),
        ...(template.spec.containers as Json[]),
      ].map((container) => container.resources as { requests?: Json; limits?: Json });
    });
    expect(resources).toHaveLength(4 * 6 + 3 + 2);
    for (const { requests, limits } of resources) {
      expect(limits?.['ephemeral-storage']).toBe('2048Mi');
      expect(requests?.['ephemeral-storage']).toBe('100Mi');
    }
  });

  it('refuses a configured ephemeral-storage request above its limit', () => {
    const parsed = config.bind(null, { limits: { ephemeralStorageMb: 64, ephemeralStorageRequestMb: 128 } });
    expect(parsed).toThrow('must not be above ephemeralStorageMb');
  });
});
