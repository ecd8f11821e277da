// The kind table and what is read off it: the workload, pod-template and rollout kinds, the watched
// and recorded kinds, and which optional kinds each render setting turns on.
import { describe, expect, it } from 'vitest';
import {
  KIND_ROWS,
  kindEnabled,
  kindsWhere,
  POD_TEMPLATE_KINDS,
  ROLLOUT_KINDS,
  WORKLOAD_KINDS,
} from '../../../src/objects/kinds.ts';
import {
  customKinds,
  INVENTORY_KINDS,
  OBSERVED_KINDS,
  WATCHED_KINDS,
  watchedKinds,
} from '../../../src/reconcile/policy/watchedKinds.ts';
import { RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import { goldenConfig, listener, maximalDeployment } from '../../support/renderFixtures.ts';

const sorted = (kinds: Iterable<string>) => [...kinds].sort();

describe('the kind table', () => {
  it.each([
    ['workloads', WORKLOAD_KINDS, ['Deployment', 'StatefulSet']],
    ['pod templates', POD_TEMPLATE_KINDS, ['Deployment', 'PodTemplate', 'StatefulSet']],
    [
      'rollout-relevant',
      ROLLOUT_KINDS,
      ['Deployment', 'HTTPRoute', 'HorizontalPodAutoscaler', 'ScaledObject', 'StatefulSet'],
    ],
    ['observed (cached, waking nothing)', OBSERVED_KINDS, ['Pod']],
  ])('%s', (_, kinds, expected) => {
    expect(sorted(kinds)).toEqual(expected);
  });

  it('watches every kind the agent writes, and records in inventories only what render writes', () => {
    const written = KIND_ROWS.filter((row) => row.written !== undefined).map((row) => row.kind);
    expect(sorted(WATCHED_KINDS)).toEqual(sorted([...written, 'PersistentVolumeClaim']));
    expect(sorted(INVENTORY_KINDS)).toEqual(sorted(written.filter((kind) => kind !== 'ConfigMap')));
  });

  it('lists as written every kind the maximal deployment renders into', () => {
    const result = renderDeployment(
      { deployment: maximalDeployment, revision: undefined, listener, allowedNamespaces: undefined },
      goldenConfig,
    );
    if (!result.ok) throw result.error;
    for (const object of result.value.objects) {
      const [group, version] = object.apiVersion.includes('/')
        ? object.apiVersion.split('/')
        : ['', object.apiVersion];
      const row = KIND_ROWS.find((r) => r.kind === object.kind && r.group === group && r.version === version);
      expect(row?.written, `${object.apiVersion} ${object.kind}`).toBe('rendered');
    }
  });

  it.each([
    [{}, ['NetworkPolicy'], []],
    [{ networkPolicy: { enabled: false } }, [], []],
    [{ ingress: { className: 'nginx' } }, ['Ingress', 'NetworkPolicy'], []],
    [{ gateway: { parentRefs: [{ name: 'shared' }] } }, ['NetworkPolicy', 'HTTPRoute'], ['HTTPRoute']],
    [
      { autoscaling: { queue: 'keda' as const } },
      ['NetworkPolicy', 'ScaledObject', 'TriggerAuthentication'],
      ['ScaledObject', 'TriggerAuthentication'],
    ],
  ])('render %j turns on %j (custom resources %j)', (input, optional, custom) => {
    const render = RenderConfig.parse(input);
    const optionalKinds = kindsWhere((row) => row.enabledBy !== undefined);
    expect(optionalKinds.filter((kind) => kindEnabled(kind, render))).toEqual(optional);
    expect(watchedKinds(render).filter((kind) => optionalKinds.includes(kind))).toEqual(optional);
    expect(customKinds(render).map((c) => c.kind)).toEqual(custom);
  });
});
