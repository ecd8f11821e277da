// The inventory's entries: identity by namespace, name, group and kind; which entries went stale.
import { describe, expect, it } from 'vitest';
import { entryId, sameInventory, staleEntries } from '../../../../src/reconcile/steps/inventory.ts';

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
