// Suspensions: deployments (or a whole listener) an operator has taken out of the agent's hands
// for a while — during an incident, to edit a workload by hand without the agent putting it back.
// They live in one ConfigMap of the agent's namespace, so they survive restarts and leader
// changes: `k8s-listener suspend`/`resume` write it, the leader reads it at each poll and
// acknowledges what it has taken into account.
import { z } from 'zod';
import { isConflict, type KubeClient, type LiveKubeObject, type ObjectRef } from '../../kube/index.ts';
import { configMapData } from '../../objects/fields.ts';
import { AGENT_NAME, LABEL_MANAGED_BY } from '../../objects/ownership.ts';

export const SUSPENSIONS_CONFIGMAP = 'k8s-listener-suspensions';

/** The ConfigMap of the suspensions in the agent's namespace; listener-wide Events go on it too. */
export function suspensionsRef(agentNamespace: string): ObjectRef {
  return { apiVersion: 'v1', kind: 'ConfigMap', namespace: agentNamespace, name: SUSPENSIONS_CONFIGMAP };
}

/** Bumped by every `suspend`/`resume`: what the agent acknowledges. */
export const ANNOTATION_SUSPENSIONS_GENERATION = 'k8s-listener.io/generation';
/** The data key of a listener-wide suspension (deployment ids are the other keys). */
export const listenerKey = (listenerId: string): string => `listener.${listenerId}`;
/** Where the leader of `listenerId` writes the generation it has taken into account. */
export const observedAnnotation = (listenerId: string): string => `k8s-listener.io/observed-${listenerId}`;

export const Suspension = z.strictObject({
  reason: z.string().max(1024),
  /** Who suspended it: the Kubernetes user of the command (SelfSubjectReview), else the OS user. */
  by: z.string().max(256),
  /** ISO time of the suspension. */
  at: z.string().max(64),
  /** The deployment's name when it was suspended, for `resume NAME` and `status`. */
  name: z.string().max(256).optional(),
});
export type Suspension = z.infer<typeof Suspension>;

/** A suspension in effect for one deployment: its own, or its listener's. */
export interface ActiveSuspension extends Suspension {
  readonly scope: 'deployment' | 'listener';
}

export interface Suspensions {
  readonly listener: Suspension | undefined;
  readonly deployments: ReadonlyMap<string, Suspension>;
  readonly generation: number;
  /** The generation this listener's leader last acknowledged. */
  readonly acknowledged: number;
}

export const NO_SUSPENSIONS: Suspensions = {
  listener: undefined,
  deployments: new Map(),
  generation: 0,
  acknowledged: 0,
};

const counter = (text: string | undefined): number => {
  const value = Number(text ?? 0);
  return Number.isSafeInteger(value) && value >= 0 ? value : 0;
};

/**
 * An entry that cannot be read still suspends: the safe side of a suspension is the agent doing
 * nothing, and the entry names what is wrong.
 */
function entryOf(text: string): Suspension {
  try {
    const parsed = Suspension.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
  } catch {
    // fall through
  }
  return { reason: '(unreadable suspension entry)', by: 'unknown', at: '' };
}

const UUID_LIKE = /^[0-9a-zA-Z][0-9a-zA-Z-]*$/;

/** The suspensions of `listenerId` held by the ConfigMap (none when it does not exist). */
export function readSuspensions(configMap: LiveKubeObject | undefined, listenerId: string): Suspensions {
  if (!configMap) return NO_SUSPENSIONS;
  const data = configMapData(configMap);
  const deployments = new Map<string, Suspension>();
  let listener: Suspension | undefined;
  for (const [key, value] of Object.entries(data)) {
    if (key === listenerKey(listenerId)) listener = entryOf(value);
    else if (!key.startsWith('listener.') && UUID_LIKE.test(key)) deployments.set(key, entryOf(value));
  }
  const { annotations } = configMap.metadata;
  return {
    listener,
    deployments,
    generation: counter(annotations[ANNOTATION_SUSPENSIONS_GENERATION]),
    acknowledged: counter(annotations[observedAnnotation(listenerId)]),
  };
}

/** The suspension in effect for a deployment: its listener's wins (it was the wider decision). */
export function suspensionOf(suspensions: Suspensions, deploymentId: string): ActiveSuspension | undefined {
  if (suspensions.listener) return { ...suspensions.listener, scope: 'listener' };
  const own = suspensions.deployments.get(deploymentId);
  return own ? { ...own, scope: 'deployment' } : undefined;
}

/** What tells two entries apart ('' for none): a new suspension of the same deployment differs. */
export function describeEntry(entry: Suspension | undefined): string {
  return entry ? `${entry.by}|${entry.at}|${entry.reason}` : '';
}

/** Deployments among `ids` whose suspension in effect changed from `before` to `after` (either way). */
export function changedSuspensions(before: Suspensions, after: Suspensions, ids: Iterable<string>): string[] {
  const key = (s: ActiveSuspension | undefined) => (s ? `${s.scope}|${describeEntry(s)}` : '');
  return [...ids].filter((id) => key(suspensionOf(before, id)) !== key(suspensionOf(after, id)));
}

/** One line for logs, Events and `status`: who, when, why. */
export function describeSuspension(suspension: ActiveSuspension): string {
  const scope = suspension.scope === 'listener' ? 'the whole listener suspended' : 'suspended';
  return `${scope} by ${suspension.by}${suspension.at ? ` at ${suspension.at}` : ''}${suspension.reason ? `: ${suspension.reason}` : ''}`;
}

/** One change of the suspensions: a key of the ConfigMap set to an entry, or removed (null). */
export interface SuspensionChange {
  readonly key: string;
  readonly entry: Suspension | null;
}

const CHANGE_ATTEMPTS = 5;

/**
 * Writes one change and bumps the generation, as an optimistic update (the resourceVersion read is
 * a precondition): two operators at once both land, one after the other. Returns the generation
 * written, which the agent acknowledges once it acts on it.
 */
export async function changeSuspensions(
  kube: Pick<KubeClient, 'get' | 'create' | 'mergePatch'>,
  namespace: string,
  change: SuspensionChange,
  signal?: AbortSignal,
): Promise<number> {
  const ref = suspensionsRef(namespace);
  const value = change.entry === null ? null : JSON.stringify(change.entry);
  for (let attempt = 1; ; attempt++) {
    const live = await kube.get(ref, { signal });
    const generation = counter(live?.metadata.annotations[ANNOTATION_SUSPENSIONS_GENERATION]) + 1;
    const annotations = { [ANNOTATION_SUSPENSIONS_GENERATION]: String(generation) };
    try {
      if (!live) {
        await kube.create(
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: SUSPENSIONS_CONFIGMAP, namespace, labels: SUSPENSIONS_LABELS, annotations },
            data: value === null ? {} : { [change.key]: value },
          },
          { signal },
        );
      } else {
        await kube.mergePatch(
          ref,
          {
            metadata: { resourceVersion: live.metadata.resourceVersion, annotations },
            data: { [change.key]: value },
          },
          { signal },
        );
      }
      return generation;
    } catch (error) {
      if (!isConflict(error) || attempt >= CHANGE_ATTEMPTS) throw error;
    }
  }
}

/** The labels of the ConfigMap the commands create. */
export const SUSPENSIONS_LABELS = { [LABEL_MANAGED_BY]: AGENT_NAME } as const;
