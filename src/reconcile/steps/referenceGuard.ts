// Whether a deployment's pods may use what they name, and its route the host it names, before
// anything of it is written (docs/design.md, "What a pod may name"): the objects its pod
// templates name and the claims its StatefulSets will bind are read and judged at every full
// reconcile, and the platform objects judged are looked at again, in the watch cache, at every
// look of the status path; a host another route serves is refused (routedHosts.ts).
import type { Listener } from '../../controlplane/schemas/index.ts';
import type { LiveKubeObject, ObjectRef } from '../../kube/index.ts';
import { formatLocalRef } from '../../objects/objectRef.ts';
import { describeHolder, KEPT_VOLUME_DECISION, referenceOwner } from '../../objects/ownership.ts';
import type { KubeObject } from '../../render/index.ts';
import { podReferences, type Reference } from '../../render/references.ts';
import { type TemplateClaim, templateClaims } from '../../render/templateClaims.ts';
import { ReconcileReason } from '../../report/reconcileReason.ts';
import type { KubeReader } from '../kubeAccess.ts';
import { TerminalError, WaitingError } from '../outcome.ts';
import { listRoutes } from './hostRegistry.ts';
import { entryId, entryOf } from './inventory.ts';
import { hostHolder } from './routedHosts.ts';

/** The type of a Secret that holds a ServiceAccount's token: never a deployment's to name. */
const SERVICE_ACCOUNT_TOKEN = 'kubernetes.io/service-account-token';

export interface ReferenceGuardOptions {
  /** A read through the watch cache: a hit is one of this listener's objects, a miss is asked. */
  readonly read: (ref: ObjectRef, signal?: AbortSignal) => Promise<LiveKubeObject | undefined>;
  readonly kube: KubeReader;
  readonly listener: () => Listener;
  readonly allowedNamespaces: readonly string[] | undefined;
}

/**
 * A platform object a pod template names, as judged at a full reconcile: the status path looks for
 * a change of it in the watch cache (changedReference below), with no request.
 */
export interface JudgedReference {
  readonly ref: ObjectRef & { readonly namespace: string };
  /** The uid judged: another object under the name is another judgement. */
  readonly uid: string;
  /** The fields that name it, e.g. `Deployment/web spec.volumes[0].secret.secretName`. */
  readonly paths: readonly string[];
}

export class ReferenceGuard {
  readonly #o: ReferenceGuardOptions;

  constructor(options: ReferenceGuardOptions) {
    this.#o = options;
  }

  /**
   * A deployment's pods may name exactly (a) what this same render makes for it, and the claims
   * its own StatefulSets will bind, or (b) a platform object that exists: one the agent manages for
   * no one (no managed-by label, no listener id, no deployment id; ownership.ts referenceOwner)
   * and that the platform's policy allows (render/referencePolicy.ts, checked at render), never a
   * ServiceAccount's token Secret. Each Secret, ConfigMap and claim the pod templates name, other
   * than this render's own, is read. The agent's object for anyone else is refused for good
   * (ForeignReference). One that does not exist yet is waited for (WaitingError), nothing
   * written: a pod that named it would take whatever is made under that name later. One that
   * carries this deployment's id yet is not made by this render (left by an earlier name) is
   * waited for alike — it is about to be pruned, and its name then free for another deployment.
   * So what prune removes is never named by a template that stays.
   *
   * The claims its StatefulSets will bind (templateClaims.ts) are read too: the controller binds
   * an existing claim by name, so a kept volume of a deleted deployment, or one the platform made,
   * would become this deployment's database. Such a claim is this deployment's by its
   * deployment-id label alone; any other is waited on, named with whose it is and that the
   * platform team decides, and the same revision goes on once it has.
   *
   * Returns the platform objects judged, for the status path to watch for a change of owner.
   */
  async checkReferences(
    deploymentId: string,
    objects: readonly KubeObject[],
    signal: AbortSignal | undefined,
  ): Promise<JudgedReference[]> {
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
    const foreignTargets: (ObjectRef & { namespace: string })[] = [];
    const missing: string[] = [];
    const taken: string[] = [];
    const judged: JudgedReference[] = [];
    for (const [i, { ref, named, bound }] of looked.entries()) {
      const live = found[i];
      const what = formatLocalRef(ref);
      if (bound.length > 0) {
        // A claim its own StatefulSets make when they run, this deployment's by its id alone.
        if (!live) continue;
        const owner = referenceOwner(live, deploymentId);
        if (owner.owner === 'this') continue;
        if (owner.owner === 'other' && named.length > 0) {
          foreignTargets.push(ref);
          for (const { path } of named) foreign.push(`${path} names ${what}, which ${owner.why}`);
        }
        for (const { path } of bound)
          taken.push(
            `${path} would bind ${what}, which exists and ${describeHolder(live)}: ${KEPT_VOLUME_DECISION}`,
          );
        continue;
      }
      const why = live ? referenceRefusal(live, deploymentId) : { missing: 'does not exist yet' };
      if (why === undefined && live)
        judged.push({ ref, uid: live.metadata.uid, paths: named.map(({ path }) => path) });
      else if (why && 'missing' in why)
        for (const { path } of named) missing.push(`${path} names ${what}, which ${why.missing}`);
      else if (why) {
        foreignTargets.push(ref);
        for (const { path } of named) foreign.push(`${path} names ${what}, which ${why.foreign}`);
      }
    }
    if (foreign.length > 0)
      throw new TerminalError(
        ReconcileReason.ForeignReference,
        [...foreign, ...taken, ...missing].join('; '),
        {
          refused: foreignTargets,
        },
      );
    if (taken.length > 0)
      throw new WaitingError(
        ReconcileReason.ClaimTaken,
        deploymentId,
        `${[...taken, ...missing].join('; ')}; nothing is applied until then`,
      );
    if (missing.length > 0)
      throw new WaitingError(
        ReconcileReason.ReferenceMissing,
        deploymentId,
        `${missing.join('; ')}: nothing is applied until it exists`,
      );
    return judged;
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
        ReconcileReason.HostTaken,
        deploymentId,
        `${taken.join('; ')}: nothing is applied while another holds it`,
      );
  }
}

/**
 * Why a live object a pod names, not made by this render, may not be used: undefined for a
 * platform object (rule (b)); `missing` for one of this deployment's that this render does not
 * make (counted as absent: it is pruned, and its name free for anyone, once nothing names it);
 * `foreign` for the agent's object of anyone else, or a ServiceAccount's token.
 */
export function referenceRefusal(
  live: LiveKubeObject,
  deploymentId: string,
): { readonly missing: string } | { readonly foreign: string } | undefined {
  const owner = referenceOwner(live, deploymentId);
  if (owner.owner === 'this')
    return {
      missing:
        "carries this deployment's id but is not made by its render (left by an earlier render), so counts as missing",
    };
  if (owner.owner === 'other') return { foreign: owner.why };
  // A token Secret is the identity of a ServiceAccount, whatever the Secret patterns allow.
  if (live.kind === 'Secret' && live.type === SERVICE_ACCOUNT_TOKEN)
    return { foreign: `holds a ServiceAccount token (${SERVICE_ACCOUNT_TOKEN})` };
  return undefined;
}

/**
 * Whether a judged platform object is no longer what was judged, seen as `live` now (the watch
 * cache: it holds only this listener's objects, so a hit under a platform object's name is another
 * object). `owner`: another object holds the name and the rule refuses it — the pods that name it
 * would take it at their next start. `rejudge`: another platform object holds it (the next full
 * reconcile judges it again). Undefined: the same object, or none (a platform object deleted is no
 * change of owner; a pod that names it waits for it).
 */
export function changedReference(
  judged: JudgedReference,
  live: LiveKubeObject | undefined,
  deploymentId: string,
): { readonly owner: string } | 'rejudge' | undefined {
  if (!live || live.metadata.uid === judged.uid) return undefined;
  const why = referenceRefusal(live, deploymentId);
  if (why === undefined) return 'rejudge';
  return { owner: 'missing' in why ? why.missing : why.foreign };
}
