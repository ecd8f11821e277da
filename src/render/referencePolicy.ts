// One reference policy over every route by which a rendered pod names a Secret, a ConfigMap or a
// volume claim (references.ts lists them: env, envFrom, secret and configMap volumes, projected
// sources, a CSI volume's node-publish Secret, persistentVolumeClaim volumes, image pull secrets,
// and secret_references as the variables render makes of them): rule (b) of docs/design.md, "What
// a pod may name", as far as names decide it. Checked on what render produced, so a route added to
// the rendered pods is covered without a second list. Pure.
import type { KubeObject } from '../objects/kubeObject.ts';
import { DIGEST_KEY_SECRET } from '../objects/ownership.ts';
import { inputExcerpt } from '../report/terminalText.ts';
import type { RenderProblem } from './errors.ts';
import { patternList } from './patterns.ts';
import { podReferences, type Reference } from './references.ts';
import type { RenderConfig } from './renderConfig.ts';
import { templateClaims } from './templateClaims.ts';

type ReferenceKind = Reference['kind'];

/** The platform's allow-list of each kind, by its key under `render.policy`. */
const POLICY_KEY = {
  Secret: 'secretReferences',
  ConfigMap: 'configMapReferences',
  PersistentVolumeClaim: 'claimReferences',
} as const satisfies Record<ReferenceKind, keyof RenderConfig['policy']>;

/** The names of each kind this render makes for the deployment: its own, whatever the lists say. */
export type OwnNames = Readonly<Partial<Record<ReferenceKind, ReadonlySet<string>>>>;

/**
 * Why a deployment's pods may not name the `kind` object `name`, or undefined when they may: one
 * this render makes for the deployment (`own`), or one the platform's allow-list of the kind takes
 * — never the Ingress TLS Secret (every deployment's Ingress shares it: its key is the platform's)
 * nor the agent's digest key, whatever the list says. Messages name objects, never their content.
 * Whose the object is in the cluster is judged when it is read (reconcile/steps/referenceGuard.ts).
 */
export function referenceRefusal(
  kind: ReferenceKind,
  name: string,
  own: OwnNames,
  config: RenderConfig,
): string | undefined {
  if (kind === 'Secret') {
    if (config.ingress.tlsSecretName !== undefined && name === config.ingress.tlsSecretName)
      return `Secret ${inputExcerpt(name)} is the Ingress TLS Secret (render.ingress.tlsSecretName), which no deployment's pods may read`;
    if (name === DIGEST_KEY_SECRET)
      return `Secret ${inputExcerpt(name)} holds the agent's digest key, which no deployment's pods may read`;
  }
  if (own[kind]?.has(name)) return undefined;
  const key = POLICY_KEY[kind];
  const patterns = config.policy[key];
  if (patternList(patterns).matches(name)) return undefined;
  return `${kind} ${inputExcerpt(name)} is not allowed by render.policy.${key} (${patterns.join(', ') || 'none'})`;
}

/**
 * What the objects make of each kind a pod may name: the Secrets and ConfigMaps among them, and
 * the claims their StatefulSets will bind.
 */
function ownNames(objects: readonly KubeObject[]): OwnNames {
  const named = (kind: ReferenceKind) =>
    new Set(objects.filter((o) => o.kind === kind).map((o) => o.metadata.name));
  return {
    Secret: named('Secret'),
    ConfigMap: named('ConfigMap'),
    PersistentVolumeClaim: new Set([
      ...named('PersistentVolumeClaim'),
      ...templateClaims(objects).map((claim) => claim.name),
    ]),
  };
}

/** Every object a pod template among the objects names that the policy refuses, at its field. */
export function checkReferencePolicy(objects: readonly KubeObject[], config: RenderConfig): RenderProblem[] {
  const own = ownNames(objects);
  return podReferences(objects).flatMap((reference) => {
    const refused = referenceRefusal(reference.kind, reference.name, own, config);
    return refused ? [{ path: reference.path, message: refused }] : [];
  });
}
