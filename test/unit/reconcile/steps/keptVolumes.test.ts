// A deployment's volumes by the name they were made under, and which of its earlier names' go.
import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../../src/kube/index.ts';
import { LABEL_INSTANCE } from '../../../../src/objects/ownership.ts';
import { volumeKey, volumesByName, volumesPastKept } from '../../../../src/reconcile/steps/keptVolumes.ts';

function live(
  kind: string,
  name: string,
  instance: string | undefined,
  created?: string,
  namespace = 'apps',
) {
  return {
    apiVersion: 'v1',
    kind,
    metadata: {
      name,
      namespace,
      uid: `${kind}-${name}`,
      resourceVersion: '1',
      labels: instance === undefined ? {} : { [LABEL_INSTANCE]: instance },
      annotations: {},
      ...(created ? { creationTimestamp: created } : {}),
    },
  } as LiveKubeObject;
}

describe('volumesByName', () => {
  it('groups claims and credentials by namespace and name, claims first, made when the first was; one being deleted is not held', () => {
    const volumes = volumesByName([
      live('Secret', 'a-db-credentials', 'a', '2026-01-02T00:00:00Z'),
      live('PersistentVolumeClaim', 'data-a-db-0', 'a', '2026-01-03T00:00:00Z'),
      live('PersistentVolumeClaim', 'data-a-db-0', 'a', '2026-01-01T00:00:00Z', 'other'),
      live('PersistentVolumeClaim', 'loose', undefined),
      {
        ...live('PersistentVolumeClaim', 'data-gone-db-0', 'gone'),
        metadata: {
          ...live('PersistentVolumeClaim', 'data-gone-db-0', 'gone').metadata,
          deletionTimestamp: '2026-01-05T00:00:00Z',
        },
      },
    ]);
    expect(volumes.map((v) => [v.namespace, v.name, v.objects.map((o) => o.kind), v.createdAt])).toEqual([
      ['apps', 'a', ['PersistentVolumeClaim', 'Secret'], '2026-01-02T00:00:00Z'],
      ['other', 'a', ['PersistentVolumeClaim'], '2026-01-01T00:00:00Z'],
      ['apps', 'PersistentVolumeClaim/loose', ['PersistentVolumeClaim'], ''],
    ]);
  });
});

describe('volumesPastKept', () => {
  const volumes = volumesByName([
    live('PersistentVolumeClaim', 'data-c-db-0', 'c', '2026-01-03T00:00:00Z'),
    live('PersistentVolumeClaim', 'data-a-db-0', 'a', '2026-01-01T00:00:00Z'),
    live('PersistentVolumeClaim', 'data-b-db-0', 'b', '2026-01-02T00:00:00Z'),
    live('PersistentVolumeClaim', 'data-d-db-0', 'd', '2026-01-04T00:00:00Z'),
  ]);
  const current = new Set([volumeKey('apps', 'd')]);
  it.each([
    [0, ['a', 'b', 'c']],
    [1, ['a', 'b']],
    [3, []],
    [9, []],
  ])('keeps the %i newest earlier names, never the current one', (kept, gone) => {
    expect(volumesPastKept(volumes, current, kept).map((v) => v.name)).toEqual(gone);
  });
  it('counts a current name in another namespace as earlier', () => {
    const moved = new Set([volumeKey('elsewhere', 'd')]);
    expect(volumesPastKept(volumes, moved, 1).map((v) => v.name)).toEqual(['a', 'b', 'c']);
  });
});
