// Gathers what `k8s-listener status` shows, read-only: this listener's deployments from the control
// plane (target revision by the agent's own rules), rendered as the agent would, next to their
// inventories, status annotations, live objects and Events in the cluster. The rows themselves are
// derived by the pure functions of src/report/deploymentStatusRow.ts.

import type { ControlPlaneClient } from '../controlplane/client.ts';
import type { Deployment } from '../controlplane/schemas/index.ts';
import { type KubeClient, KubeUnsupportedKindError, type LiveKubeObject } from '../kube/index.ts';
import { fieldAt } from '../objects/fields.ts';
import { formatLocalRef } from '../objects/objectRef.ts';
import {
  ANNOTATION_DEPLOYMENT_NAME,
  ANNOTATION_SPEC_HASH,
  ANNOTATION_STATUS,
  isCreateOnly,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
} from '../objects/ownership.ts';
import {
  type DesiredEntry,
  renderEntry,
  renderedInventory,
  resolveDesired,
} from '../reconcile/loop/desiredState.ts';
import { listenerItems } from '../reconcile/loop/listenerItems.ts';
import { managedNamespaces } from '../reconcile/policy/managedNamespaces.ts';
import { readSuspensions, suspensionOf, suspensionsRef } from '../reconcile/policy/suspensions.ts';
import { renderInputHash, restartsWorkloads } from '../reconcile/steps/agentChange.ts';
import { driftPath } from '../reconcile/steps/drift.ts';
import { entryId, entryOf, type InventoryEntry } from '../reconcile/steps/inventory.ts';
import { InventoryStore, inventoryRef, inventorySelector } from '../reconcile/steps/inventoryStore.ts';
import { type KubeObject, RenderConfig, type RenderResult } from '../render/index.ts';
import {
  type DeploymentDetail,
  deriveStatusRow,
  type EventRow,
  type ObservedObject,
  objectStatusRows,
  type StatusRow,
  withAgentChangeWaiting,
  withSuspension,
} from '../report/deploymentStatusRow.ts';
import { DEFAULT_FAILURE_GRACE_MS } from '../report/rolloutHealth.ts';
import { parseStatusAnnotation, type StatusAnnotation } from '../report/statusAnnotation.ts';

export interface StatusSources {
  readonly controlPlane: ControlPlaneClient;
  readonly kube: KubeClient;
  readonly listenerId: string;
  /** The agent's namespace allow-list (its configuration); undefined: the listener's namespaces. */
  readonly allowedNamespaces?: readonly string[] | undefined;
  /** Never managed; where the digest key lives. */
  readonly agentNamespace: string;
  /** The agent's digest key: rendered objects carry the digests the agent writes. */
  readonly digestKey?: Uint8Array | undefined;
  /** The agent's render configuration, so that the desired objects are the ones it applies. */
  readonly renderConfig?: RenderConfig | undefined;
  /** The agent's grace period for persistent failures (reconcile.failureGraceMs). */
  readonly failureGraceMs?: number | undefined;
  readonly now?: (() => number) | undefined;
}

/** `status DEPLOYMENT` names no deployment of this listener, or more than one. */
export class StatusLookupError extends Error {
  override readonly name = 'StatusLookupError';
  readonly code = 'STATUS_LOOKUP';
  readonly deployment: string;
  constructor(deployment: string, message: string) {
    super(message);
    this.deployment = deployment;
  }
}

/** Reading the cluster failed in one namespace: nothing partial is shown. */
export class StatusCollectError extends Error {
  override readonly name = 'StatusCollectError';
  readonly code = 'STATUS_COLLECT';
  readonly namespace: string;
  constructor(namespace: string, what: string, cause: unknown) {
    super(
      `reading ${what} in namespace ${namespace} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.namespace = namespace;
  }
}

/** An observed object with the kube layer's typed metadata. */
interface ObservedKubeObject extends ObservedObject {
  readonly live: LiveKubeObject | undefined;
}

interface Observation {
  readonly row: StatusRow;
  readonly objects: readonly ObservedKubeObject[];
  readonly claims: readonly LiveKubeObject[];
}

const REVISION_CONCURRENCY = 8;
const MAX_EVENTS = 20;

/** One row per deployment of the listener (remote_reconciled, bound to it), sorted by namespace and name. */
export async function collectStatusRows(sources: StatusSources): Promise<StatusRow[]> {
  return (await observe(sources)).map((o) => o.row);
}

/** One deployment, by name or id: its row, its objects with their kstatus status, its recent Events. */
export async function collectDeploymentDetail(
  sources: StatusSources,
  nameOrId: string,
): Promise<DeploymentDetail> {
  const observations = await observe(sources);
  const byId = observations.filter((o) => o.row.id === nameOrId);
  const matches = byId.length > 0 ? byId : observations.filter((o) => o.row.name === nameOrId);
  const [found, ...more] = matches;
  if (!found)
    throw new StatusLookupError(nameOrId, `no deployment named ${nameOrId} is bound to this listener`);
  if (more.length > 0) {
    throw new StatusLookupError(
      nameOrId,
      `${matches.length} deployments are named ${nameOrId}; give one id: ${matches.map((m) => m.row.id).join(', ')}`,
    );
  }
  const now = (sources.now ?? Date.now)();
  const namespace = found.row.namespace;
  return {
    listenerId: sources.listenerId,
    observedAt: new Date(now).toISOString(),
    deployment: found.row,
    objects: objectStatusRows(found.objects, found.claims, {
      now,
      failureGraceMs: sources.failureGraceMs ?? DEFAULT_FAILURE_GRACE_MS,
    }),
    events: namespace ? await eventsOf(sources.kube, namespace, found) : [],
  };
}

async function observe(sources: StatusSources): Promise<Observation[]> {
  const { controlPlane, kube, listenerId } = sources;
  const now = (sources.now ?? Date.now)();
  const failureGraceMs = sources.failureGraceMs ?? DEFAULT_FAILURE_GRACE_MS;
  const renderConfig = sources.renderConfig ?? RenderConfig.parse({});

  // The control plane: the listener, then a complete listing of its deployments.
  const listener = await controlPlane.getListener(listenerId);
  const listing = await controlPlane.listAllDeployments({ remote_reconciled: true });
  // Whose each listed item is, as the poller decides; what it has objects of is read below.
  const deployments = listenerItems(listing, listenerId, new Set()).mine;
  // As the poller (desiredState.ts): a revision that cannot be read makes its deployment invalid,
  // never an older target; the others rendered as the agent renders them.
  const revisionListings = await mapLimit(deployments, REVISION_CONCURRENCY, (deployment) =>
    controlPlane.listAllRevisions(deployment.id),
  );
  const entries = deployments.map((deployment, i) =>
    resolveDesired(deployment, revisionListings[i] ?? { items: [], invalid: [] }),
  );
  const targets = entries.map((entry) => (entry.kind === 'present' ? entry.target : undefined));
  const context = { listener, allowedNamespaces: sources.allowedNamespaces, digestKey: sources.digestKey };
  const rendered = entries.map((entry) =>
    entry.kind === 'present' ? renderEntry(entry, context, renderConfig) : undefined,
  );
  // The cluster: inventories (with the status annotation), owned objects and claims per namespace.
  const namespaces = managedNamespaces(listener, sources.allowedNamespaces, sources.agentNamespace);
  const inventories = new InventoryStore(kube, listenerId);
  await inventories.load(namespaces).catch((error: unknown) => {
    throw new StatusCollectError(namespaces.join(','), 'inventories', error);
  });
  const { live, claims, annotations } = await readCluster(
    kube,
    listenerId,
    kindsToRead(namespaces, rendered, inventories),
  );

  const observations: Observation[] = [];
  const listed = new Set<string>();
  /** Deployments whose change from the agent itself waits for the agent change rate. */
  const agentChanges = new Set<string>();
  deployments.forEach((deployment, i) => {
    listed.add(deployment.id);
    const target = targets[i];
    const result = rendered[i];
    const recorded = inventories.get(deployment.id).flatMap((p) => p.inventory.entries);
    const desired = result?.ok ? result.value.objects : [];
    const objects = observeObjects(desired, recorded, live);
    const deploymentClaims = claims.get(deployment.id) ?? [];
    const namespace = result?.ok
      ? result.value.namespace
      : (deployment.source_config.listener_config?.k8s_namespace ?? undefined);
    if (waitsForAgentChange(sources, entries[i], result, inventories, objects))
      agentChanges.add(deployment.id);
    observations.push({
      row: deriveStatusRow({
        id: deployment.id,
        name: deployment.name,
        namespace,
        revisionId: target?.revision?.id ?? deployment.latest_revision_id ?? undefined,
        revisionStatus: target?.revision?.status,
        revisionUpdatedAt: target?.revision?.updated_at,
        settled: target?.settled,
        deleting: deletingReason(deployment),
        invalid:
          (entries[i]?.kind === 'invalid' ? entries[i].message : undefined) ??
          (result && !result.ok ? result.error.message : undefined),
        annotation: annotations.get(deployment.id),
        objects,
        claims: deploymentClaims,
        now,
        failureGraceMs,
        statusNotes: result?.ok ? result.value.statusNotes : undefined,
      }),
      objects,
      claims: deploymentClaims,
    });
  });

  // Listed but failing validation (the agent keeps their objects and reports them failed), or
  // gone from the listing while their objects remain (the agent removes them).
  const invalid = new Map(
    listing.invalid.flatMap((item) => (item.id ? [[item.id, item.error.message]] : [])),
  );
  // Failing validation before the agent wrote anything: this listener's when its id says so.
  for (const item of listenerItems(listing, listenerId, new Set(inventories.deploymentIds())).invalid) {
    if (inventories.get(item.id).length > 0) continue;
    listed.add(item.id);
    observations.push({
      row: deriveStatusRow({
        id: item.id,
        name: item.identity?.name ?? item.id,
        namespace: item.identity?.namespace,
        revisionId: item.identity?.latestRevisionId,
        revisionStatus: undefined,
        revisionUpdatedAt: undefined,
        settled: undefined,
        deleting: undefined,
        invalid: item.error.message,
        annotation: annotations.get(item.id),
        objects: [],
        claims: [],
        now,
        failureGraceMs,
      }),
      objects: [],
      claims: [],
    });
  }
  for (const id of inventories.deploymentIds()) {
    if (listed.has(id)) continue;
    const recorded = inventories.get(id).flatMap((p) => p.inventory.entries);
    const objects = observeObjects([], recorded, live);
    const deploymentClaims = claims.get(id) ?? [];
    const message = invalid.get(id);
    observations.push({
      row: deriveStatusRow({
        id,
        name: nameFromObjects(objects) ?? id,
        namespace: inventories.get(id)[0]?.namespace,
        revisionId: inventories.get(id)[0]?.inventory.revisionId,
        revisionStatus: undefined,
        revisionUpdatedAt: undefined,
        settled: undefined,
        deleting:
          message === undefined
            ? 'no longer listed by the control plane: the agent removes its objects'
            : undefined,
        invalid: message,
        annotation: annotations.get(id),
        objects,
        claims: deploymentClaims,
        now,
        failureGraceMs,
      }),
      objects,
      claims: deploymentClaims,
    });
  }
  for (const [i, o] of observations.entries())
    if (agentChanges.has(o.row.id)) observations[i] = { ...o, row: withAgentChangeWaiting(o.row, true) };
  // What operators suspended: shown over what the objects would show.
  const suspensions = readSuspensions(
    await kube.get(suspensionsRef(sources.agentNamespace)).catch((error: unknown) => {
      throw new StatusCollectError(sources.agentNamespace, 'the suspensions', error);
    }),
    listenerId,
  );
  return observations
    .map((o) => {
      const active = suspensionOf(suspensions, o.row.id);
      return active
        ? {
            ...o,
            row: withSuspension(o.row, {
              scope: active.scope,
              by: active.by,
              at: active.at,
              reason: active.reason,
            }),
          }
        : o;
    })
    .sort(
      (a, b) =>
        (a.row.namespace ?? '').localeCompare(b.row.namespace ?? '') || a.row.name.localeCompare(b.row.name),
    );
}

/**
 * As the reconciler decides (agentChange.ts): the same revision and input, recorded under another
 * spec hash, with a live workload not yet at the new render — the agent holds it for its turn.
 */
function waitsForAgentChange(
  sources: StatusSources,
  entry: DesiredEntry | undefined,
  result: RenderResult | undefined,
  inventories: InventoryStore,
  objects: readonly ObservedKubeObject[],
): boolean {
  if (entry?.kind !== 'present' || !result?.ok) return false;
  const { deployment, target } = entry;
  const recorded = inventories
    .get(deployment.id)
    .find((p) => p.namespace === result.value.namespace)?.inventory;
  const inputHash = renderInputHash(deployment, target.revision, sources.digestKey);
  const next = renderedInventory(entry, result.value, inputHash);
  // The run's own test (agentChange.ts): a desired object not as applied is one the run would write.
  const planned = objects
    .filter((o) => o.desired)
    .map((o) => ({ object: o.ref, before: o.live, why: o.applied ? undefined : { kind: 'spec-changed' } }));
  return restartsWorkloads(recorded, next, planned);
}

type KindsByNamespace = Map<string, Map<string, { apiVersion: string; kind: string }>>;

/** Every kind, per namespace, that the rendered objects or the inventories hold, and claims. */
function kindsToRead(
  namespaces: readonly string[],
  rendered: readonly (RenderResult | undefined)[],
  inventories: InventoryStore,
): KindsByNamespace {
  const kinds: KindsByNamespace = new Map();
  const add = (namespace: string, apiVersion: string, kind: string) => {
    const here = kinds.get(namespace) ?? new Map();
    here.set(`${apiVersion}/${kind}`, { apiVersion, kind });
    kinds.set(namespace, here);
  };
  for (const namespace of namespaces) add(namespace, 'v1', 'PersistentVolumeClaim');
  for (const result of rendered) {
    if (!result?.ok) continue;
    for (const object of result.value.objects) add(result.value.namespace, object.apiVersion, object.kind);
  }
  for (const id of inventories.deploymentIds())
    for (const placed of inventories.get(id))
      for (const entry of placed.inventory.entries) add(entry.namespace, entry.apiVersion, entry.kind);
  return kinds;
}

interface ClusterView {
  /** This listener's objects by inventory entry id. */
  readonly live: ReadonlyMap<string, LiveKubeObject>;
  /** Volume claims by deployment id. */
  readonly claims: ReadonlyMap<string, LiveKubeObject[]>;
  /** The status annotation of each inventory, by deployment id. */
  readonly annotations: ReadonlyMap<string, StatusAnnotation>;
}

/** One list per kind and namespace (this listener's label), not one request per object. */
async function readCluster(
  kube: KubeClient,
  listenerId: string,
  kinds: KindsByNamespace,
): Promise<ClusterView> {
  const live = new Map<string, LiveKubeObject>();
  const claims = new Map<string, LiveKubeObject[]>();
  const annotations = new Map<string, StatusAnnotation>();
  const ownedBy = `${LABEL_LISTENER_ID}=${listenerId}`;
  for (const [namespace, here] of kinds) {
    for (const kind of here.values()) {
      let items: LiveKubeObject[];
      try {
        items = await kube.list(kind, { namespace, labelSelector: ownedBy });
      } catch (error) {
        if (error instanceof KubeUnsupportedKindError) continue;
        throw new StatusCollectError(namespace, `${kind.kind} objects`, error);
      }
      for (const item of items) {
        live.set(entryId(entryOf(item)), item);
        const owner = item.metadata.labels[LABEL_DEPLOYMENT_ID];
        if (kind.kind === 'PersistentVolumeClaim' && owner)
          claims.set(owner, [...(claims.get(owner) ?? []), item]);
      }
    }
    const inventoryMaps = await kube
      .list('ConfigMap', { namespace, labelSelector: inventorySelector(listenerId) })
      .catch((error: unknown) => {
        throw new StatusCollectError(namespace, 'inventories', error);
      });
    for (const map of inventoryMaps) {
      const annotation = parseStatusAnnotation(map.metadata.annotations[ANNOTATION_STATUS]);
      const owner = map.metadata.labels[LABEL_DEPLOYMENT_ID];
      if (annotation && owner) annotations.set(owner, annotation);
    }
  }
  return { live, claims, annotations };
}

function deletingReason(deployment: Deployment): string | undefined {
  return deployment.status === 'AWAITING_DELETE'
    ? 'AWAITING_DELETE: the agent removes its objects'
    : undefined;
}

/** The desired objects, then recorded ones no longer desired (to be pruned), each with its live object. */
function observeObjects(
  desired: readonly KubeObject[],
  recorded: readonly InventoryEntry[],
  live: ReadonlyMap<string, LiveKubeObject>,
): ObservedKubeObject[] {
  const recordedIds = new Set(recorded.map(entryId));
  const observed: ObservedKubeObject[] = desired.map((object) => {
    const entry = entryOf(object);
    const current = live.get(entryId(entry));
    // A create-only Secret is generated once and never written again: it is applied once it
    // exists (its spec hash stays that of its creation), and never compared (its values are the cluster's).
    const createOnly = isCreateOnly(object);
    const applied =
      current !== undefined &&
      (createOnly ||
        current.metadata.annotations[ANNOTATION_SPEC_HASH] ===
          object.metadata.annotations[ANNOTATION_SPEC_HASH]);
    const compared = applied && !createOnly;
    return {
      ref: entry,
      component: object.metadata.labels[LABEL_COMPONENT] ?? 'main',
      live: current,
      desired: true,
      recorded: recordedIds.has(entryId(entry)),
      applied,
      drift: compared ? driftPath(object, current) : undefined,
    };
  });
  const desiredIds = new Set(observed.map((o) => entryId(o.ref)));
  for (const entry of recorded) {
    if (desiredIds.has(entryId(entry))) continue;
    const current = live.get(entryId(entry));
    observed.push({
      ref: entry,
      component: current?.metadata.labels[LABEL_COMPONENT] ?? 'main',
      live: current,
      desired: false,
      recorded: true,
      applied: current !== undefined,
      drift: undefined,
    });
  }
  return observed;
}

function nameFromObjects(objects: readonly ObservedKubeObject[]): string | undefined {
  for (const o of objects) {
    const name = o.live?.metadata.annotations[ANNOTATION_DEPLOYMENT_NAME];
    if (name) return name;
  }
  return undefined;
}

/** Recent Events about the deployment's objects, its pods and ReplicaSets, oldest first. */
async function eventsOf(kube: KubeClient, namespace: string, found: Observation): Promise<EventRow[]> {
  const selector = `${LABEL_DEPLOYMENT_ID}=${found.row.id}`;
  const [pods, replicaSets, events] = await Promise.all([
    kube.list('Pod', { namespace, labelSelector: selector }),
    kube.list('ReplicaSet', { namespace, labelSelector: selector }),
    kube.list('Event', { namespace }),
  ]).catch((error: unknown) => {
    throw new StatusCollectError(namespace, 'events', error);
  });
  const subjects = new Set([
    ...found.objects.map((o) => formatLocalRef(o.ref)),
    ...found.claims.map((c) => `PersistentVolumeClaim/${c.metadata.name}`),
    ...pods.map((p) => `Pod/${p.metadata.name}`),
    ...replicaSets.map((r) => `ReplicaSet/${r.metadata.name}`),
    // The inventory: where the agent tells what concerns the whole deployment (suspended, resumed).
    formatLocalRef(inventoryRef(found.row.id, namespace)),
  ]);
  return events
    .map(eventRow)
    .filter((e) => subjects.has(e.object))
    .sort((a, b) => timeOf(a) - timeOf(b))
    .slice(-MAX_EVENTS);
}

const timeOf = (event: EventRow): number => (event.time ? Date.parse(event.time) || 0 : 0);

function eventRow(event: LiveKubeObject): EventRow {
  const field = (...path: string[]): unknown => fieldAt(event, ...path);
  const text = (...path: string[]) => {
    const value = field(...path);
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const seriesCount = field('series', 'count');
  const deprecatedCount = field('deprecatedCount');
  return {
    time:
      text('series', 'lastObservedTime') ??
      text('eventTime') ??
      text('deprecatedLastTimestamp') ??
      (event.metadata.creationTimestamp || null),
    type: text('type') ?? 'Normal',
    reason: text('reason') ?? '',
    object: `${text('regarding', 'kind') ?? '?'}/${text('regarding', 'name') ?? '?'}`,
    message: text('note') ?? '',
    count:
      typeof seriesCount === 'number'
        ? seriesCount
        : typeof deprecatedCount === 'number'
          ? deprecatedCount
          : 1,
  };
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
