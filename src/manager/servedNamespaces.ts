// The namespaces one leader serves, following its listener: those the listener lists and the
// agent's allow-list keeps, each served (watched, a valid target) once its inventories are read.
// A namespace added to the listener is served without a restart; one taken off is refused as a
// target from the next render on.
import type { ControlPlaneClient } from '../controlplane/client.ts';
import type { Listener } from '../controlplane/schemas/index.ts';
import { managedNamespaces } from '../reconcile/policy/managedNamespaces.ts';
import type { InventoryStore } from '../reconcile/steps/inventoryStore.ts';
import type { RegisterOptions, Registration } from './registration.ts';
import { retryUntilAborted } from './retryUntilAborted.ts';

export interface ServedNamespacesOptions
  extends Pick<RegisterOptions, 'allowedNamespaces' | 'agentNamespace' | 'logger'> {
  readonly controlPlane: Pick<ControlPlaneClient, 'getListener'>;
  /** The listener and its namespaces as registered: served first. */
  readonly registration: Registration;
}

export class ServedNamespaces {
  readonly #o: ServedNamespacesOptions;
  #listener: Listener;
  #served: string[] = [];

  constructor(options: ServedNamespacesOptions) {
    this.#o = options;
    this.#listener = options.registration.listener;
  }

  /** The listener as last read, its namespaces cut (once followed) to those served. */
  get listener(): Listener {
    return this.#listener;
  }

  /** Namespaces whose inventories are loaded and whose objects are watched. */
  get served(): readonly string[] {
    return this.#served;
  }

  /** The listener as the control plane stored it when the agent recorded its version on it. */
  recorded(listener: Listener): void {
    this.#listener = listener;
  }

  /**
   * Serves the registered namespaces once their inventories are read, retrying until they are;
   * false when the signal ended it.
   */
  async load(inventories: Pick<InventoryStore, 'load'>, signal: AbortSignal): Promise<boolean> {
    const { namespaces } = this.#o.registration;
    const loaded = await retryUntilAborted(
      async () => {
        await inventories.load(namespaces, signal);
        return [...namespaces];
      },
      {
        signal,
        firstDelayMs: 1_000,
        onFailure: (error, attempt) =>
          this.#o.logger.warn({ err: error, attempt }, 'reading inventories failed; retrying'),
      },
    );
    if (loaded === undefined) return false;
    this.#served = loaded;
    return true;
  }

  /**
   * Re-reads the listener: a namespace it adds is served once its inventories are read (`serve`
   * starts its watches), one it takes off stops being a target. Returns whether what is served
   * changed.
   */
  async follow(
    inventories: Pick<InventoryStore, 'add'>,
    serve: (namespace: string) => void,
    signal: AbortSignal,
  ): Promise<boolean> {
    const log = this.#o.logger;
    let fresh: Listener;
    try {
      fresh = await this.#o.controlPlane.getListener(this.#listener.id, { signal });
    } catch (error) {
      if (!signal.aborted) log.warn({ err: error }, 'reading the listener failed; keeping the last one read');
      return false;
    }
    const before = this.#listener.compute_config?.k8s_namespaces ?? [];
    let changed = false;
    const wanted = managedNamespaces(fresh, this.#o.allowedNamespaces, this.#o.agentNamespace);
    for (const namespace of wanted.filter((n) => !this.#served.includes(n))) {
      // Its inventories first: what this listener already has there must be known before the
      // first reconcile of a deployment there (for pruning).
      try {
        await inventories.add(namespace, signal);
      } catch (error) {
        if (signal.aborted) return false;
        log.warn(
          { err: error, namespace },
          'reading the inventories of an added namespace failed; retrying at the next poll',
        );
        continue;
      }
      this.#served = [...this.#served, namespace];
      serve(namespace);
      changed = true;
      log.info({ namespace }, 'namespace added to the listener: watching and serving it');
    }
    // A namespace not served yet (its inventories unread) is not a target yet either. One taken
    // off keeps its watch (its objects stay, and a hand edit there still wakes its deployment,
    // which then fails with that reason), and the listener read refuses it as a target.
    const after = (fresh.compute_config?.k8s_namespaces ?? []).filter(
      (n) => !wanted.includes(n) || this.#served.includes(n),
    );
    this.#listener = { ...fresh, compute_config: { ...fresh.compute_config, k8s_namespaces: after } };
    if (before.join(',') !== after.join(',')) {
      log.warn({ before, after }, 'the listener namespaces changed');
      changed = true;
    }
    return changed;
  }
}
