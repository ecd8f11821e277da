// The content of Flux's source artifact: one directory per deployment (its rendered objects and a
// kustomization.yaml naming them), packed as the gzipped tarball an OCI artifact layer carries.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeObject } from '../../src/render/index.ts';

const execFileAsync = promisify(execFile);

/** A deployment's directory in the artifact: the Kustomization's `spec.path`. */
export const pathOf = (deploymentName: string) => `./${deploymentName}`;

export class ArtifactTree {
  readonly #root: string;
  readonly #tarball: string;

  constructor(workDir: string) {
    this.#root = join(workDir, 'flux-artifact');
    this.#tarball = join(workDir, 'flux-artifact.tar.gz');
  }

  /** Writes (or rewrites) one deployment's directory. */
  async write(deploymentName: string, objects: readonly KubeObject[]): Promise<void> {
    const dir = join(this.#root, deploymentName);
    await mkdir(dir, { recursive: true });
    // JSON is YAML: one document per object.
    await writeFile(join(dir, 'objects.yaml'), objects.map((o) => JSON.stringify(o)).join('\n---\n'));
    await writeFile(join(dir, 'kustomization.yaml'), 'resources:\n  - objects.yaml\n');
  }

  /** The whole tree as a gzipped tarball. */
  async pack(): Promise<Buffer> {
    await execFileAsync('tar', ['-czf', this.#tarball, '-C', this.#root, '.']);
    return readFile(this.#tarball);
  }
}
