// Which render is an agent change that would restart live workloads (restartsWorkloads): the same
// revision and input rendered to another spec, every workload already there, one of them changed.
import { describe, expect, it } from 'vitest';
import { type PlannedWrite, restartsWorkloads } from '../../../../src/reconcile/steps/agentChange.ts';
import type { Inventory } from '../../../../src/reconcile/steps/inventory.ts';

const recorded: Inventory = {
  deploymentId: 'd1',
  entries: [],
  specHash: 'spec-1',
  revisionId: 'r1',
  inputHash: 'input-1',
};
/** The same revision and input, rendered by a newer agent to another spec. */
const next: Inventory = { ...recorded, specHash: 'spec-2' };

const live = { metadata: { name: 'web' } };
/** A write of an object already live. */
const write = (kind: string, why: PlannedWrite['why']): PlannedWrite => ({
  object: { kind },
  before: live,
  why,
});
const specChanged = { kind: 'spec-changed' } as const;
const workloadChanged = [write('Deployment', specChanged), write('ConfigMap', specChanged)];

describe('restartsWorkloads', () => {
  it('is so for an agent change whose live workload spec changes', () => {
    expect(restartsWorkloads(recorded, next, workloadChanged)).toBe(true);
  });

  it('is so for a StatefulSet as for a Deployment', () => {
    expect(restartsWorkloads(recorded, next, [write('StatefulSet', specChanged)])).toBe(true);
  });

  it('is so for an inventory recorded before input hashes, by the revision alone', () => {
    expect(restartsWorkloads({ ...recorded, inputHash: undefined }, next, workloadChanged)).toBe(true);
  });

  it('is not without a recorded inventory (nothing applied there)', () => {
    expect(restartsWorkloads(undefined, next, workloadChanged)).toBe(false);
  });

  it('is not for an inventory recorded ahead, without its spec hash', () => {
    expect(restartsWorkloads({ ...recorded, specHash: '' }, next, workloadChanged)).toBe(false);
  });

  it('is not for a new revision', () => {
    expect(restartsWorkloads(recorded, { ...next, revisionId: 'r2' }, workloadChanged)).toBe(false);
  });

  it('is not for a new input of the same revision', () => {
    expect(restartsWorkloads(recorded, { ...next, inputHash: 'input-2' }, workloadChanged)).toBe(false);
  });

  it('is not for the same render', () => {
    expect(restartsWorkloads(recorded, recorded, workloadChanged)).toBe(false);
  });

  it('is not when a workload is not there yet', () => {
    const missing: PlannedWrite = {
      object: { kind: 'StatefulSet' },
      before: undefined,
      why: { kind: 'missing' },
    };
    const planned = [write('Deployment', specChanged), missing];
    expect(restartsWorkloads(recorded, next, planned)).toBe(false);
  });

  it('is not when only other objects change', () => {
    expect(
      restartsWorkloads(recorded, next, [write('Deployment', undefined), write('ConfigMap', specChanged)]),
    ).toBe(false);
  });

  it("is not for a drift repair of a workload's field", () => {
    const drift = { kind: 'drift', path: 'spec.replicas' } as const;
    expect(restartsWorkloads(recorded, next, [write('Deployment', drift)])).toBe(false);
  });

  it('is not without any workload', () => {
    expect(restartsWorkloads(recorded, next, [write('Service', specChanged)])).toBe(false);
  });
});
