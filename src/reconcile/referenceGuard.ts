// Whether a deployment's pods may use what they name, and its route the host it names, before
// anything of it is written (docs/design.md, "What a pod may name"): the objects its pod
// templates name and the claims its StatefulSets will bind are read and judged; a host another
// route serves is refused (routedHosts.ts).
import type { Listener } from '../controlplane/schemas/index.ts';
import type { LiveKubeObject, ObjectRef } from '../kube/index.ts';
import {
  describeHolder,
  foreignOwner,
  KEPT_VOLUME_DECISION,
  LABEL_DEPLOYMENT_ID,
} from '../objects/ownership.ts';
import type { KubeObject } from '../render/index.ts';
import { podReferences, type Reference } from '../render/references.ts';
import { Reason } from '../report/rolloutStatus.ts';
import { listRoutes } from './hostRegistry.ts';
import { entryId, entryOf } from './inventory.ts';
import type { KubeReader } from './kubeAccess.ts';
import { TerminalError, WaitingError } from './outcome.ts';
import { hostHolder } from './routedHosts.ts';
import { type TemplateClaim, templateClaims } from './templateClaims.ts';

/** The type of a Secret that holds a ServiceAccount's token: never a deployment's to name. */
const SERVICE_ACCOUNT_TOKEN = 'kubernetes.io/service-account-token';

export interface ReferenceGuardOptions {
  /** A read through the watch cache: a hit is one of this listener's objects, a miss is asked. */
  readonly read: (ref: ObjectRef, signal?: AbortSignal) => Promise<LiveKubeObject | undefined>;
  readonly kube: KubeReader;
  readonly listener: () => Listener;
  readonly allowedNamespaces: readonly string[] | undefined;
}

export class ReferenceGuard {
  readonly #o: ReferenceGuardOptions;

  constructor(options: ReferenceGuardOptions) {
    this.#o = options;
  }

  /**
   * A deployment's pods may use what it renders and what the platform team made, never another
   * deployment's objects (its database volume, its generated Secrets, its inventory) nor the
   * agent's: each Secret, ConfigMap and claim the pod templates name, other than this render's
   * own, is read. One the agent manages for anyone else (its managed-by label and another or no
   * deployment id, whatever listener label it carries), or a ServiceAccount's token Secret, is
   * refused for good. One that does not exist yet is waited for (WaitingError), nothing written:
   * a pod that named it would take whatever is made under that name later — another deployment's
   * generated Secret or claim.
   *
   * The claims its StatefulSets will bind (templateClaims.ts) are read too: the controller binds
   * an existing claim by name, so a kept volume of a deleted deployment, or one the platform made,
   * would become this deployment's database. Such a claim is this deployment's by its
   * deployment-id label alone; any other is waited on, named with whose it is and that the
   * platform team decides, and the same revision goes on once it has.
   */
  async checkReferences(
    deploymentId: string,
    objects: readonly KubeObject[],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    // This render's own objects: the applier's readOwned already refused any of their names that is taken.
    const rendered = new Set(objects.map((object) => entryId(entryOf(object))));
    type Looked = { ref: ObjectRef & { namespace: string }; named: Reference[]; bound: TemplateClaim[] };
    const byId = new Map<string, Looked>();
    const look = (ref: Looked['ref']) => {
      const id = entryId(ref);
      const seen = byId.get(id) ?? { ref, named: [], bound: [] };
      byId.set(id, seen);
      return seen;
    };
    for (const reference of podReferences(objects)) {
      const { kind, namespace, name } = reference;
      const ref = { apiVersion: 'v1', kind, namespace, name };
      if (!rendered.has(entryId(ref))) look(ref).named.push(reference);
    }
    for (const claim of templateClaims(objects))
      look({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: claim.namespace,
        name: claim.name,
      }).bound.push(claim);
    // At once, each name once. A hit of the watch cache is one of this listener's objects; a miss
    // proves nothing (the platform's Secrets, another listener's objects are not watched): asked.
    const looked = [...byId.values()];
    const found = await Promise.all(looked.map(({ ref }) => this.#o.read(ref, signal)));
    const foreign: string[] = [];
    const missing: string[] = [];
    const taken: string[] = [];
    for (const [i, { ref, named, bound }] of looked.entries()) {
      const live = found[i];
      const what = `${ref.kind}/${ref.name}`;
      if (!live) {
        // Its own StatefulSets' claims are made when they run: checked like the rest once there.
        if (bound.length === 0)
          for (const { path } of named) missing.push(`${path} names ${what}, which does not exist yet`);
        continue;
      }
      const owner = foreignOwner(live, deploymentId, this.#o.listener().id);
      if (owner) for (const { path } of named) foreign.push(`${path} names ${what}, which ${owner}`);
      // A token Secret is the identity of a ServiceAccount, whatever the Secret patterns allow.
      else if (ref.kind === 'Secret' && live.type === SERVICE_ACCOUNT_TOKEN)
        for (const { path } of named)
          foreign.push(
            `${path} names ${what}, which holds a ServiceAccount token (${SERVICE_ACCOUNT_TOKEN})`,
          );
      if (live.metadata.labels[LABEL_DEPLOYMENT_ID] === deploymentId) continue;
      for (const { path } of bound)
        taken.push(
          `${path} would bind ${what}, which exists and ${describeHolder(live)}: ${KEPT_VOLUME_DECISION}`,
        );
    }
    if (foreign.length > 0)
      throw new TerminalError(Reason.ForeignReference, [...foreign, ...taken, ...missing].join('; '));
    if (taken.length > 0)
      throw new WaitingError(
        Reason.ClaimTaken,
        deploymentId,
        `${[...taken, ...missing].join('; ')}; nothing is applied until then`,
      );
    if (missing.length > 0)
      throw new WaitingError(
        Reason.ReferenceMissing,
        deploymentId,
        `${missing.join('; ')}: nothing is applied until it exists`,
      );
  }

  /**
   * Refuses a host another route already serves (routedHosts.ts): this listener's routes and
   * everyone else's, Ingresses and HTTPRoutes alike whichever this configuration renders, in the
   * namespaces it serves, read from the API server (the watches see only this listener's)
   * (hostRegistry.ts). The host's lock is held by the caller from here to the route's write.
   */
  async checkHosts(
    deploymentId: string,
    namespace: string,
    hosts: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const namespaces = new Set([
      namespace,
      ...(this.#o.listener().compute_config?.k8s_namespaces ?? []).filter(
        (n) => this.#o.allowedNamespaces?.includes(n) ?? true,
      ),
    ]);
    const routes = await listRoutes(this.#o.kube, [...namespaces], deploymentId, signal);
    const taken: string[] = [];
    for (const host of hosts) {
      const holder = hostHolder(host, routes, deploymentId, this.#o.listener().id);
      if (holder) taken.push(`source_config.custom_url: host ${host} is already routed to ${holder}`);
    }
    if (taken.length > 0)
      throw new WaitingError(
        Reason.HostTaken,
        deploymentId,
        `${taken.join('; ')}: nothing is applied while another holds it`,
      );
  }
}
