// Where render writes its digests (each object's spec hash, a pod template's config checksum), and
// how a command without the agent's digest key shows them: an unkeyed digest of content that holds
// a secret value lets whoever reads it guess a weak secret offline (docs/design.md, "Secret
// values stay secret"). Pure.
import { ANNOTATION_CONFIG_CHECKSUM, ANNOTATION_SPEC_HASH } from '../objects/ownership.ts';

/** What `render` prints instead of a digest of secret values, having no digest key. */
export const SECRET_DIGEST_MASK =
  "(masked: an unkeyed digest of secret values; only the agent's digest key may make it)";
/** What `diff` shows, on both sides, for a digest it cannot compare without the agent's key. */
export const UNCOMPARED_DIGEST_MASK = "(not compared: the agent's digest key is not available)";

type Json = Record<string, unknown>;

/** One digest annotation of an object: where it is, and whether it covers secret values. */
interface DigestSite {
  readonly annotations: Json;
  readonly key: string;
  readonly ofSecretValues: boolean;
}

const recordAt = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;

/** The metadata of an object's pod template (a workload's or a PodTemplate's), if it has one. */
function templateMetadata(object: Json): Json | undefined {
  const template = object.kind === 'PodTemplate' ? object.template : recordAt(object.spec)?.template;
  return recordAt(recordAt(template)?.metadata);
}

/** A Secret with values: its spec hash is a digest of them. */
function holdsSecretValues(object: Json): boolean {
  if (object.kind !== 'Secret') return false;
  const values = { ...recordAt(object.data), ...recordAt(object.stringData) };
  return Object.keys(values).length > 0;
}

/** Every digest annotation the object carries (on a copy the caller owns, to change in place). */
function digestSites(object: Json): DigestSite[] {
  const sites: DigestSite[] = [];
  const template = recordAt(templateMetadata(object)?.annotations);
  const checksum = template !== undefined && ANNOTATION_CONFIG_CHECKSUM in template;
  // The config checksum covers the Secret's values; a spec hash covers the checksum it holds.
  if (checksum) sites.push({ annotations: template, key: ANNOTATION_CONFIG_CHECKSUM, ofSecretValues: true });
  const own = recordAt(recordAt(object.metadata)?.annotations);
  if (own !== undefined && ANNOTATION_SPEC_HASH in own)
    sites.push({
      annotations: own,
      key: ANNOTATION_SPEC_HASH,
      ofSecretValues: checksum || holdsSecretValues(object),
    });
  return sites;
}

/** The object with each digest that covers secret values replaced by SECRET_DIGEST_MASK. */
export function maskSecretDigests<T extends object>(object: T): T {
  const copy = structuredClone(object);
  for (const site of digestSites(copy as Json))
    if (site.ofSecretValues) site.annotations[site.key] = SECRET_DIGEST_MASK;
  return copy;
}

/** The object with every digest replaced by UNCOMPARED_DIGEST_MASK (both sides of a diff). */
export function maskDigests<T extends object>(object: T): T {
  const copy = structuredClone(object);
  for (const site of digestSites(copy as Json)) site.annotations[site.key] = UNCOMPARED_DIGEST_MASK;
  return copy;
}

/**
 * The desired object with the live object's digests in place of its own (unkeyed) ones, so that a
 * dry run compares everything but them; where the live object has none, the mask.
 */
export function withLiveDigests<T extends object>(desired: T, live: object | undefined): T {
  const copy = structuredClone(desired);
  const liveSites = live === undefined ? [] : digestSites(live as Json);
  for (const site of digestSites(copy as Json)) {
    const found = liveSites.find((s) => s.key === site.key)?.annotations[site.key];
    site.annotations[site.key] = typeof found === 'string' ? found : UNCOMPARED_DIGEST_MASK;
  }
  return copy;
}
