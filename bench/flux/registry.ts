// Flux's source for bench:sync: one OCI artifact (a gzipped tarball of every deployment's
// directory) served by a read-only OCI distribution endpoint on 127.0.0.1, which source-controller
// pulls as an OCIRepository. Offline and on this machine: no registry process, no push protocol;
// only what a pull asks for (the /v2/ probe, the tag's manifest, the blobs).
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Flux's own media types for an artifact (what `flux push artifact` writes). */
const CONFIG_TYPE = 'application/vnd.cncf.flux.config.v1+json';
const CONTENT_TYPE = 'application/vnd.cncf.flux.content.v1.tar+gzip';
const MANIFEST_TYPE = 'application/vnd.oci.image.manifest.v1+json';

const digestOf = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

export interface ArtifactRegistry {
  /** `oci://127.0.0.1:PORT/REPOSITORY`, the OCIRepository's url. */
  readonly url: string;
  readonly tag: string;
  /** Serves `tarball` as the tag's artifact from now on; returns the manifest's digest. */
  publish(tarball: Buffer, revision: string): string;
  close(): Promise<void>;
}

export async function startArtifactRegistry(
  repository = 'bench/fleet',
  tag = 'latest',
): Promise<ArtifactRegistry> {
  const blobs = new Map<string, Buffer>();
  let manifest: { body: Buffer; digest: string } | undefined;
  let currentLayer: string | undefined;
  let previousLayer: string | undefined;
  const config = Buffer.from('{}');
  blobs.set(digestOf(config), config);

  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://registry').pathname;
    const send = (status: number, body: Buffer | undefined, headers: Record<string, string> = {}) => {
      response.writeHead(status, {
        'Docker-Distribution-API-Version': 'registry/2.0',
        ...(body ? { 'Content-Length': String(body.length) } : {}),
        ...headers,
      });
      response.end(request.method === 'HEAD' ? undefined : body);
    };
    if (path === '/v2/' || path === '/v2')
      return send(200, Buffer.from('{}'), { 'Content-Type': 'application/json' });
    const manifestPath = `/v2/${repository}/manifests/`;
    if (path.startsWith(manifestPath) && manifest) {
      const reference = path.slice(manifestPath.length);
      if (reference === tag || reference === manifest.digest)
        return send(200, manifest.body, {
          'Content-Type': MANIFEST_TYPE,
          'Docker-Content-Digest': manifest.digest,
        });
    }
    const blobPath = `/v2/${repository}/blobs/`;
    if (path.startsWith(blobPath)) {
      const digest = path.slice(blobPath.length);
      const blob = blobs.get(digest);
      if (blob)
        return send(200, blob, {
          'Content-Type': 'application/octet-stream',
          'Docker-Content-Digest': digest,
        });
    }
    return send(404, Buffer.from('{"errors":[{"code":"NAME_UNKNOWN"}]}'), {
      'Content-Type': 'application/json',
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `oci://127.0.0.1:${port}/${repository}`,
    tag,
    publish(tarball, revision) {
      const layerDigest = digestOf(tarball);
      // The current layer and the one before it (a pull of the previous manifest may still be under
      // way); older ones go, so that 50 changes of a large fleet do not pile up in memory.
      if (previousLayer !== undefined) blobs.delete(previousLayer);
      previousLayer = currentLayer;
      currentLayer = layerDigest;
      blobs.set(layerDigest, tarball);
      const body = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: MANIFEST_TYPE,
          config: { mediaType: CONFIG_TYPE, digest: digestOf(config), size: config.length },
          layers: [{ mediaType: CONTENT_TYPE, digest: layerDigest, size: tarball.length }],
          annotations: {
            'org.opencontainers.image.created': new Date().toISOString(),
            'org.opencontainers.image.revision': revision,
          },
        }),
      );
      manifest = { body, digest: digestOf(body) };
      return manifest.digest;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
