import { describe, expect, it } from 'vitest';
import { nextResyncDue } from '../../../bench/sync/resync.ts';

describe('nextResyncDue', () => {
  it('is one interval after the agent started while the first resync is still ahead', () => {
    expect(nextResyncDue(1_000, 600_000, 415_000)).toBe(601_000);
  });

  it('is the next interval once a resync came during the earlier phases (a slow cold sync)', () => {
    expect(nextResyncDue(1_000, 600_000, 650_000)).toBe(1_201_000);
  });

  it('never lies in the past, even at the agent’s start', () => {
    expect(nextResyncDue(1_000, 600_000, 1_000)).toBe(601_000);
    expect(nextResyncDue(1_000, 600_000, 601_000)).toBe(601_000);
  });
});
