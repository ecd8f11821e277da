// The kinds whose hand edits wake a deployment: every kind the agent writes, so that a deletion by
// hand is repaired at once rather than at the next resync (also what `check` asks list and watch
// permission for).
import type { RenderConfig } from '../render/index.ts';

export const WATCHED_KINDS = [
  'Deployment',
  'StatefulSet',
  'Service',
  'Secret',
  'PersistentVolumeClaim',
  'ConfigMap',
  'PodTemplate',
  'HorizontalPodAutoscaler',
  'PodDisruptionBudget',
  'Ingress',
  'NetworkPolicy',
  'HTTPRoute',
  'ScaledObject',
  'TriggerAuthentication',
] as const;

/**
 * The kinds an inventory may record: what render writes. Not ConfigMaps (the inventories
 * themselves) nor claims (a StatefulSet's volumes, found by label).
 */
export const INVENTORY_KINDS: ReadonlySet<string> = new Set(
  WATCHED_KINDS.filter((kind) => kind !== 'ConfigMap' && kind !== 'PersistentVolumeClaim'),
);

/**
 * The kinds watched under this render configuration: no Ingress without an ingress class, no
 * NetworkPolicy when off; no HTTPRoute without a Gateway, nor KEDA's kinds without KEDA queue
 * scaling — custom resources whose CRDs a cluster without them does not serve.
 */
export function watchedKinds(
  render: Pick<RenderConfig, 'ingress' | 'networkPolicy' | 'gateway' | 'autoscaling'>,
): (typeof WATCHED_KINDS)[number][] {
  const keda = render.autoscaling.queue === 'keda';
  return WATCHED_KINDS.filter(
    (kind) =>
      (kind !== 'Ingress' || render.ingress.className !== undefined) &&
      (kind !== 'NetworkPolicy' || render.networkPolicy.enabled) &&
      (kind !== 'HTTPRoute' || render.gateway.parentRefs.length > 0) &&
      ((kind !== 'ScaledObject' && kind !== 'TriggerAuthentication') || keda),
  );
}

/** A custom resource render writes: served only where its CRDs are installed. */
export interface CustomKind {
  readonly kind: 'HTTPRoute' | 'ScaledObject' | 'TriggerAuthentication';
  /** The setting that makes render write it. */
  readonly setting: string;
  /** What installs its CRD. */
  readonly from: string;
}

/** The custom resources render writes under this configuration. */
export function customKinds(render: Pick<RenderConfig, 'gateway' | 'autoscaling'>): CustomKind[] {
  const kinds: CustomKind[] = [];
  if (render.gateway.parentRefs.length > 0)
    kinds.push({
      kind: 'HTTPRoute',
      setting: 'render.gateway.parentRefs',
      from: "the Gateway API's standard CRDs",
    });
  if (render.autoscaling.queue === 'keda')
    for (const kind of ['ScaledObject', 'TriggerAuthentication'] as const)
      kinds.push({ kind, setting: 'render.autoscaling.queue: keda', from: 'KEDA' });
  return kinds;
}

/**
 * Kinds read for rollout status and never written: watched into the cache (so a recheck reads
 * them without a request), they wake no deployment — their workloads' status changes do.
 */
export const OBSERVED_KINDS = ['Pod'] as const;

/** The kinds whose objects of one deployment the reconciler lists from the cache (pods, claims). */
export const OWNED_LISTED_KINDS = ['Pod', 'PersistentVolumeClaim'] as const;
