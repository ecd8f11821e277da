// A dictionary attack on the digests someone can read (objects in the cluster, what a command
// prints), as whoever knows a deployment but its secret would run it: render
// each guess as the agent would — every object's digests, the spec hash and input hash its
// inventory records — and look for any of them among what was read.
import type { Deployment, Listener, Revision } from '../../src/controlplane/schemas/index.ts';
import { maskSecret } from '../../src/kube/serverDiff.ts';
import { renderInputHash } from '../../src/reconcile/steps/agentChange.ts';
import { RenderConfig, renderDeployment } from '../../src/render/index.ts';

/** The agent's digests: 16 hex digits (an image digest's 64, a uuid's groups, do not match). */
const DIGEST = /\b[0-9a-f]{16}\b/g;

/** Every digest in a text. */
export function digestsIn(text: string): Set<string> {
  return new Set(text.match(DIGEST) ?? []);
}

/** `size` words, the secrets among them (spread out, none first or last). */
export function dictionary(secrets: string | readonly string[], size = 10_000): string[] {
  const words = Array.from({ length: size }, (_, i) => `word-${i.toString(36)}`);
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  list.forEach((secret, i) => {
    words[Math.floor((size * (i + 1)) / (list.length + 1))] = secret;
  });
  return words;
}

export interface AttackTarget {
  readonly deployment: Deployment;
  readonly revision: Revision | undefined;
  readonly listener: Listener;
  readonly allowedNamespaces: readonly string[] | undefined;
  /** The name of the deployment's one secret, whose value is guessed. */
  readonly secretName: string;
  readonly config?: RenderConfig;
}

/**
 * Every digest the agent would write for the deployment were `guess` its secret: in each rendered
 * object (a Secret's values left out: they are not digests), and its inventory's specHash and
 * inputHash. Unkeyed (undefined) as an attacker computes them; with the agent's key as a control.
 */
export function digestsFor(target: AttackTarget, guess: string, digestKey: Uint8Array | undefined): string[] {
  const deployment: Deployment = {
    ...target.deployment,
    secrets: [{ name: target.secretName, value: guess }],
  };
  const result = renderDeployment(
    {
      deployment,
      revision: target.revision,
      listener: target.listener,
      allowedNamespaces: target.allowedNamespaces,
      digestKey,
    },
    target.config ?? RenderConfig.parse({}),
  );
  if (!result.ok) throw result.error;
  const objects = result.value.objects.map(maskSecret);
  const inputHash = renderInputHash(deployment, target.revision, digestKey);
  return [...digestsIn(JSON.stringify([objects, result.value.specHash, inputHash]))];
}

/**
 * The words whose digests appear among `observed`. Only digests that depend on the guess count: a
 * digest of an object that holds no secret value (a Service's spec hash) is the same for every one.
 */
export function recoveredWords(
  words: readonly string[],
  observed: ReadonlySet<string>,
  digestsOf: (guess: string) => readonly string[],
): string[] {
  const unrelated = new Set(digestsOf('\u0000 no word of the dictionary'));
  return words.filter((guess) =>
    digestsOf(guess).some((digest) => !unrelated.has(digest) && observed.has(digest)),
  );
}
