// What `run` would change, changing nothing: the reconciler's own rules (the desired state of
// desiredState.ts — target revision, an unreadable revision, render — suspensions, never adopt,
// the reference and host checks, the agent-change rate, inventory diff, the prune guard, deletion
// of what the control plane deleted) with every write replaced by a dry run. Backs
// `k8s-listener diff`.
import type { ControlPlaneClient } from '../controlplane/client.ts';
import type { Deployment, Listener } from '../controlplane/schemas/index.ts';
import { KubeApiError } from '../kube/errors.ts';
import type { KubeClient, LiveKubeObject } from '../kube/kubeClient.ts';
import { refOf } from '../kube/resources.ts';
import { type ChangeSetEntry, dryRunDiff, pruneChange } from '../kube/serverDiff.ts';
import { ANNOTATION_DEPLOYMENT_NAME, isCreateOnly, isPruned } from '../objects/ownership.ts';
import {
  type PresentEntry,
  renderEntry,
  renderedInventory,
  resolveDesired,
} from '../reconcile/loop/desiredState.ts';
import { listenerItems } from '../reconcile/loop/listenerItems.ts';
import { TerminalError, WaitingError } from '../reconcile/outcome.ts';
import { decideVanished } from '../reconcile/policy/pruneGuard.ts';
import type { ReconcileConfig } from '../reconcile/policy/reconcileConfig.ts';
import { type ActiveSuspension, describeSuspension } from '../reconcile/policy/suspensions.ts';
import { renderInputHash, restartsWorkloads } from '../reconcile/steps/agentChange.ts';
import { takenBy, whyWrite } from '../reconcile/steps/applier.ts';
import { changeOf } from '../reconcile/steps/change.ts';
import { entriesOf, type InventoryEntry, staleEntries } from '../reconcile/steps/inventory.ts';
import { InventoryStore, inventoryRef } from '../reconcile/steps/inventoryStore.ts';
import { keptVolumeCount, renderedVolumeNames } from '../reconcile/steps/keptVolumes.ts';
import { databaseVolumes, earlierVolumesPastKept } from '../reconcile/steps/pruner.ts';
import { ReferenceGuard } from '../reconcile/steps/referenceGuard.ts';
import { isRouteKind, routedHosts } from '../reconcile/steps/routedHosts.ts';
import { maskDigests, withLiveDigests } from '../render/digestAnnotations.ts';
import type { KubeObject, RenderConfig, RenderProblem } from '../render/index.ts';

export interface PreviewOptions {
  readonly kube: KubeClient;
  readonly client: Pick<ControlPlaneClient, 'listAllDeployments' | 'listAllRevisions'>;
  readonly listener: Listener;
  /** The namespaces the agent manages: the listener's, intersected with its allow-list. */
  readonly namespaces: readonly string[];
  /** The agent's own allow-list, as the renderer takes it (undefined: none set). */
  readonly allowedNamespaces: readonly string[] | undefined;
  /** The agent's digest key: rendered objects carry the digests the agent writes. */
  readonly digestKey?: Uint8Array | undefined;
  readonly renderConfig: RenderConfig;
  readonly reconcileConfig: ReconcileConfig;
  /** An operator's suspension in effect for a deployment, as the agent reads them; absent: none. */
  readonly suspension?: ((deploymentId: string) => ActiveSuspension | undefined) | undefined;
  readonly signal?: AbortSignal | undefined;
}

interface PreviewBase {
  readonly id: string;
  /** Undefined for a deployment gone from the control plane whose objects carry no name. */
  readonly name: string | undefined;
}

/** One deployment's part of the preview. Only `changes` is something `run` would do. */
export type DeploymentPreview = PreviewBase &
  (
    | {
        readonly state: 'present';
        readonly namespace: string;
        readonly revisionId: string | undefined;
        readonly changes: readonly ChangeSetEntry[];
        /**
         * The change is the agent's own new render of the same revision, restarting workloads:
         * `run` applies it when its turn comes at `reconcile.agentChangeRate`.
         */
        readonly agentChange: boolean;
      }
    /** Suspended by an operator: `run` changes nothing of it until it is resumed. */
    | { readonly state: 'suspended'; readonly suspension: string }
    /** AWAITING_DELETE, or gone from a complete listing: every object it has goes. */
    | {
        readonly state: 'deleted';
        readonly reason: 'AWAITING_DELETE' | 'gone';
        readonly changes: readonly ChangeSetEntry[];
      }
    /** `run` would report it failed and change nothing: an invalid spec, every problem named. */
    | { readonly state: 'invalid'; readonly problems: readonly RenderProblem[] }
    /**
     * `run` would fail it, or hold it failed until what it waits for comes: an object it may not
     * adopt, a reference or host the rules refuse, a request the API server refused.
     */
    | { readonly state: 'failed'; readonly message: string }
  );

export interface Preview {
  readonly deployments: readonly DeploymentPreview[];
  /** Things `run` would decline to do, e.g. deletions refused by the prune guard. */
  readonly warnings: readonly string[];
}

/** `only` names one deployment by id or name; it was not found among the listener's. */
export class DeploymentNotFoundError extends Error {
  override readonly name = 'DeploymentNotFoundError';
  readonly code = 'DEPLOYMENT_NOT_FOUND';
  readonly deployment: string;
  constructor(deployment: string, listenerId: string) {
    super(
      `deployment ${deployment} is not a deployment of listener ${listenerId} (by id or name), nor has objects in its namespaces`,
    );
    this.deployment = deployment;
  }
}

/**
 * The preview of every deployment of the listener (or only the one named by id or name): the
 * change set of each, computed against the live cluster with dry-run requests only.
 */
export async function previewListener(options: PreviewOptions, only?: string): Promise<Preview> {
  const { client, listener, signal } = options;
  const listing = await client.listAllDeployments({ remote_reconciled: true });
  const inventories = new InventoryStore(options.kube, listener.id);
  await inventories.load(options.namespaces);
  const known = new Set(inventories.deploymentIds());
  const { mine, invalid, complete } = listenerItems(listing, listener.id, known);
  const listed = new Set([...mine.map((d) => d.id), ...invalid.map((i) => i.id)]);

  const warnings: string[] = [];
  let vanished: readonly string[] = [];
  if (!complete) {
    warnings.push(
      'the listing holds a deployment without a valid id: no deletion would be concluded from it',
    );
  } else {
    const decision = decideVanished(known, listed, options.reconcileConfig.prune);
    if (decision.allowed) vanished = decision.vanished;
    else warnings.push(`deletions refused by the safety guard: ${decision.reason}`);
  }

  const wanted = (id: string, name?: string) => only === undefined || only === id || only === name;
  const results: DeploymentPreview[] = [];
  for (const deployment of [...mine].sort(byNameThenId)) {
    if (!wanted(deployment.id, deployment.name)) continue;
    signal?.throwIfAborted();
    // As the reconciler: a suspended deployment is left as it is, even one deleted meanwhile.
    const suspension = options.suspension?.(deployment.id);
    results.push(
      suspension
        ? {
            id: deployment.id,
            name: deployment.name,
            state: 'suspended',
            suspension: describeSuspension(suspension),
          }
        : deployment.status === 'AWAITING_DELETE'
          ? await deletionPreview(options, inventories, deployment.id, deployment.name, 'AWAITING_DELETE')
          : await presentPreview(options, inventories, deployment),
    );
  }
  for (const item of invalid) {
    const { id } = item;
    if (!wanted(id, item.identity?.name)) continue;
    results.push({
      id,
      name: item.identity?.name,
      state: 'invalid',
      problems: [{ path: '(deployment)', message: item.error.message }],
    });
  }
  for (const id of vanished) {
    if (!wanted(id)) continue;
    const suspension = options.suspension?.(id);
    results.push(
      suspension
        ? { id, name: undefined, state: 'suspended', suspension: describeSuspension(suspension) }
        : await deletionPreview(options, inventories, id, undefined, 'gone'),
    );
  }
  if (only !== undefined && results.length === 0) {
    const refused = known.has(only) && !listed.has(only);
    if (!refused) throw new DeploymentNotFoundError(only, listener.id);
  }
  return { deployments: results, warnings };
}

/** The reconciler's steps for one deployment, dry: resolve, render, check, compare each object, prune. */
async function presentPreview(
  options: PreviewOptions,
  inventories: InventoryStore,
  deployment: Deployment,
): Promise<DeploymentPreview> {
  const { kube, signal } = options;
  const base = { id: deployment.id, name: deployment.name };
  const entry = resolveDesired(deployment, await options.client.listAllRevisions(deployment.id));
  // A revision it cannot read: `run` holds the deployment failed, choosing no older revision.
  if (entry.kind === 'invalid')
    return { ...base, state: 'invalid', problems: [{ path: '(revision)', message: entry.message }] };
  const rendered = renderEntry(entry, options, options.renderConfig);
  if (!rendered.ok) return { ...base, state: 'invalid', problems: rendered.error.problems };
  const { namespace, objects, revisionId } = rendered.value;
  // Without the agent's key, render's digests are unkeyed: never sent, shown or compared (the live
  // ones stand in for them in the dry run, and both sides show a mask).
  const keyed = options.digestKey !== undefined;
  const changes: ChangeSetEntry[] = [];
  const placed = inventories.get(deployment.id);
  let agentChange = false;
  try {
    const lives: (LiveKubeObject | undefined)[] = [];
    for (const object of objects) {
      const live = await kube.get(refOf(object), { signal });
      // Never adopt: `run` fails this deployment with the same reason.
      const taken = live && takenBy(object, live, deployment.id);
      if (taken) return { ...base, state: 'failed', message: taken.message };
      lives.push(live);
    }
    // The reference and host rules, as `run` meets them before anything is written.
    const guard = new ReferenceGuard({
      read: (ref, signal) => kube.get(ref, { signal }),
      kube,
      listener: () => options.listener,
      allowedNamespaces: options.allowedNamespaces,
    });
    await guard.checkReferences(deployment.id, objects, signal);
    // Without the agent's key the live digests stand in for render's: in run's verdict and in the
    // dry run alike.
    const compared = objects.map((object, i) => (keyed ? object : withLiveDigests(object, lives[i])));
    const whys = compared.map((object, i) => whyWrite(object, lives[i]));
    if (objects.some((object, i) => whys[i] !== undefined && isRouteKind(object.kind)))
      await guard.checkHosts(deployment.id, namespace, routedHosts(objects), signal);
    agentChange = restartsAsAgentChange(options, entry, rendered.value, placed, lives, whys);
    for (const [i, object] of objects.entries()) {
      const live = lives[i];
      const createOnly = isCreateOnly(object);
      const dryRun = await dryRunDiff(kube, compared[i] ?? object, live, { force: true, createOnly, signal });
      const change = keyed ? dryRun : uncompared(dryRun);
      // Run's own change (change.ts), beside what the server's dry run shows of it.
      changes.push({ ...change, ...changeOf(whys[i]) });
    }
    const previous = placed.flatMap((p) => p.inventory.entries);
    const stale = staleEntries(previous, entriesOf(objects));
    for (const entry of stale) {
      // A database dropped keeps its volume, and its credentials, while the deployment lives.
      const live = await ownedLive(options, entry, deployment.id, { keepVolumes: true });
      if (live) changes.push(pruneChange(live));
    }
    // An inventory left in a namespace the deployment moved away from goes too.
    for (const { namespace: other } of placed) {
      if (other === namespace) continue;
      const record = await ownedLive(options, inventoryRef(deployment.id, other), deployment.id, {
        keepVolumes: true,
      });
      if (record) changes.push(pruneChange(record));
    }
    // A rename's earlier names' volumes past the kept ones, as the reconciler judges at a rename
    // (it also judges when its watch cache shows them, which `diff` does not hold).
    const elsewhere = placed.map((p) => p.namespace).filter((n) => n !== namespace);
    if (stale.length > 0 || elsewhere.length > 0) {
      const where = {
        namespaces: [namespace, ...elsewhere, ...options.namespaces],
        current: renderedVolumeNames(namespace, objects),
        kept: keptVolumeCount(options.reconcileConfig.prune),
      };
      const past = await earlierVolumesPastKept(kube, options.listener.id, deployment.id, where, signal);
      for (const volume of past) changes.push(...volume.objects.map(pruneChange));
    }
  } catch (error) {
    if (error instanceof KubeApiError || error instanceof TerminalError || error instanceof WaitingError)
      return { ...base, state: 'failed', message: error.message };
    throw error;
  }
  return { ...base, state: 'present', namespace, revisionId, changes, agentChange };
}

/** Whether `run` would hold this change at the agent-change rate (agentChangeStep.ts, same test). */
function restartsAsAgentChange(
  options: PreviewOptions,
  entry: PresentEntry,
  rendered: {
    readonly namespace: string;
    readonly objects: readonly KubeObject[];
    readonly specHash: string;
  },
  placed: ReturnType<InventoryStore['get']>,
  lives: readonly (LiveKubeObject | undefined)[],
  whys: readonly ReturnType<typeof whyWrite>[],
): boolean {
  const recorded = placed.find((p) => p.namespace === rendered.namespace)?.inventory;
  const inputHash = renderInputHash(entry.deployment, entry.target.revision, options.digestKey);
  const next = renderedInventory(entry, rendered, inputHash);
  return restartsWorkloads(
    recorded,
    next,
    rendered.objects.map((object, i) => ({ object, before: lives[i], why: whys[i] })),
  );
}

/**
 * The reconciler's deletion of a deployment, dry: its inventoried objects, its database volumes
 * (claims and credentials) unless they are kept, its inventory.
 */
async function deletionPreview(
  options: PreviewOptions,
  inventories: InventoryStore,
  id: string,
  name: string | undefined,
  reason: 'AWAITING_DELETE' | 'gone',
): Promise<DeploymentPreview> {
  const changes: ChangeSetEntry[] = [];
  let objectName = name;
  try {
    for (const { namespace, inventory } of inventories.get(id)) {
      const lives: LiveKubeObject[] = [];
      const keepVolumes = options.reconcileConfig.prune.keepDatabaseVolumes;
      for (const entry of [...inventory.entries].reverse()) {
        const live = await ownedLive(options, entry, id, { keepVolumes });
        if (live) lives.push(live);
      }
      if (!keepVolumes) {
        const listed = new Set(lives.map((live) => live.metadata.uid));
        const volumes = await databaseVolumes(
          options.kube,
          namespace,
          options.listener.id,
          id,
          options.signal,
        );
        lives.push(...volumes.filter((volume) => !listed.has(volume.metadata.uid)));
      }
      const record = await ownedLive(options, inventoryRef(id, namespace), id, { keepVolumes });
      if (record) lives.push(record);
      for (const live of lives) {
        objectName ??= live.metadata.annotations[ANNOTATION_DEPLOYMENT_NAME];
        changes.push(pruneChange(live));
      }
    }
  } catch (error) {
    if (error instanceof KubeApiError)
      return { id, name: objectName, state: 'failed', message: error.message };
    throw error;
  }
  return { id, name: objectName, state: 'deleted', reason, changes };
}

/** The live object of an entry, when it exists and is the deployment's to prune (as `run` decides). */
async function ownedLive(
  options: PreviewOptions,
  entry: InventoryEntry,
  deploymentId: string,
  prune: { readonly keepVolumes: boolean },
): Promise<LiveKubeObject | undefined> {
  const live = await options.kube.get(
    { apiVersion: entry.apiVersion, kind: entry.kind, namespace: entry.namespace, name: entry.name },
    { signal: options.signal },
  );
  return live && isPruned(live, options.listener.id, deploymentId, prune.keepVolumes) ? live : undefined;
}

/** A change with its digests masked on both sides: compared without them, shown without them. */
function uncompared(change: ChangeSetEntry): ChangeSetEntry {
  const mask = (side: Record<string, unknown> | undefined) =>
    side === undefined ? undefined : maskDigests(side);
  return { ...change, before: mask(change.before), after: mask(change.after) };
}

function byNameThenId(a: Deployment, b: Deployment): number {
  return a.name.localeCompare(b.name) || a.id.localeCompare(b.id);
}
