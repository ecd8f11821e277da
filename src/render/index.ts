// Render: (deployment, target revision, listener, agent configuration) → desired Kubernetes
// objects. Pure: no I/O, no clock, no randomness; the same input gives the same objects.
import { safeParseResource } from '../controlplane/parse.ts';
import { Deployment, Listener, Revision } from '../controlplane/schemas/index.ts';
import type { KubeObject } from '../objects/kubeObject.ts';
import { canonicalHash } from './canonicalHash.ts';
import { RenderError, type RenderProblem } from './errors.ts';
import { buildObjects } from './objects.ts';
import { planDeployment } from './plan.ts';
import { checkPodSecurity } from './podSecurity.ts';
import { checkReferencePolicy } from './referencePolicy.ts';
import type { RenderConfig } from './renderConfig.ts';

export type { KubeObject } from '../objects/kubeObject.ts';
export { RenderError, type RenderProblem } from './errors.ts';
export { RenderConfig, type RenderConfigInput } from './renderConfig.ts';

export interface RenderInput {
  readonly deployment: Deployment;
  readonly revision: Revision | undefined;
  readonly listener: Listener;
  /** The agent's own namespace allow-list; undefined when the agent sets none. */
  readonly allowedNamespaces: readonly string[] | undefined;
  /**
   * The key of every digest render writes (spec hashes, the config checksum): the agent's, from a
   * Secret of its namespace. Without it digests are plain SHA-256 (offline previews only).
   */
  readonly digestKey?: Uint8Array | undefined;
}

export interface RenderedDeployment {
  readonly deploymentId: string;
  readonly revisionId: string | undefined;
  readonly namespace: string;
  /** Hash of every desired object: unchanged input, unchanged hash. */
  readonly specHash: string;
  readonly objects: KubeObject[];
  readonly notes: readonly string[];
  /** Notes the deployment's status message carries (its owner reads them there). */
  readonly statusNotes: readonly string[];
}

export type RenderResult =
  | { readonly ok: true; readonly value: RenderedDeployment }
  | { readonly ok: false; readonly error: RenderError };

export function renderDeployment(input: RenderInput, config: RenderConfig): RenderResult {
  try {
    const { plan, problems } = planDeployment(input, config);
    if (!plan) return { ok: false, error: new RenderError(input.deployment.id, problems) };
    const objects = buildObjects(plan, config, input.digestKey);
    const unsafe = [
      ...objects.flatMap((object) => checkPodSecurity(object, config.policy.podSecurity)),
      ...checkReferencePolicy(objects, config),
    ];
    if (unsafe.length > 0) return { ok: false, error: new RenderError(input.deployment.id, unsafe) };
    return {
      ok: true,
      value: {
        deploymentId: plan.deploymentId,
        revisionId: plan.revisionId,
        namespace: plan.namespace,
        specHash: canonicalHash(objects, input.digestKey),
        objects,
        notes: plan.notes,
        statusNotes: plan.statusNotes,
      },
    };
  } catch (cause) {
    // Rendering never throws for bad input: anything unexpected is this deployment's failure.
    const message =
      cause instanceof Error ? `internal render failure: ${cause.name}` : 'internal render failure';
    return {
      ok: false,
      error: new RenderError(input.deployment.id, [{ path: '(root)', message }], { cause }),
    };
  }
}

/** Renders from raw JSON, so that schema problems and render problems arrive as one RenderError. */
export function renderFromJson(
  raw: {
    deployment: unknown;
    revision?: unknown;
    listener: unknown;
    allowedNamespaces?: readonly string[] | undefined;
  },
  config: RenderConfig,
): RenderResult {
  const problems: RenderProblem[] = [];
  const deployment = safeParseResource(Deployment, raw.deployment, 'deployment');
  const listener = safeParseResource(Listener, raw.listener, 'listener');
  const revision =
    raw.revision === undefined ? undefined : safeParseResource(Revision, raw.revision, 'revision');
  const id = deployment.ok ? deployment.value.id : (deployment.id ?? '(unknown)');
  if (!deployment.ok) problems.push(...deployment.error.issues);
  if (!listener.ok)
    problems.push(...listener.error.issues.map((i) => ({ path: `listener.${i.path}`, message: i.message })));
  if (revision && !revision.ok)
    problems.push(...revision.error.issues.map((i) => ({ path: `revision.${i.path}`, message: i.message })));
  if (!deployment.ok || !listener.ok || (revision && !revision.ok))
    return { ok: false, error: new RenderError(id, problems) };
  return renderDeployment(
    {
      deployment: deployment.value,
      listener: listener.value,
      revision: revision?.value,
      allowedNamespaces: raw.allowedNamespaces,
    },
    config,
  );
}
