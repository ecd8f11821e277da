// Every container the agent renders has a memory and an ephemeral-storage limit, of every kind:
// main, queue, orchestrator, executor, sidecars, native sidecars, init containers, database and
// key-value store — from the deployment's own values or the configured defaults. A container
// without one can take a node's memory or disk from every other deployment on it.
import { describe, expect, it } from 'vitest';
import type { Container } from '../../../src/controlplane/schemas/index.ts';
import { type RenderConfigInput, renderDeployment } from '../../../src/render/index.ts';
import { podTemplateOf } from '../../../src/render/podSecurity.ts';
import { quantityValue } from '../../../src/render/quantities.ts';
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

describe('limits are positive and bounded', () => {
  const SPEC = 'source_config.resource_spec';
  const refusal = (spec: Parameters<typeof withSpec>[0], overrides: RenderConfigInput = {}) => {
    const result = renderDeployment(withSpec(spec), config(overrides));
    return result.ok ? [] : result.error.problems;
  };
  const containerWith = (kind: 'requests' | 'limits', resource: string, value: unknown): Container => ({
    name: 'side',
    image: 'busybox:1.36',
    resources: { [kind]: { [resource]: value } },
  });

  describe.each([
    ['sidecars', {}],
    ['init_containers', {}],
    ['init_containers', { restartPolicy: 'Always' }],
  ] as const)('%s %j', (group, extra) => {
    it.each<readonly ['limits' | 'requests', string, unknown]>([
      ...[null, '0', 0, '-1Mi', '1Ei', '65537Mi', 'lots', '1e300', '0.0'].flatMap((value) =>
        (['limits', 'requests'] as const).map((kind) => [kind, 'memory', value] as const),
      ),
      ...[null, '0', '-5Gi', '1Ei', '101Gi', '1Pi'].flatMap((value) =>
        (['limits', 'requests'] as const).map((kind) => [kind, 'ephemeral-storage', value] as const),
      ),
      ['limits', 'cpu', null],
      ['requests', 'cpu', '-1'],
    ])('refuses %s.%s %j, naming the field', (kind, resource, value) => {
      const container = { ...containerWith(kind, resource, value), ...extra };
      expect(refusal({ [group]: [container] })).toEqual([
        {
          path: `${SPEC}.${group}[0].resources.${kind}.${resource}`,
          message: expect.stringMatching(/^must (be a|not be negative)/),
        },
      ]);
    });

    it.each([
      ['limits', 'memory', '64Gi'],
      ['requests', 'memory', 268435456],
      ['limits', 'ephemeral-storage', '100Gi'],
      ['requests', 'ephemeral-storage', '1.5G'],
      ['requests', 'cpu', '0'],
    ] as const)('takes %s.%s %j', (kind, resource, value) => {
      expect(refusal({ [group]: [{ ...containerWith(kind, resource, value), ...extra }] })).toEqual([]);
    });
  });

  it('follows the configured maxima', () => {
    const big = containerWith('limits', 'memory', '2Gi');
    expect(refusal({ sidecars: [big] }, { limits: { maxMemoryMb: 1024 } })).toEqual([
      {
        path: `${SPEC}.sidecars[0].resources.limits.memory`,
        message: 'must be a positive quantity of at most 1024Mi (render.limits.maxMemoryMb); got "2Gi"',
      },
    ]);
    expect(refusal({ sidecars: [big] }, { limits: { maxMemoryMb: 2048 } })).toEqual([]);
  });

  it.each([
    'memory_mb',
    'memory_limit_mb',
    'queue_memory_mb',
    'orchestrator_memory_limit_mb',
    'executor_memory_mb',
    'db_memory_mb',
    'kvstore_memory_limit_mb',
  ] as const)('refuses %s above render.limits.maxMemoryMb', (field) => {
    const memory = field.endsWith('limit_mb') ? { [field.replace('_limit', '')]: 1024 } : {};
    expect(refusal({ ...memory, [field]: 64 * 1024 + 1 })).toContainEqual({
      path: `${SPEC}.${field}`,
      message: 'must be at most 65536 MiB (render.limits.maxMemoryMb); got 65537',
    });
    expect(refusal({ ...memory, [field]: 64 * 1024 })).toEqual([]);
  });

  it('refuses a configuration whose own defaults are above its maxima', () => {
    expect(() => config({ limits: { maxMemoryMb: 512 } })).toThrow(
      'must not be above limits.maxMemoryMb (512)',
    );
    expect(() => config({ limits: { maxEphemeralStorageMb: 512 } })).toThrow(
      'must not be above maxEphemeralStorageMb',
    );
  });
});

describe('quantityValue', () => {
  it.each<[unknown, number | undefined]>([
    ['512Mi', 512 * 2 ** 20],
    ['1.5G', 1.5e9],
    ['1e3', 1000],
    ['250m', 0.25],
    ['.5Ki', 512],
    [1024, 1024],
    ['-1Mi', -(2 ** 20)],
    [null, undefined],
    ['', undefined],
    ['1 Gi', undefined],
    ['1GB', undefined],
    [`${'9'.repeat(100)}`, undefined],
  ])('%j is %s', (quantity, value) => {
    expect(quantityValue(quantity)).toBe(value);
  });
});
