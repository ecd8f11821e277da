// One model of a change: the action and the words run logs follow from why the applier writes.
import { describe, expect, it } from 'vitest';
import { changeOf, describeWrite, type WriteReason } from '../../../../src/reconcile/steps/change.ts';

describe('changeOf', () => {
  it.each<[string, WriteReason | undefined, string, string]>([
    ['found as desired', undefined, 'unchanged', 'as desired: run writes nothing'],
    ['missing', { kind: 'missing' }, 'create', 'missing'],
    ['its render changed', { kind: 'spec-changed' }, 'configure', 'spec changed'],
    ['a field of ours edited', { kind: 'drift', path: 'spec.replicas' }, 'configure', 'spec.replicas'],
  ])('%s: %s', (_name, why, action, reason) => {
    expect(changeOf(why)).toEqual({ action, reason });
  });

  it("says a write's reason in the words of run's log", () => {
    expect(describeWrite({ kind: 'drift', path: 'metadata.labels.app' })).toBe('metadata.labels.app');
  });
});
