import { describe, expect, it } from 'vitest';
import { RolloutRechecks } from '../../../../src/reconcile/steps/rolloutRechecks.ts';

describe('RolloutRechecks', () => {
  it('looks again after the interval while the rollouts in progress stay within the budget', () => {
    const rechecks = new RolloutRechecks(15_000, 20);
    for (let i = 0; i < 300; i++) expect(rechecks.inProgress(`d${i}`)).toBe(15_000);
    // Counted once, however often it is looked at.
    expect(rechecks.inProgress('d0')).toBe(15_000);
    expect(rechecks.size).toBe(300);
  });

  it('spaces the rechecks in proportion when more roll out at once, and closes up as they settle', () => {
    const rechecks = new RolloutRechecks(15_000, 20);
    for (let i = 0; i < 9_999; i++) rechecks.inProgress(`d${i}`);
    // 10,000 rollouts at 20 rechecks a second: each every 500 s.
    expect(rechecks.inProgress('d9999')).toBe(500_000);
    for (let i = 0; i < 9_000; i++) rechecks.settled(`d${i}`);
    expect(rechecks.size).toBe(1_000);
    expect(rechecks.inProgress('d9999')).toBe(50_000);
    rechecks.settled('unknown');
    expect(rechecks.size).toBe(1_000);
  });
});
