// The exit codes' rule for `status`, as documented: failure wins (1), then anything not yet
// DEPLOYED (3).
import { describe, expect, it } from 'vitest';
import { statusExitCode } from '../../../src/cli/exitCodes.ts';
import type { StatusState } from '../../../src/report/deploymentStatusRow.ts';

describe('statusExitCode', () => {
  it.each<[StatusState[], number]>([
    [[], 0],
    [['DEPLOYED', 'DEPLOYED'], 0],
    [['DEPLOYED', 'DEPLOYING'], 3],
    [['DEPLOYED', 'DRIFTED'], 3],
    [['DEPLOYING', 'DEPLOY_FAILED', 'DEPLOYED'], 1],
    [['DEPLOY_FAILED'], 1],
  ])('%j → %i', (states, code) => {
    expect(statusExitCode(states.map((state) => ({ state })))).toBe(code);
  });
});
