// What each deployment of this listener should be. `resolveDesired` is the one rule that turns a
// listed deployment and its revision listing into it, and `renderEntry` the one render input:
// `run` (the poller and the reconciler), `diff`, `status` and `render` all ask them, so each shows
// what the agent would apply. DesiredState holds what the last polls said, for the reconciler.
// Keys are deployment ids.
import type { CompleteListing } from '../../controlplane/client.ts';
import type { Deployment, Listener, Revision } from '../../controlplane/schemas/index.ts';
import {
  type KubeObject,
  type RenderConfig,
  type RenderResult,
  renderDeployment,
} from '../../render/index.ts';
import { entriesOf, type Inventory } from '../steps/inventory.ts';
import { chooseTarget, deploymentFingerprint, type Target } from './target.ts';

export type DesiredEntry =
  | {
      readonly kind: 'present';
      readonly deployment: Deployment;
      readonly target: Target;
      readonly fingerprint: string;
      /** A digest of the listing's item as it came (held in memory only): the next poll takes an identical item unparsed. */
      readonly listedDigest?: string | undefined;
    }
  /**
   * Listed, but failing validation (an enum value this agent does not know, a wrong type, an
   * unreadable revision): nothing is written or deleted for it, and it is reported failed, on its
   * latest revision when that can be read.
   */
  | { readonly kind: 'invalid'; readonly message: string; readonly revisionId?: string | undefined }
  /** Gone from a complete listing (the prune guard allowed it): its objects are deleted. */
  | { readonly kind: 'gone' };

export class DesiredState {
  readonly #entries = new Map<string, DesiredEntry>();

  get(id: string): DesiredEntry | undefined {
    return this.#entries.get(id);
  }

  set(id: string, entry: DesiredEntry): void {
    this.#entries.set(id, entry);
  }

  delete(id: string): void {
    this.#entries.delete(id);
  }

  ids(): string[] {
    return [...this.#entries.keys()];
  }
}

export type PresentEntry = Extract<DesiredEntry, { kind: 'present' }>;
export type InvalidEntry = Extract<DesiredEntry, { kind: 'invalid' }>;

/**
 * A listed deployment of this listener and its revision listing, as the agent takes it. A revision
 * it cannot read may be the newest: no target is chosen without it, and the deployment is invalid
 * (reported on `failingRevision`, when the caller reports one: a deployment already running keeps
 * its revision's verdict). Else the target revision (target.ts).
 */
export function resolveDesired(
  deployment: Deployment,
  revisions: Pick<CompleteListing<Revision>, 'items' | 'invalid'>,
  listed: { readonly failingRevision?: string | undefined; readonly listedDigest?: string | undefined } = {},
): PresentEntry | InvalidEntry {
  const unreadable = revisions.invalid[0];
  if (unreadable)
    return { kind: 'invalid', message: unreadable.error.message, revisionId: listed.failingRevision };
  return {
    kind: 'present',
    deployment,
    target: chooseTarget(deployment, revisions.items),
    fingerprint: deploymentFingerprint(deployment),
    listedDigest: listed.listedDigest,
  };
}

/** What a render takes besides the deployment: the listener and the agent's own settings. */
export interface RenderContext {
  readonly listener: Listener;
  /** The agent's own namespace allow-list; undefined when the agent sets none. */
  readonly allowedNamespaces: readonly string[] | undefined;
  /** The agent's digest key; undefined: plain digests (offline previews). */
  readonly digestKey?: Uint8Array | undefined;
}

/** The render of a present entry: its target revision, as the agent applies it. Pure. */
export function renderEntry(entry: PresentEntry, context: RenderContext, config: RenderConfig): RenderResult {
  return renderDeployment(
    {
      deployment: entry.deployment,
      revision: entry.target.revision,
      listener: context.listener,
      allowedNamespaces: context.allowedNamespaces,
      digestKey: context.digestKey,
    },
    config,
  );
}

/**
 * The inventory a render of this entry records: what `run` writes, and what the agent-change test
 * (agentChange.ts) compares with the recorded one. `inputHash`: renderInputHash of the entry.
 */
export function renderedInventory(
  entry: PresentEntry,
  rendered: { readonly objects: readonly KubeObject[]; readonly specHash: string },
  inputHash: string,
): Inventory {
  return {
    deploymentId: entry.deployment.id,
    entries: entriesOf(rendered.objects),
    specHash: rendered.specHash,
    revisionId: revisionOf(entry),
    inputHash,
  };
}

/** The revision a present entry is about: its target, else the deployment's latest. */
export function revisionOf(entry: PresentEntry): string | undefined {
  return entry.target.revision?.id ?? entry.deployment.latest_revision_id ?? undefined;
}

/** The revision a failure of this entry is reported on: its target's, or the invalid one's named. */
export function failedRevisionOf(entry: DesiredEntry | undefined): string | undefined {
  if (entry?.kind === 'present') return revisionOf(entry);
  return entry?.kind === 'invalid' ? entry.revisionId : undefined;
}

/** Deleted in the control plane: gone from a complete listing, or listed AWAITING_DELETE. */
export function isDeleted(entry: DesiredEntry): boolean {
  return entry.kind === 'gone' || (entry.kind === 'present' && entry.deployment.status === 'AWAITING_DELETE');
}

/**
 * What a log line about this deployment says beside its id: its revision and namespace when it is
 * present; else the namespace its objects are in, when they are in one.
 */
export function logFieldsOf(
  entry: DesiredEntry | undefined,
  placed: readonly string[],
): { revisionId?: string | undefined; namespace?: string | undefined } {
  if (entry?.kind === 'present')
    return {
      revisionId: revisionOf(entry),
      namespace: entry.deployment.source_config.listener_config?.k8s_namespace ?? undefined,
    };
  return placed.length === 1 ? { namespace: placed[0] } : {};
}
