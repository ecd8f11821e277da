// Which revision of a deployment the cluster should run. Pure.
import type { Deployment, Revision, RevisionStatus } from '../../controlplane/schemas/index.ts';

/** Revisions that are over: the agent does not try them again on its own. */
export const TERMINAL_FAILURES: ReadonlySet<RevisionStatus> = new Set([
  'DEPLOY_FAILED',
  'SKIPPED',
  'INTERRUPTED',
  'CREATE_FAILED',
  'BUILD_FAILED',
]);

export interface Target {
  readonly revision: Revision | undefined;
  /** Set when the target is a revision that already failed or was given up: nothing to roll out. */
  readonly settled: RevisionStatus | undefined;
}

/**
 * The latest revision, unless a newer one exists (a redeploy creates a new revision, so the
 * newest by creation time wins over a stale latest_revision_id).
 */
export function chooseTarget(deployment: Deployment, revisions: readonly Revision[]): Target {
  const newest = [...revisions].sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at))[0];
  const latest = revisions.find((r) => r.id === deployment.latest_revision_id);
  const revision =
    latest && newest && Date.parse(newest.created_at) > Date.parse(latest.created_at)
      ? newest
      : (latest ?? newest);
  return {
    revision,
    settled: revision && TERMINAL_FAILURES.has(revision.status) ? revision.status : undefined,
  };
}

/** What makes re-reading revisions worth it: a new latest revision or any change of the deployment. */
export function deploymentFingerprint(deployment: Deployment): string {
  return `${deployment.latest_revision_id ?? ''}|${deployment.updated_at}|${deployment.status}`;
}
