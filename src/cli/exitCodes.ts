// The exit codes of the commands, each with one meaning, which scripts and CI wait on; and the
// rule that turns deployments' states into one (`status`).
import type { StatusRow } from '../report/deploymentStatusRow.ts';

/** Done: every check passed, every deployment DEPLOYED, nothing would change. */
export const EXIT_OK = 0;
/** A failure: a check, a deployment DEPLOY_FAILED, an unreadable status, an invalid deployment. */
export const EXIT_FAILED = 1;
/** `diff`: something would change (as diff(1) has it). */
export const EXIT_DIFFERENCES = 1;
/**
 * What was asked cannot be done: a usage error (unknown flag or command, bad value, unknown
 * deployment); for `diff`, any failure, since 1 there means differences.
 */
export const EXIT_USAGE = 2;
/** Not yet: a deployment DEPLOYING or DRIFTED, a suspension not acknowledged in time. */
export const EXIT_IN_PROGRESS = 3;

/** 0 when every deployment is DEPLOYED, 1 when any failed (failure wins), 3 while any is not yet. */
export function statusExitCode(rows: readonly Pick<StatusRow, 'state'>[]): number {
  if (rows.some((r) => r.state === 'DEPLOY_FAILED')) return EXIT_FAILED;
  if (rows.some((r) => r.state !== 'DEPLOYED')) return EXIT_IN_PROGRESS;
  return EXIT_OK;
}
