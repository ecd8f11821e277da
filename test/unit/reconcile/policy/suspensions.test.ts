import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_SUSPENSIONS_GENERATION,
  changedSuspensions,
  describeSuspension,
  listenerKey,
  NO_SUSPENSIONS,
  observedAnnotation,
  readSuspensions,
  suspensionOf,
} from '../../../../src/reconcile/policy/suspensions.ts';
import { type StatusRow, withSuspension } from '../../../../src/report/deploymentStatusRow.ts';
import { suspensionsConfigMap } from '../../../support/suspensionsConfigMap.ts';

const LISTENER = 'l-1';
const A = '0b4f1c1e-0000-4000-8000-00000000000a';
const B = '0b4f1c1e-0000-4000-8000-00000000000b';
const entry = (reason: string, by = 'alice') => JSON.stringify({ reason, by, at: '2026-11-25T08:00:00Z' });

const configMap = suspensionsConfigMap;

describe('readSuspensions', () => {
  it('reads no suspensions from a missing ConfigMap', () => {
    expect(readSuspensions(undefined, LISTENER)).toEqual(NO_SUSPENSIONS);
  });

  it('reads deployments, its own listener and the generations; other listeners are not its own', () => {
    const read = readSuspensions(
      configMap(
        { [A]: entry('incident'), [listenerKey('other')]: entry('not ours'), 'not a key!': entry('x') },
        { [ANNOTATION_SUSPENSIONS_GENERATION]: '4', [observedAnnotation(LISTENER)]: '3' },
      ),
      LISTENER,
    );
    expect([...read.deployments.keys()]).toEqual([A]);
    expect(read.deployments.get(A)?.reason).toBe('incident');
    expect(read.listener).toBeUndefined();
    expect(read.generation).toBe(4);
    expect(read.acknowledged).toBe(3);
  });

  it('an unreadable entry still suspends (the safe side), and says so', () => {
    const read = readSuspensions(
      configMap({ [A]: '{not json', [B]: JSON.stringify({ reason: 1 }) }),
      LISTENER,
    );
    expect(suspensionOf(read, A)?.reason).toBe('(unreadable suspension entry)');
    expect(suspensionOf(read, B)?.reason).toBe('(unreadable suspension entry)');
  });

  it('a garbled generation reads as 0, never as a number it is not', () => {
    const read = readSuspensions(configMap({}, { [ANNOTATION_SUSPENSIONS_GENERATION]: '-5' }), LISTENER);
    expect(read.generation).toBe(0);
  });
});

describe('suspensionOf and changedSuspensions', () => {
  const own = readSuspensions(configMap({ [A]: entry('own') }), LISTENER);
  const wide = readSuspensions(
    configMap({ [A]: entry('own'), [listenerKey(LISTENER)]: entry('cluster upgrade', 'bob') }),
    LISTENER,
  );

  it("the listener's suspension wins over a deployment's own", () => {
    expect(suspensionOf(own, A)).toMatchObject({ scope: 'deployment', reason: 'own' });
    expect(suspensionOf(own, B)).toBeUndefined();
    expect(suspensionOf(wide, B)).toMatchObject({ scope: 'listener', reason: 'cluster upgrade', by: 'bob' });
  });

  it('names the deployments whose suspension changed, either way', () => {
    expect(changedSuspensions(NO_SUSPENSIONS, own, [A, B])).toEqual([A]);
    expect(changedSuspensions(own, wide, [A, B])).toEqual([A, B]);
    expect(changedSuspensions(wide, NO_SUSPENSIONS, [A, B])).toEqual([A, B]);
    expect(changedSuspensions(own, own, [A, B])).toEqual([]);
  });

  it('describes who, when and why in one line', () => {
    expect(describeSuspension({ scope: 'deployment', reason: 'why', by: 'alice', at: 'T' })).toBe(
      'suspended by alice at T: why',
    );
    expect(describeSuspension({ scope: 'listener', reason: '', by: 'bob', at: '' })).toBe(
      'the whole listener suspended by bob',
    );
  });
});

describe('withSuspension (status)', () => {
  const row: StatusRow = {
    id: A,
    name: 'web',
    namespace: 'apps',
    revisionId: 'r',
    revisionStatus: 'DEPLOYED',
    state: 'DEPLOYED',
    reason: 'Current',
    message: 'all workloads are available',
    since: '2026-11-25T07:00:00Z',
    workloads: [],
  };

  it('shows SUSPENDED with who, why and what lies underneath', () => {
    const shown = withSuspension(row, {
      scope: 'deployment',
      by: 'alice',
      at: '2026-11-25T08:00:00Z',
      reason: 'incident',
    });
    expect(shown.state).toBe('SUSPENDED');
    expect(shown.since).toBe('2026-11-25T08:00:00Z');
    expect(shown.message).toBe(
      'suspended by alice: incident; underneath DEPLOYED: all workloads are available',
    );
  });

  it('leaves a row without a suspension as it is', () => {
    expect(withSuspension(row, undefined)).toBe(row);
  });
});
