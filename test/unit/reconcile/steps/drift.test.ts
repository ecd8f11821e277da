// Drift: whether a live object differs from what the agent applies, in the fields the agent sets.
import { describe, expect, it } from 'vitest';
import { driftPath } from '../../../../src/reconcile/steps/drift.ts';

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
