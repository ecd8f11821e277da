// The target revision of a deployment: the latest, a newer one than a stale latest id, or settled.
import { describe, expect, it } from 'vitest';
import type { Deployment, Revision } from '../../../../src/controlplane/schemas/index.ts';
import { chooseTarget } from '../../../../src/reconcile/loop/target.ts';
import { minimalDeployment } from '../../../support/renderFixtures.ts';

describe('target revision', () => {
  const revision = (
    id: string,
    created: string,
    status: Revision['status'] = 'AWAITING_DEPLOY',
  ): Revision => ({
    id,
    created_at: created,
    updated_at: created,
    status,
    source: 'external_container',
    source_revision_config: { image_uri: `img:${id}` },
  });
  const deployment = (latest: string): Deployment => ({ ...minimalDeployment, latest_revision_id: latest });

  it('is the latest revision', () => {
    const target = chooseTarget(deployment('r2'), [
      revision('r2', '2026-11-02T00:00:00Z'),
      revision('r1', '2026-11-01T00:00:00Z'),
    ]);
    expect([target.revision?.id, target.settled]).toEqual(['r2', undefined]);
  });

  it('is a newer revision than a stale latest id (a redeploy made it)', () => {
    const target = chooseTarget(deployment('r1'), [
      revision('r1', '2026-11-01T00:00:00Z'),
      revision('r3', '2026-11-03T00:00:00Z'),
    ]);
    expect(target.revision?.id).toBe('r3');
  });

  it.each(['DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED'] as const)(
    'is settled when the target is %s, so it is not retried forever',
    (status) => {
      expect(chooseTarget(deployment('r1'), [revision('r1', '2026-11-01T00:00:00Z', status)]).settled).toBe(
        status,
      );
    },
  );
});
