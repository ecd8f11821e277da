// No input holds the event loop: every hostile shape of a deployment a tenant can send — a label
// key the old pattern matching backtracked on for seconds, 200,000 label keys, huge annotations,
// many env entries and volumes, long names — and a fast-check property over large inputs, each
// parsed as the poller parses it, then through render and through the Reconciler over the
// in-memory cluster. Neither holds the event loop 100 ms (perf_hooks' monitorEventLoopDelay,
// measured up to three times while over it, as other test files share the cores), and each
// refusal names the field and the cap and quotes at most ~100 characters of the input. (The
// 430 KB key held it 12.8 s before the matcher was linear: near the leader's 15 s Lease.)
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { safeParseResource } from '../../../src/controlplane/parse.ts';
import { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import { eventLoopHeldUnder } from '../../support/eventLoopDelay.ts';
import { memoryReconciler } from '../../support/memoryReconciler.ts';
import { listener, minimalDeployment } from '../../support/renderFixtures.ts';

const HELD_AT_MOST_MS = 100;
// A platform that widens the pod-metadata allow-lists to every key: each key then meets every
// deny pattern, the most work a key can cost, and the shapes within the caps render whole.
const config = RenderConfig.parse({
  policy: { podLabels: { allow: ['*'] }, podAnnotations: { allow: ['*'] } },
});

type Json = Record<string, unknown>;

/** The minimal deployment, as the control plane would send it, with these fields. */
function raw(spec: Json, top: Json = {}, sourceConfig: Json = {}): Json {
  const base = JSON.parse(JSON.stringify(minimalDeployment)) as Json;
  return {
    ...base,
    ...top,
    source_config: { ...(base.source_config as Json), ...sourceConfig, resource_spec: spec },
  };
}

const many = <T>(count: number, make: (i: number) => T): T[] =>
  Array.from({ length: count }, (_, i) => make(i));
const keyed = (count: number, key: (i: number) => string, value: string) =>
  Object.fromEntries(many(count, (i) => [key(i), value]));

/** The key the old matcher backtracked on: `*.cilium.io/*` became `^.*\.cilium\.io/.*$`. */
const backtrackingKey = (repeats: number) => `${'.cilium.io/'.repeat(repeats)}\n`;
const sidecar = (fields: Json = {}) => ({ name: 'side', image: 'busybox:1.36', ...fields });
/** 8 sidecars and 8 init containers with `count` env entries each. */
const containersWithEnv = (count: number): Json => {
  const env = many(count, (i) => ({ name: `V${i}`, value: 'v' }));
  return {
    sidecars: many(8, (s) => sidecar({ name: `side${s}`, env })),
    init_containers: many(8, (s) => sidecar({ name: `init${s}`, env })),
  };
};

/** Each shape: the raw deployment, and where it is refused (undefined: it renders). */
const SHAPES: [string, () => Json, { path: string; message: string } | undefined][] = [
  [
    'a 430 KB label key the deny patterns used to backtrack on',
    () => raw({ labels: { [backtrackingKey(40_000)]: 'v' } }),
    { path: 'source_config.resource_spec.labels.', message: 'is not a valid label key' },
  ],
  [
    'a 220 KB annotation key the deny patterns used to backtrack on',
    () => raw({ annotations: { [backtrackingKey(20_000)]: 'v' } }),
    { path: 'source_config.resource_spec.annotations.', message: 'is not a valid annotation key' },
  ],
  [
    '200,000 valid label keys (2.7 MB)',
    () => raw({ labels: keyed(200_000, (i) => `example.test/k${i}`, 'v') }),
    { path: 'source_config.resource_spec.labels', message: 'at most 64' },
  ],
  [
    '64 label keys of the longest valid length',
    () =>
      raw({
        labels: keyed(64, (i) => `${'a'.repeat(249)}.x${String(i).padStart(2, '0')}/${'b'.repeat(63)}`, 'v'),
      }),
    undefined,
  ],
  [
    'a 15 MiB annotation value',
    () => raw({ annotations: { 'example.test/note': 'x'.repeat(15 * 2 ** 20) } }),
    { path: 'source_config.resource_spec.annotations', message: '255 KiB' },
  ],
  [
    '128 annotations of 2 KiB each, just past 255 KiB together',
    () => raw({ annotations: keyed(128, (i) => `example.test/n${i}`, 'x'.repeat(2040)) }),
    { path: 'source_config.resource_spec.annotations', message: '255 KiB' },
  ],
  [
    '250 KiB of annotations, within the cap',
    () => raw({ annotations: keyed(125, (i) => `example.test/n${i}`, 'x'.repeat(2000)) }),
    undefined,
  ],
  [
    '100,000 env entries in a sidecar',
    () => raw({ sidecars: [sidecar({ env: many(100_000, (i) => ({ name: `V${i}`, value: 'v' })) })] }),
    { path: 'source_config.resource_spec.sidecars[0].env', message: 'at most 4,096' },
  ],
  [
    '4,096 environment variables: 2,048 secrets, 128 env entries in each of 8 sidecars and 8 init containers',
    () => raw(containersWithEnv(128), { secrets: many(2_048, (i) => ({ name: `S${i}`, value: 's' })) }),
    undefined,
  ],
  [
    '4,097 environment variables in a pod',
    () => raw(containersWithEnv(128), { secrets: many(2_049, (i) => ({ name: `S${i}`, value: 's' })) }),
    { path: 'secrets', message: 'a pod would hold 4,097 environment variables; at most 4,096' },
  ],
  [
    '10,000 volumes',
    () => raw({ volumes: many(10_000, (i) => ({ name: `v${i}`, emptyDir: {} })) }),
    { path: 'source_config.resource_spec.volumes', message: 'at most 64' },
  ],
  [
    '64 volumes, each mounted in the main container',
    () =>
      raw({
        volumes: many(64, (i) => ({ name: `v${i}`, emptyDir: {} })),
        volume_mounts: many(64, (i) => ({ name: `v${i}`, mountPath: `/mnt/v${i}` })),
      }),
    undefined,
  ],
  [
    '100,000 sidecars',
    () => raw({ sidecars: many(100_000, (i) => sidecar({ name: `s${i}` })) }),
    { path: 'source_config.resource_spec.sidecars', message: 'at most 8' },
  ],
  [
    '100,000 secrets',
    () => raw({}, { secrets: many(100_000, (i) => ({ name: `S${i}`, value: 'v' })) }),
    { path: 'secrets', message: 'at most 4,096' },
  ],
  [
    'a 2 MiB secret value',
    () => raw({}, { secrets: [{ name: 'BIG', value: 'x'.repeat(2 * 2 ** 20) }] }),
    { path: 'secrets', message: '1 MiB' },
  ],
  [
    'a 1 MiB deployment name',
    () => raw({}, { name: 'a'.repeat(2 ** 20) }),
    { path: 'name', message: 'at most 16,384' },
  ],
  [
    'a 200 KB sidecar name',
    () => raw({ sidecars: [sidecar({ name: 'a'.repeat(200_000) })] }),
    { path: 'source_config.resource_spec.sidecars[0].name', message: 'is not a valid container name' },
  ],
  [
    'a 1 MiB custom_url',
    () => raw({}, {}, { custom_url: `https://${'a'.repeat(2 ** 20)}` }),
    { path: 'source_config.custom_url', message: 'at most 2,048' },
  ],
  [
    'a 2 MiB volume source',
    () =>
      raw({
        volumes: [{ name: 'data', configMap: { name: 'x'.repeat(2 * 2 ** 20) } }],
        volume_mounts: [{ name: 'data', mountPath: '/data' }],
      }),
    { path: 'source_config.resource_spec', message: '1 MiB as JSON' },
  ],
];

/** What the poller makes of the raw deployment: the typed deployment, or the schema's refusal. */
function parsed(input: Json) {
  return safeParseResource(Deployment, input, 'deployment');
}

/** The refusal's paths and messages, of the schema or of render; undefined when it renders. */
async function renderHeld(input: Json) {
  const deployment = parsed(input);
  if (!deployment.ok) return { problems: deployment.error.issues, maxMs: 0 };
  const { value, maxMs } = await eventLoopHeldUnder(HELD_AT_MOST_MS, () =>
    renderDeployment(
      { deployment: deployment.value, revision: undefined, listener, allowedNamespaces: undefined },
      config,
    ),
  );
  return { problems: value.ok ? undefined : value.error.problems, maxMs };
}

describe('every hostile shape, through render', () => {
  it.each(SHAPES)('%s', async (_name, make, refused) => {
    const { problems, maxMs } = await renderHeld(make());
    expect(maxMs).toBeLessThan(HELD_AT_MOST_MS);
    if (!refused) {
      expect(problems).toBeUndefined();
      return;
    }
    expect(problems).toContainEqual({
      path: expect.stringContaining(refused.path),
      message: expect.stringContaining(refused.message),
    });
    // The refusal quotes at most ~100 characters of the input, in its path and its message.
    for (const problem of problems ?? []) {
      expect(problem.path.length).toBeLessThan(250);
      expect(problem.message.length).toBeLessThan(400);
    }
  });
});

describe('every hostile shape, through the reconciler', () => {
  it.each(SHAPES)('%s', async (_name, make, refused) => {
    const deployment = parsed(make());
    // Refused by the poller's parse: the reconciler never meets it (the poller reports it failed).
    if (!deployment.ok) {
      expect(refused).toBeDefined();
      return;
    }
    // A fresh reconciler each time: the first reconcile of a deployment is the one measured.
    let world = memoryReconciler(listener, ['apps'], config);
    const { value: outcome, maxMs } = await eventLoopHeldUnder(HELD_AT_MOST_MS, () => {
      world = memoryReconciler(listener, ['apps'], config);
      return world.reconcile(deployment.value);
    });
    expect(maxMs).toBeLessThan(HELD_AT_MOST_MS);
    const [report] = await world.reported();
    if (refused) {
      expect(outcome).toMatchObject({ result: 'terminal' });
      expect(report?.revision_status).toBe('DEPLOY_FAILED');
      expect(report?.message?.length).toBeLessThan(1_000);
    } else expect(outcome.result).toMatch(/^(done|requeue)$/);
  });
});

describe('large inputs of any shape (property)', () => {
  const sizes = fc.record({
    labels: fc.nat({ max: 5_000 }),
    keyLength: fc.nat({ max: 500_000 }),
    annotationLength: fc.nat({ max: 2 ** 21 }),
    env: fc.nat({ max: 6_000 }),
    volumes: fc.nat({ max: 100 }),
    sidecars: fc.nat({ max: 20 }),
    nameLength: fc.nat({ max: 100_000 }),
    secrets: fc.nat({ max: 6_000 }),
    secretLength: fc.nat({ max: 4_096 }),
  });

  function build(size: typeof sizes extends fc.Arbitrary<infer T> ? T : never): Json {
    return raw(
      {
        labels: {
          ...keyed(size.labels, (i) => `example.test/l${i}`, 'v'),
          [`${'policy.cilium.io/'.repeat(Math.ceil(size.keyLength / 17))}x`]: 'v',
        },
        annotations: { 'example.test/note': 'n'.repeat(size.annotationLength) },
        volumes: many(size.volumes, (i) => ({ name: `v${i}`, emptyDir: {} })),
        sidecars: many(size.sidecars, (s) =>
          sidecar({ name: `side${s}`, env: many(size.env, (i) => ({ name: `V${i}`, value: 'v' })) }),
        ),
      },
      {
        name: `n${'a'.repeat(size.nameLength)}`,
        secrets: many(size.secrets, (i) => ({ name: `S${i}`, value: 's'.repeat(size.secretLength) })),
      },
    );
  }

  it('no render and no reconcile holds the event loop more than 100 ms', async () => {
    await fc.assert(
      fc.asyncProperty(sizes, async (size) => {
        const input = build(size);
        const rendered = await renderHeld(input);
        expect(rendered.maxMs).toBeLessThan(HELD_AT_MOST_MS);
        const deployment = parsed(input);
        if (!deployment.ok) return;
        const { maxMs } = await eventLoopHeldUnder(HELD_AT_MOST_MS, () =>
          memoryReconciler(listener, ['apps'], config).reconcile(deployment.value),
        );
        expect(maxMs).toBeLessThan(HELD_AT_MOST_MS);
      }),
      { numRuns: 25, seed: 38 },
    );
  });
});
