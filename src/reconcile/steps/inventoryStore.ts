// Keeps each deployment's inventory in a ConfigMap the agent owns, in the deployment's namespace,
// so that it survives restarts and a leader change. A cache mirrors what the leader wrote.
import { z } from 'zod';
import { parseJsonOrUndefined } from '../../jsonText.ts';
import { findResourceType } from '../../kube/resources.ts';
import { configMapData } from '../../objects/fields.ts';
import type { KubeObject } from '../../objects/kubeObject.ts';
import {
  AGENT_NAME,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../objects/ownership.ts';
import type { KubeReader, KubeWriter } from '../kubeAccess.ts';
import { INVENTORY_KINDS } from '../policy/watchedKinds.ts';
import type { Inventory, InventoryEntry } from './inventory.ts';

const COMPONENT = 'inventory';
const StoredInventory = z.object({
  deploymentId: z.string(),
  specHash: z.string(),
  revisionId: z.string().optional(),
  inputHash: z.string().optional(),
  entries: z.array(
    z.object({ apiVersion: z.string(), kind: z.string(), namespace: z.string(), name: z.string() }),
  ),
});

export interface PlacedInventory {
  readonly namespace: string;
  readonly inventory: Inventory;
  /** The ConfigMap's uid as last read or written: its removal is conditional on it. */
  readonly uid?: string | undefined;
}

/** An inventory ConfigMap that does not hold together: reported, never trusted to delete. */
export interface RejectedInventory {
  readonly namespace: string;
  readonly name: string;
  readonly problems: readonly string[];
}

export function inventoryName(deploymentId: string): string {
  return `k8s-listener-inv-${deploymentId}`;
}

/**
 * A deployment's inventory ConfigMap in one namespace: where the agent records what it wrote, and
 * the object of the Events and the status annotation about the whole deployment.
 */
export function inventoryRef(deploymentId: string, namespace: string): InventoryEntry {
  return { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: inventoryName(deploymentId) };
}

/** The label selector of this listener's inventory ConfigMaps. */
export function inventorySelector(listenerId: string): string {
  return `${LABEL_LISTENER_ID}=${listenerId},${LABEL_COMPONENT}=${COMPONENT}`;
}

/** What the store asks of the Kubernetes client: listings to load, an apply and a delete to keep. */
export type InventoryKube = Pick<KubeReader, 'list'> & Pick<KubeWriter, 'apply' | 'delete'>;

export class InventoryStore {
  readonly #kube: InventoryKube;
  readonly #listenerId: string;
  readonly #cache = new Map<string, PlacedInventory[]>();
  readonly #onRejected: (rejected: RejectedInventory) => void;
  readonly #onWritten: (written: Awaited<ReturnType<InventoryKube['apply']>>) => void;

  /**
   * `onWritten` is given the server's answer to each inventory written: the leader's watch cache
   * takes it, so that the watch's echo of the agent's own write wakes nothing.
   */
  constructor(
    kube: InventoryKube,
    listenerId: string,
    onRejected: (rejected: RejectedInventory) => void = () => {},
    onWritten: (written: Awaited<ReturnType<InventoryKube['apply']>>) => void = () => {},
  ) {
    this.#kube = kube;
    this.#listenerId = listenerId;
    this.#onRejected = onRejected;
    this.#onWritten = onWritten;
  }

  /** Reads every inventory of this listener in the given namespaces (complete, or throws). */
  async load(namespaces: readonly string[], signal?: AbortSignal): Promise<void> {
    this.#cache.clear();
    for (const namespace of namespaces) await this.add(namespace, signal);
  }

  /** Reads the inventories of one more namespace (one added to the listener while leading). */
  async add(namespace: string, signal?: AbortSignal): Promise<void> {
    const items = await this.#kube.list('ConfigMap', {
      namespace,
      labelSelector: inventorySelector(this.#listenerId),
      signal,
    });
    for (const item of items) {
      const name = item.metadata.name;
      const parsed = StoredInventory.safeParse(parseJsonOrUndefined(configMapData(item).inventory));
      const problems = parsed.success
        ? inventoryProblems(parsed.data, name, namespace, item.metadata.labels[LABEL_DEPLOYMENT_ID])
        : ['its data is not an inventory record'];
      if (!parsed.success || problems.length > 0) {
        this.#onRejected({ namespace, name, problems });
        continue;
      }
      const id = parsed.data.deploymentId;
      const others = (this.#cache.get(id) ?? []).filter((p) => p.namespace !== namespace);
      this.#cache.set(id, [
        ...others,
        { namespace, inventory: toInventory(parsed.data), uid: item.metadata.uid },
      ]);
    }
  }

  deploymentIds(): string[] {
    return [...this.#cache.keys()];
  }

  get(deploymentId: string): readonly PlacedInventory[] {
    return this.#cache.get(deploymentId) ?? [];
  }

  /**
   * Writes the inventory in `namespace` with a server-side apply. An unchanged inventory makes no
   * request: when the stored one (what this store last wrote or loaded there) is the same, entry
   * for entry and in order, nothing is sent.
   */
  async write(namespace: string, inventory: Inventory, signal?: AbortSignal): Promise<void> {
    const stored = this.get(inventory.deploymentId).find((p) => p.namespace === namespace);
    if (stored && sameStoredInventory(stored.inventory, inventory)) return;
    const object: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: inventoryName(inventory.deploymentId),
        namespace,
        labels: {
          [LABEL_MANAGED_BY]: AGENT_NAME,
          [LABEL_LISTENER_ID]: this.#listenerId,
          [LABEL_DEPLOYMENT_ID]: inventory.deploymentId,
          [LABEL_COMPONENT]: COMPONENT,
        },
        annotations: {},
      },
      data: { inventory: JSON.stringify({ ...inventory, entries: [...inventory.entries] }) },
    };
    const written = await this.#kube.apply(object, { force: true, signal });
    this.#onWritten(written);
    const others = this.get(inventory.deploymentId).filter((p) => p.namespace !== namespace);
    this.#cache.set(inventory.deploymentId, [...others, { namespace, inventory, uid: written.metadata.uid }]);
  }

  /** Deletes the inventory this store read or wrote (its uid), not one made since under its name. */
  async remove(deploymentId: string, namespace: string, signal?: AbortSignal): Promise<void> {
    const uid = this.get(deploymentId).find((p) => p.namespace === namespace)?.uid;
    await this.#kube.delete(inventoryRef(deploymentId, namespace), { signal, preconditionUid: uid });
    const rest = this.get(deploymentId).filter((p) => p.namespace !== namespace);
    if (rest.length === 0) this.#cache.delete(deploymentId);
    else this.#cache.set(deploymentId, rest);
  }
}

/** The same stored record: fields, and entries in the same order (pruning follows that order). */
function sameStoredInventory(a: Inventory, b: Inventory): boolean {
  return (
    a.deploymentId === b.deploymentId &&
    a.specHash === b.specHash &&
    a.revisionId === b.revisionId &&
    a.inputHash === b.inputHash &&
    a.entries.length === b.entries.length &&
    a.entries.every((entry, i) => {
      const other = b.entries[i];
      return (
        other !== undefined &&
        entry.apiVersion === other.apiVersion &&
        entry.kind === other.kind &&
        entry.namespace === other.namespace &&
        entry.name === other.name
      );
    })
  );
}

/**
 * What makes a stored inventory untrustworthy: a record of another deployment than its name and
 * label say, or an entry outside its own namespace or of a kind render never writes. Pruning
 * deletes what an inventory lists, so one that does not hold together is never used.
 */
export function inventoryProblems(
  stored: z.infer<typeof StoredInventory>,
  name: string,
  namespace: string,
  labelDeploymentId: string | undefined,
): string[] {
  const problems: string[] = [];
  if (name !== inventoryName(stored.deploymentId))
    problems.push(`its name is not the one of deployment ${stored.deploymentId}'s inventory`);
  if (labelDeploymentId !== stored.deploymentId)
    problems.push(`its ${LABEL_DEPLOYMENT_ID} label does not match its deploymentId`);
  stored.entries.forEach((entry, i) => {
    if (entry.namespace !== namespace)
      problems.push(`entries[${i}] is in another namespace (${entry.namespace})`);
    if (!INVENTORY_KINDS.has(entry.kind) || findResourceType(entry.apiVersion, entry.kind) === undefined)
      problems.push(`entries[${i}] is a ${entry.apiVersion} ${entry.kind}, not a kind the agent writes`);
  });
  return problems;
}

function toInventory(stored: z.infer<typeof StoredInventory>): Inventory {
  const entries: InventoryEntry[] = stored.entries;
  return {
    deploymentId: stored.deploymentId,
    specHash: stored.specHash,
    revisionId: stored.revisionId,
    inputHash: stored.inputHash,
    entries,
  };
}
