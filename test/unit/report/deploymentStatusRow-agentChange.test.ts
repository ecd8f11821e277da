// `status` for a deployment whose change comes from the agent itself and waits for the agent change
// rate: its row says so (only where nothing more important is said), the table counts them.

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { statusExitCode } from '../../../src/cli/exitCodes.ts';
import {
  AGENT_CHANGE_WAITING,
  agentChangesWaiting,
  deriveStatusRow,
  formatStatusTable,
  type ObservedObject,
  type RowInput,
  StatusList,
  withAgentChangeWaiting,
} from '../../../src/report/deploymentStatusRow.ts';
import type { LiveObject } from '../../../src/report/rolloutHealth.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');

const deployment = parse(`
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 1 }
status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1 }`) as LiveObject;

const observed = (extra: Partial<ObservedObject>): ObservedObject => ({
  ref: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'apps', name: 'web' },
  component: 'main',
  live: deployment,
  desired: true,
  recorded: true,
  applied: true,
  drift: undefined,
  ...extra,
});

const input = (name: string, objects: ObservedObject[]): RowInput => ({
  id: `id-${name}`,
  name,
  namespace: 'apps',
  revisionId: 'aaaaaaaa-1111-4000-8000-000000000001',
  revisionStatus: 'DEPLOYED',
  revisionUpdatedAt: '2026-11-22T11:00:00Z',
  settled: undefined,
  deleting: undefined,
  invalid: undefined,
  annotation: undefined,
  objects,
  claims: [],
  now: NOW,
  failureGraceMs: 120_000,
});

describe('status: changes from the agent itself waiting for their turn', () => {
  // The live Deployment carries the spec hash of the previous render: not applied.
  const pending = deriveStatusRow(input('held', [observed({ applied: false })]));

  it('a deployment not yet at the new render says it waits for the agent change rate', () => {
    expect(pending.reason).toBe('NotApplied');
    const row = withAgentChangeWaiting(pending, true);
    expect(row).toMatchObject({ state: 'DEPLOYING', reason: 'AgentChangeWaiting', agentChangeWaiting: true });
    expect(row.message).toContain(AGENT_CHANGE_WAITING);
    // Not held: the row is as derived.
    expect(withAgentChangeWaiting(pending, false)).toBe(pending);
  });

  it('what matters more is kept: a hand edit or a deployed row is not said to wait', () => {
    const drifted = deriveStatusRow(input('edited', [observed({ drift: 'spec.replicas' })]));
    expect(withAgentChangeWaiting(drifted, true)).toBe(drifted);
    const deployed = deriveStatusRow(input('done', [observed({})]));
    expect(deployed.state).toBe('DEPLOYED');
    expect(withAgentChangeWaiting(deployed, true)).toBe(deployed);
  });

  it('the table counts them under the rows, the JSON shape carries the count, the exit code says not yet', () => {
    const rows = [
      withAgentChangeWaiting(pending, true),
      withAgentChangeWaiting(deriveStatusRow(input('held-too', [observed({ applied: false })])), true),
      deriveStatusRow(input('done', [observed({})])),
    ];
    expect(agentChangesWaiting(rows)).toBe(2);
    const table = formatStatusTable(rows, NOW);
    expect(table.trimEnd().split('\n').at(-1)).toBe(
      '2 of 3 deployments wait for the agent change rate (reconcile.agentChangeRate).',
    );
    expect(formatStatusTable([rows[2] as (typeof rows)[number]], NOW)).not.toContain('agent change rate');
    expect(
      StatusList.parse({ listenerId: 'l', observedAt: 'now', deployments: rows, agentChangesWaiting: 2 })
        .agentChangesWaiting,
    ).toBe(2);
    expect(statusExitCode(rows)).toBe(3);
  });
});
