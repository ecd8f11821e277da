// One Secret policy over every route by which a rendered pod names a Secret (references.ts lists
// them: env, envFrom, secret volumes, projected sources, a CSI volume's node-publish Secret, image
// pull secrets, and secret_references as the variables render makes of them). Checked on what
// render produced, so a route added to the rendered pods is covered without a second list. Pure.
import type { KubeObject } from '../objects/kubeObject.ts';
import { DIGEST_KEY_SECRET } from '../objects/ownership.ts';
import { inputExcerpt } from '../report/terminalText.ts';
import type { RenderProblem } from './errors.ts';
import { patternList } from './patterns.ts';
import { podReferences } from './references.ts';
import type { RenderConfig } from './renderConfig.ts';

/**
 * Why a deployment's pods may not name the Secret `name`, or undefined when they may: a Secret the
 * agent generates for this deployment (`own`), or one the platform's patterns allow — never the
 * Ingress TLS Secret (every deployment's Ingress shares it: its key is the platform's) nor the
 * agent's digest key, whatever the patterns say. Messages name Secrets, never their content.
 */
export function secretRefusal(
  name: string,
  own: ReadonlySet<string>,
  config: RenderConfig,
): string | undefined {
  if (config.ingress.tlsSecretName !== undefined && name === config.ingress.tlsSecretName)
    return `Secret ${inputExcerpt(name)} is the Ingress TLS Secret (render.ingress.tlsSecretName), which no deployment's pods may read`;
  if (name === DIGEST_KEY_SECRET)
    return `Secret ${inputExcerpt(name)} holds the agent's digest key, which no deployment's pods may read`;
  if (own.has(name)) return undefined;
  const patterns = config.policy.secretReferences;
  if (patternList(patterns).matches(name)) return undefined;
  return `Secret ${inputExcerpt(name)} is not allowed by render.policy.secretReferences (${patterns.join(', ') || 'none'})`;
}

/** Every Secret a pod template among the objects names that the policy refuses, at its field. */
export function checkSecretPolicy(objects: readonly KubeObject[], config: RenderConfig): RenderProblem[] {
  const own = new Set(objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name));
  return podReferences(objects).flatMap((reference) => {
    if (reference.kind !== 'Secret') return [];
    const refused = secretRefusal(reference.name, own, config);
    return refused ? [{ path: reference.path, message: refused }] : [];
  });
}
