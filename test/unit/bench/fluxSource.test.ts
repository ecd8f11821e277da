// bench/flux: the OCI endpoint source-controller pulls Flux's artifact from, and the log lines
// that tell which Kustomization applied which revision.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { AppliedRevisions } from '../../../bench/flux/controllers.ts';
import { type ArtifactRegistry, startArtifactRegistry } from '../../../bench/flux/registry.ts';

const sha256 = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

describe('bench/flux/registry.ts', () => {
  let registry: ArtifactRegistry | undefined;
  afterEach(async () => registry?.close());

  it("serves the tag's manifest, its digest, and its layer as a pull asks for them", async () => {
    registry = await startArtifactRegistry('bench/fleet', 'latest');
    const base = registry.url.replace('oci://', 'http://').replace('/bench/fleet', '');
    expect((await fetch(`${base}/v2/`)).status).toBe(200);
    expect((await fetch(`${base}/v2/bench/fleet/manifests/latest`)).status).toBe(404);

    const tarball = Buffer.from('first');
    const digest = registry.publish(tarball, 'cold');
    const response = await fetch(`${base}/v2/bench/fleet/manifests/latest`);
    const body = Buffer.from(await response.arrayBuffer());
    expect(response.headers.get('docker-content-digest')).toBe(digest);
    expect(sha256(body)).toBe(digest);
    const manifest = JSON.parse(body.toString()) as { layers: { digest: string; size: number }[] };
    expect(manifest.layers).toEqual([
      expect.objectContaining({ digest: sha256(tarball), size: tarball.length }),
    ]);
    const head = await fetch(`${base}/v2/bench/fleet/manifests/${digest}`, { method: 'HEAD' });
    expect(head.headers.get('docker-content-digest')).toBe(digest);
    const blob = await fetch(`${base}/v2/bench/fleet/blobs/${sha256(tarball)}`);
    expect(Buffer.from(await blob.arrayBuffer()).toString()).toBe('first');
  });

  it('keeps the layer before the current one for a pull under way, and drops older ones', async () => {
    registry = await startArtifactRegistry();
    const base = registry.url.replace('oci://', 'http://').replace('/bench/fleet', '');
    const blobStatus = async (content: string) =>
      (await fetch(`${base}/v2/bench/fleet/blobs/${sha256(Buffer.from(content))}`)).status;
    registry.publish(Buffer.from('one'), '1');
    registry.publish(Buffer.from('two'), '2');
    expect(await blobStatus('one')).toBe(200);
    registry.publish(Buffer.from('three'), '3');
    expect([await blobStatus('one'), await blobStatus('two'), await blobStatus('three')]).toEqual([
      404, 200, 200,
    ]);
  });
});

describe('AppliedRevisions', () => {
  it("counts each Kustomization once per revision from kustomize-controller's JSON log lines", () => {
    const applied = new AppliedRevisions();
    const line = (name: string, revision: string, msg = 'server-side apply completed') =>
      JSON.stringify({ level: 'info', msg, Kustomization: { name, namespace: 'flux-system' }, revision });
    applied.note(line('bench-0', 'latest@sha256:a'));
    applied.note(line('bench-0', 'latest@sha256:a'));
    applied.note(line('bench-1', 'latest@sha256:a'));
    applied.note(line('bench-1', 'latest@sha256:b'));
    applied.note(line('bench-2', 'latest@sha256:a', 'Reconciliation finished in 1s'));
    applied.note('not json, no apply');
    expect(applied.count('latest@sha256:a')).toBe(2);
    expect(applied.count('latest@sha256:b')).toBe(1);
  });
});
