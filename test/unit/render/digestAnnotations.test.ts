// Which digests render writes cover secret values, and how commands without the agent's digest key
// show them: render masks those; diff compares none and masks them all.
import { describe, expect, it } from 'vitest';
import { ANNOTATION_CONFIG_CHECKSUM, ANNOTATION_SPEC_HASH } from '../../../src/objects/ownership.ts';
import {
  maskDigests,
  maskSecretDigests,
  SECRET_DIGEST_MASK,
  UNCOMPARED_DIGEST_MASK,
  withLiveDigests,
} from '../../../src/render/digestAnnotations.ts';
import { type KubeObject, RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import { withSpec } from '../../support/renderFixtures.ts';

function rendered(): KubeObject[] {
  const input = withSpec(
    { min_scale: 1, max_scale: 1 },
    { secrets: [{ name: 'API_TOKEN', value: 'hunter2' }] },
  );
  const result = renderDeployment(input, RenderConfig.parse({}));
  if (!result.ok) throw result.error;
  return result.value.objects;
}

/** Each object's spec hash and its pod template's config checksum, by kind. */
function digests(objects: readonly object[]): Record<string, (string | undefined)[]> {
  return Object.fromEntries(
    (objects as KubeObject[]).map((o) => {
      const template = (
        o.spec as { template?: { metadata: { annotations: Record<string, string> } } } | undefined
      )?.template;
      return [
        o.kind,
        [
          o.metadata.annotations[ANNOTATION_SPEC_HASH],
          template?.metadata.annotations[ANNOTATION_CONFIG_CHECKSUM],
        ],
      ];
    }),
  );
}

describe('digest annotations without the digest key', () => {
  it('render masks the config checksum and the spec hashes that cover it or the values of a Secret, no other', () => {
    const objects = rendered();
    const before = digests(objects);
    expect(digests(objects.map(maskSecretDigests))).toEqual({
      Secret: [SECRET_DIGEST_MASK, undefined],
      Service: before.Service,
      Deployment: [SECRET_DIGEST_MASK, SECRET_DIGEST_MASK],
      NetworkPolicy: before.NetworkPolicy,
    });
    // A copy: the objects themselves are untouched.
    expect(digests(objects)).toEqual(before);
  });

  it('diff masks every digest, and dry-runs the live ones in place of the unkeyed ones (the mask where none)', () => {
    const objects = rendered();
    const all = (mask: string) => ({
      Secret: [mask, undefined],
      Service: [mask, undefined],
      Deployment: [mask, mask],
      NetworkPolicy: [mask, undefined],
    });
    expect(digests(objects.map((o) => maskDigests(o)))).toEqual(all(UNCOMPARED_DIGEST_MASK));
    const live = objects.map((o) => {
      const copy = structuredClone(o);
      copy.metadata.annotations[ANNOTATION_SPEC_HASH] = 'live-spec-hash';
      const template = (
        copy.spec as { template?: { metadata: { annotations: Record<string, string> } } } | undefined
      )?.template;
      if (template) template.metadata.annotations[ANNOTATION_CONFIG_CHECKSUM] = 'live-checksum';
      return copy;
    });
    expect(digests(objects.map((o, i) => withLiveDigests(o, live[i])))).toEqual({
      Secret: ['live-spec-hash', undefined],
      Service: ['live-spec-hash', undefined],
      Deployment: ['live-spec-hash', 'live-checksum'],
      NetworkPolicy: ['live-spec-hash', undefined],
    });
    expect(digests(objects.map((o) => withLiveDigests(o, undefined)))).toEqual(all(UNCOMPARED_DIGEST_MASK));
  });
});
