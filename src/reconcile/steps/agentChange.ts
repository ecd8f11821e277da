// Tells a change that comes from the agent (a new version or render configuration renders the same
// input differently) from one that comes from the control plane (a new revision, a patched
// deployment), by the inventory of the last applied render. Pure.
import type { Deployment, Revision } from '../../controlplane/schemas/index.ts';
import { WORKLOAD_KINDS } from '../../objects/kinds.ts';
import { canonicalHash } from '../../render/canonicalHash.ts';
import type { Inventory } from './inventory.ts';

/**
 * A digest of what render reads from the control plane for one deployment: its identity, source,
 * configuration, secrets and target revision (not its status or timestamps, which the agent's own
 * reports change). Keyed as every digest render writes: it covers secret values.
 */
export function renderInputHash(
  deployment: Deployment,
  revision: Revision | undefined,
  digestKey: Uint8Array | undefined,
): string {
  return canonicalHash(
    {
      id: deployment.id,
      name: deployment.name,
      source: deployment.source,
      sourceConfig: deployment.source_config,
      sourceRevisionConfig: deployment.source_revision_config,
      secrets: deployment.secrets ?? null,
      secretReferences: deployment.secret_references ?? null,
      latestRevisionId: deployment.latest_revision_id ?? null,
      revision: revision ? { id: revision.id, sourceRevisionConfig: revision.source_revision_config } : null,
    },
    digestKey,
  );
}

/**
 * The render changed while its input did not: the same revision, a different spec hash, and the
 * same input hash (or none recorded, by an agent from before input hashes: then the revision alone
 * says so). Without a recorded inventory in the namespace nothing was applied there: not a change.
 */
export function isAgentChange(recorded: Inventory | undefined, next: Inventory): boolean {
  return (
    recorded !== undefined &&
    recorded.specHash !== '' &&
    recorded.revisionId === next.revisionId &&
    recorded.specHash !== next.specHash &&
    (recorded.inputHash === undefined || recorded.inputHash === next.inputHash)
  );
}

/** One object of a planned apply, as the agent-change test reads it (applier.ts ApplyStep). */
export interface PlannedWrite {
  readonly object: { readonly kind: string };
  readonly before: unknown;
  readonly why: { readonly kind: string } | undefined;
}

/**
 * An agent change that would restart live workloads: every workload already there, and one whose
 * spec changes. A first apply, a drift repair or a change of other objects alone is not held.
 */
export function restartsWorkloads(
  recorded: Inventory | undefined,
  next: Inventory,
  planned: readonly PlannedWrite[],
): boolean {
  const workloads = planned.filter((step) => WORKLOAD_KINDS.has(step.object.kind));
  return (
    isAgentChange(recorded, next) &&
    workloads.length > 0 &&
    workloads.every((step) => step.before !== undefined) &&
    workloads.some((step) => step.why?.kind === 'spec-changed')
  );
}
