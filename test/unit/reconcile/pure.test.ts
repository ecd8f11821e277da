import { describe, expect, it } from 'vitest';
import type { Deployment, Revision } from '../../../src/controlplane/schemas/index.ts';
import { driftPath } from '../../../src/reconcile/drift.ts';
import { entryId, sameInventory, staleEntries } from '../../../src/reconcile/inventory.ts';
import { decideVanished } from '../../../src/reconcile/pruneGuard.ts';
import { chooseTarget } from '../../../src/reconcile/target.ts';
import { minimalDeployment } from '../../support/renderFixtures.ts';

describe('drift', () => {
  const desired = {
    spec: {
      replicas: 2,
      template: {
        containers: [
          { name: 'app', image: 'a:1', resources: { requests: { memory: '1024Mi', cpu: '500m' } } },
        ],
      },
    },
  };

  it('ignores fields the agent does not set and compares quantities by value', () => {
    const live = {
      status: {},
      spec: {
        replicas: 2,
        paused: false,
        template: {
          containers: [
            {
              name: 'app',
              image: 'a:1',
              resources: { requests: { memory: '1Gi', cpu: '0.5' } },
              terminationMessagePath: '/x',
            },
          ],
        },
      },
    };
    expect(driftPath(desired, live)).toBeUndefined();
  });

  it.each([
    [
      'an edited image',
      {
        spec: {
          replicas: 2,
          template: {
            containers: [
              { name: 'app', image: 'a:2', resources: { requests: { memory: '1Gi', cpu: '500m' } } },
            ],
          },
        },
      },
      'spec.template.containers[0].image',
    ],
    [
      'a changed quantity',
      {
        spec: {
          replicas: 2,
          template: {
            containers: [
              { name: 'app', image: 'a:1', resources: { requests: { memory: '2Gi', cpu: '500m' } } },
            ],
          },
        },
      },
      'spec.template.containers[0].resources.requests.memory',
    ],
    ['a scaled replica count', { spec: { replicas: 5, template: desired.spec.template } }, 'spec.replicas'],
    [
      'an added container',
      {
        spec: { replicas: 2, template: { containers: [...desired.spec.template.containers, { name: 'x' }] } },
      },
      'spec.template.containers',
    ],
  ])('finds %s', (_name, live, path) => {
    expect(driftPath(desired, live)).toBe(path);
  });

  /** An object holding `value` at a path such as `spec.containers[0].env[0].value`. */
  const objectAt = (path: string, value: string): Record<string, unknown> => {
    const keys = path.replace(/\[(\d+)\]/g, '.$1').split('.');
    const root: Record<string, unknown> = {};
    let node: Record<string, unknown> = root;
    keys.forEach((key, i) => {
      const last = i === keys.length - 1;
      const next: unknown = last ? value : /^\d+$/.test(keys[i + 1] ?? '') ? [] : {};
      node[key] = next;
      if (!last) node = next as Record<string, unknown>;
    });
    return root;
  };

  it.each([
    ['spec.template.spec.containers[0].env[0].value', '1k', '1000'],
    ['spec.template.spec.containers[0].env[0].value', '1Gi', '1024Mi'],
    ['metadata.annotations.size', '0.5', '500m'],
  ])(
    'treats quantity-looking text outside quantity fields as text: %s %s → %s is drift',
    (path, was, now) => {
      expect(driftPath(objectAt(path, was), objectAt(path, now))).toBe(path);
    },
  );

  it.each([
    ['spec.template.spec.containers[0].resources.limits.memory', '1Gi', '1024Mi'],
    ['spec.volumeClaimTemplates[0].spec.resources.requests.storage', '1Gi', '1024Mi'],
    ['spec.template.spec.initContainers[0].resources.requests.cpu', '0.5', '500m'],
  ])('compares quantity fields by value: %s %s = %s', (path, was, now) => {
    expect(driftPath(objectAt(path, was), objectAt(path, now))).toBeUndefined();
  });

  it('accepts an int-or-string in its other form', () => {
    expect(driftPath({ port: 8000 }, { port: '8000' })).toBeUndefined();
    expect(driftPath({ port: 'http' }, { port: 'https' })).toBe('port');
  });
});

describe('inventory', () => {
  const entry = (name: string, kind = 'Deployment', apiVersion = 'apps/v1') => ({
    apiVersion,
    kind,
    namespace: 'ns',
    name,
  });

  it('diffs by namespace, name, group and kind, not by version', () => {
    expect(entryId(entry('web'))).toBe('ns_web_apps_Deployment');
    expect(entryId(entry('web', 'Service', 'v1'))).toBe('ns_web__Service');
    const stale = staleEntries(
      [entry('web'), entry('old'), entry('hpa', 'HorizontalPodAutoscaler', 'autoscaling/v1')],
      [entry('web'), entry('hpa', 'HorizontalPodAutoscaler', 'autoscaling/v2')],
    );
    expect(stale.map((e) => e.name)).toEqual(['old']);
  });

  it('tells an unchanged inventory from a changed one', () => {
    const a = { deploymentId: 'd', entries: [entry('a'), entry('b')], specHash: 'h', revisionId: 'r' };
    expect(sameInventory(a, { ...a, entries: [entry('b'), entry('a')] })).toBe(true);
    expect(sameInventory(a, { ...a, specHash: 'h2' })).toBe(false);
    expect(sameInventory(a, { ...a, entries: [entry('a')] })).toBe(false);
    expect(sameInventory(undefined, a)).toBe(false);
  });
});

describe('prune guard', () => {
  const limits = { maxVanishedFraction: 0.5, maxVanishedCount: 2 };
  const ids = (n: number) => new Set(Array.from({ length: n }, (_, i) => `d${i}`));

  it.each([
    ['nothing vanished', 4, ['d0', 'd1', 'd2', 'd3'], true, []],
    ['one of four vanished', 4, ['d0', 'd1', 'd2'], true, ['d3']],
    ['two of two vanished (small fleet, under the count)', 2, ['x'], true, ['d0', 'd1']],
    ['three of four vanished', 4, ['d0'], false, ['d1', 'd2', 'd3']],
    ['an empty listing', 4, [], false, ['d0', 'd1', 'd2', 'd3']],
    ['an empty listing with one known', 1, [], false, ['d0']],
  ])('%s', (_name, known, listed, allowed, vanished) => {
    const decision = decideVanished(ids(known), new Set(listed), limits);
    expect([decision.allowed, decision.vanished]).toEqual([allowed, vanished]);
  });
});

describe('target revision', () => {
  const revision = (
    id: string,
    created: string,
    status: Revision['status'] = 'AWAITING_DEPLOY',
  ): Revision => ({
    id,
    created_at: created,
    updated_at: created,
    status,
    source: 'external_container',
    source_revision_config: { image_uri: `img:${id}` },
  });
  const deployment = (latest: string): Deployment => ({ ...minimalDeployment, latest_revision_id: latest });

  it('is the latest revision', () => {
    const target = chooseTarget(deployment('r2'), [
      revision('r2', '2026-11-02T00:00:00Z'),
      revision('r1', '2026-11-01T00:00:00Z'),
    ]);
    expect([target.revision?.id, target.settled]).toEqual(['r2', undefined]);
  });

  it('is a newer revision than a stale latest id (a redeploy made it)', () => {
    const target = chooseTarget(deployment('r1'), [
      revision('r1', '2026-11-01T00:00:00Z'),
      revision('r3', '2026-11-03T00:00:00Z'),
    ]);
    expect(target.revision?.id).toBe('r3');
  });

  it.each(['DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED'] as const)(
    'is settled when the target is %s, so it is not retried forever',
    (status) => {
      expect(chooseTarget(deployment('r1'), [revision('r1', '2026-11-01T00:00:00Z', status)]).settled).toBe(
        status,
      );
    },
  );
});

describe("the agent's own namespace", () => {
  it('is never managed, whatever the listener lists and the allow-list says', async () => {
    const { managedNamespaces } = await import('../../../src/reconcile/managedNamespaces.ts');
    const listener = {
      id: '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11',
      compute_type: 'k8s',
      compute_id: 'c',
      compute_config: { k8s_namespaces: ['apps', 'k8s-listener', 'team'] },
      created_at: '2026-11-25T00:00:00Z',
      updated_at: '2026-11-25T00:00:00Z',
      version: null,
    };
    expect(managedNamespaces(listener, undefined, 'k8s-listener')).toEqual(['apps', 'team']);
    expect(managedNamespaces(listener, ['apps', 'k8s-listener'], 'k8s-listener')).toEqual(['apps']);
  });
});
