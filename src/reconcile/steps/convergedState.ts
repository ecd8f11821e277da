// Whether a deployment needs its full reconcile (render → plan → apply) or only its rollout read
// again: controller-runtime's status path beside its spec path. A full reconcile that converged
// leaves what it converged from (a digest of the render's inputs) and what it left (a digest of
// each owned object's spec view: everything but its status). While both still hold, nothing is
// there to apply: a status change, a rollout recheck or a resync reads the rollout from the
// cache and reports it. Anything else (a new revision or listener, a hand edit of an object's
// spec, labels or of any annotation the agent writes, an object deleted or replaced) fails the
// test and takes the full path. Pure.
import { createHash } from 'node:crypto';
import type { LiveKubeObject } from '../../kube/index.ts';
import type { InventoryEntry } from './inventory.ts';
import type { JudgedReference } from './referenceGuard.ts';

/**
 * The kinds whose API server bumps `metadata.generation` on every change of their spec, and not on
 * a change of their status: for them the generation stands for the spec. Any other kind's spec
 * view is its resourceVersion (a HorizontalPodAutoscaler carries no generation; a Secret's never
 * moves), so that any change of it takes the full path.
 */
const GENERATION_TRACKS_SPEC: ReadonlySet<string> = new Set([
  'Deployment',
  'StatefulSet',
  'PodDisruptionBudget',
  'NetworkPolicy',
  'Ingress',
  // Custom resources: the API server bumps it on any change but to metadata and status.
  'HTTPRoute',
  'ScaledObject',
]);

/** What the last full reconcile of a deployment converged from, and what it left. */
export interface ConvergedState {
  /** Digest of the render's inputs (deployment, revision, listener, namespaces served). */
  readonly input: string;
  /** Digest of the spec view of each owned object, in the order of `entries`. */
  readonly owned: string;
  readonly namespace: string;
  readonly revisionId: string | undefined;
  /** The objects applied, as the inventory records them. */
  readonly entries: readonly InventoryEntry[];
  /** The render's notes for the rollout status (a refused option, a capped value). */
  readonly notes: readonly string[];
  /** The platform objects the pod templates name, as judged: a change of owner is looked for. */
  readonly references: readonly JudgedReference[];
}

/**
 * What of a live object a change of its spec or metadata moves and a change of its status does
 * not: its identity, its generation (or resourceVersion, above), its labels, the annotations the
 * agent writes (`owned`: render/ownedAnnotations, the ones the watch cache holds; others' moving
 * annotations, such as a Deployment's revision counter, are left out so that a read and the cache
 * agree), and whether it is being deleted. An annotation edit moves no generation: without its
 * key here, an ingress controller's annotation removed by hand would never be written back.
 */
export function specView(
  kind: string,
  live: LiveKubeObject | undefined,
  owned: (annotation: string) => boolean,
): string {
  if (!live) return 'absent';
  const { uid, generation, resourceVersion, labels, annotations, deletionTimestamp } = live.metadata;
  const version =
    GENERATION_TRACKS_SPEC.has(kind) && generation !== undefined ? `g${generation}` : `rv${resourceVersion}`;
  // In the order the server wrote them (it sorts map keys): a resync confirms thousands of these,
  // and another order could only take the full path, never skip it.
  let view = `${uid}\u0000${version}\u0000${deletionTimestamp !== undefined}`;
  for (const key in labels) view += `\u0000l${key}=${labels[key]}`;
  // Label values are a closed alphabet; an annotation's value is any text, quoted.
  for (const key in annotations) if (owned(key)) view += `\u0000a${key}=${JSON.stringify(annotations[key])}`;
  return view;
}

/** The digest of the owned objects' spec views, entry by entry. */
export function ownedDigest(
  entries: readonly InventoryEntry[],
  live: (entry: InventoryEntry) => LiveKubeObject | undefined,
  owned: (annotation: string) => boolean,
): string {
  const hash = createHash('sha256');
  for (const entry of entries) hash.update(specView(entry.kind, live(entry), owned)).update('\n');
  return hash.digest('base64');
}
