// Labels and annotations that mark what this agent owns (docs/design.md, "Ownership labels").
// The listener-id label is what every list, watch and prune is scoped by.
import { formatObjectRef } from './objectRef.ts';

export const AGENT_NAME = 'k8s-listener';
export const FIELD_MANAGER = 'k8s-listener';

const PREFIX = 'k8s-listener.io';

export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const LABEL_COMPONENT = 'app.kubernetes.io/component';
export const LABEL_NAME = 'app.kubernetes.io/name';
export const LABEL_INSTANCE = 'app.kubernetes.io/instance';
export const LABEL_LISTENER_ID = `${PREFIX}/listener-id`;
export const LABEL_DEPLOYMENT_ID = `${PREFIX}/deployment-id`;

/** The label selector of one deployment's objects (and pods, and claims) under one listener. */
export function deploymentSelector(listenerId: string, deploymentId: string): string {
  return `${LABEL_LISTENER_ID}=${listenerId},${LABEL_DEPLOYMENT_ID}=${deploymentId}`;
}

export const ANNOTATION_REVISION_ID = `${PREFIX}/revision-id`;
export const ANNOTATION_SPEC_HASH = `${PREFIX}/spec-hash`;
/** On pod templates: a hash of the Secrets the pods read, so a changed Secret rolls them. */
export const ANNOTATION_CONFIG_CHECKSUM = `${PREFIX}/config-checksum`;
/** Rollout status written back by the agent, for operators using kubectl. */
export const ANNOTATION_STATUS = `${PREFIX}/status`;
export const ANNOTATION_DEPLOYMENT_NAME = `${PREFIX}/deployment-name`;

/** A Secret the reconciler creates once (filling the generated keys) and never overwrites. */
export const ANNOTATION_CREATE_ONLY = `${PREFIX}/create-only`;
/** Whether an object is created once and never overwritten (`run`, `diff` and `status` ask this). */
export function isCreateOnly(object: {
  readonly metadata: { readonly annotations: Readonly<Record<string, string>> };
}): boolean {
  return object.metadata.annotations[ANNOTATION_CREATE_ONLY] === 'true';
}

/** Comma-separated keys of a create-only Secret whose values the reconciler generates. */
export const ANNOTATION_GENERATED_KEYS = `${PREFIX}/generated-keys`;

/** Whether an annotation is one of the agent's own (the only ones it reads of what it owns). */
export function isAgentAnnotation(key: string): boolean {
  return key.startsWith(`${PREFIX}/`);
}

/** The agent's annotations whose values a deployment's objects carry alike. */
export const SHARED_ANNOTATIONS = [
  ANNOTATION_DEPLOYMENT_NAME,
  ANNOTATION_REVISION_ID,
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_GENERATED_KEYS,
] as const;

/** The Secret of the agent's own namespace that holds its digest key (manager/digestKey). */
export const DIGEST_KEY_SECRET = 'k8s-listener-digest-key';

/** The labels and identity of a rendered or live object, as the ownership rules read them. */
interface Labelled {
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string | undefined;
    readonly labels: Readonly<Record<string, string>>;
  };
}

/**
 * Why a found object's name is not this deployment's to write, or undefined when it is: never
 * adopted from another owner, nor from another deployment of this listener (docs/design.md,
 * "Never adopt"). `run` refuses the deployment with this reason; `diff` shows the same.
 */
export function whyNotOurs(object: Labelled, live: Labelled, deploymentId: string): string | undefined {
  const name = formatObjectRef(object);
  if (!sameListener(live, object)) return `${name} exists and is not managed by this listener`;
  if (live.metadata.labels[LABEL_DEPLOYMENT_ID] !== deploymentId)
    return `${name} belongs to another deployment of this listener`;
  return undefined;
}

/** Whether two objects carry the same listener's label (or both none). */
export function sameListener(a: Labelled, b: Labelled): boolean {
  return a.metadata.labels[LABEL_LISTENER_ID] === b.metadata.labels[LABEL_LISTENER_ID];
}

/**
 * Whether a found object is this deployment's: it carries this listener's label and this
 * deployment's id. Only such an object is deleted for the deployment (never another's object that
 * took a recorded name since), and only such a route's host is the deployment's own.
 */
export function isThisDeployments(live: Labelled, listenerId: string, deploymentId: string): boolean {
  return (
    live.metadata.labels[LABEL_LISTENER_ID] === listenerId &&
    live.metadata.labels[LABEL_DEPLOYMENT_ID] === deploymentId
  );
}

/**
 * Whether prune deletes a live object for this deployment (`run` and `diff` decide alike): this
 * deployment's (isThisDeployments), and not a database's credentials while its volume is kept
 * (docs/design.md, "Database volumes are kept").
 */
export function isPruned(
  live: Labelled & { readonly metadata: { readonly annotations: Readonly<Record<string, string>> } },
  listenerId: string,
  deploymentId: string,
  keepVolumes: boolean,
): boolean {
  return isThisDeployments(live, listenerId, deploymentId) && !(keepVolumes && isDatabaseCredentials(live));
}

/** Whether a deployment is bound to this listener in the control plane (its `source_config.listener_id`). */
export function isBoundTo(
  deployment: { readonly source_config: { readonly listener_id?: string | null | undefined } },
  listenerId: string,
): boolean {
  return deployment.source_config.listener_id === listenerId;
}

/** Whether labels carry any of the agent's marks: its managed-by label, or a listener id (of any listener). */
function hasAgentMark(labels: Readonly<Record<string, string>>): boolean {
  return labels[LABEL_MANAGED_BY] === AGENT_NAME || labels[LABEL_LISTENER_ID] !== undefined;
}

/**
 * The deployment an object is the agent's for, and its listener, read off its labels; undefined
 * when it names no deployment or carries none of the agent's marks (the platform's, or a copy).
 */
export function agentHolder(
  live: Labelled,
): { readonly deploymentId: string; readonly listenerId: string | undefined } | undefined {
  const { labels } = live.metadata;
  const deploymentId = labels[LABEL_DEPLOYMENT_ID];
  if (deploymentId === undefined || !hasAgentMark(labels)) return undefined;
  return { deploymentId, listenerId: labels[LABEL_LISTENER_ID] };
}

/** Whose an object a pod names is, as the reference rule reads its labels. */
export type ReferenceOwner =
  /** Made by the platform team: the agent manages it for no one. */
  | { readonly owner: 'platform' }
  /** Carries this deployment's id: usable only as what this render makes (docs/design.md). */
  | { readonly owner: 'this' }
  /** The agent's, for another deployment or for itself. */
  | { readonly owner: 'other'; readonly why: string };

/**
 * Whose an object a pod names is (docs/design.md, "What a pod may name"): the platform's only when
 * it carries none of the agent's marks — no managed-by label, no listener id (of any listener),
 * no deployment id; this deployment's when it carries its id; else the agent's for another
 * deployment, or for itself.
 */
export function referenceOwner(live: Labelled, deploymentId: string): ReferenceOwner {
  const { labels } = live.metadata;
  const owner = labels[LABEL_DEPLOYMENT_ID];
  if (owner === deploymentId) return { owner: 'this' };
  if (!hasAgentMark(labels) && owner === undefined) return { owner: 'platform' };
  return {
    owner: 'other',
    why: owner === undefined ? 'the agent keeps for itself' : 'belongs to another deployment',
  };
}

/** The component label of a deployment's in-cluster database and of what belongs to it. */
export const DATABASE_COMPONENT = 'database';

/**
 * Whether an object is the generated credentials of a deployment's in-cluster database: the
 * only key to the data on its volume (PostgreSQL keeps the password it was initialised with), so
 * it is kept and handed over as the volume's claims are (docs/design.md, "Database volumes are
 * kept").
 */
export function isDatabaseCredentials(live: {
  readonly kind: string;
  readonly metadata: {
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
  };
}): boolean {
  return (
    live.kind === 'Secret' &&
    live.metadata.labels[LABEL_COMPONENT] === DATABASE_COMPONENT &&
    live.metadata.annotations[ANNOTATION_GENERATED_KEYS] !== undefined
  );
}

/**
 * Whose a kept volume's object is (a claim, its credentials), as told to the platform team that
 * may hand it over: the deployment its id label names, or none.
 */
export function describeHolder(live: Labelled): string {
  const holder = live.metadata.labels[LABEL_DEPLOYMENT_ID];
  return holder === undefined ? 'carries no deployment id' : `belongs to deployment ${holder}`;
}

/**
 * What a deployment is told of a kept volume (a claim, its credentials) another holds: never an
 * invitation to take it — a tenant's data goes to another deployment only by the platform team's
 * decision, and only when the same tenant's data is meant.
 */
export const KEPT_VOLUME_DECISION =
  "it is not this deployment's to take: the platform team decides whether to delete it, or to hand it " +
  'over when it is the same tenant\'s data (docs/operating.md, "Kept database volumes")';
