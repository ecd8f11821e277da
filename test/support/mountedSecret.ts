// Writes a directory the way the kubelet updates a mounted Secret: each version in a new
// timestamped directory, published by an atomic swap of the `..data` symlink, with the visible
// files being symlinks through `..data` (what a pod sees during an API-key rotation).
import { mkdir, mkdtemp, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface MountedSecret {
  readonly dir: string;
  /** The path a pod reads a key at, e.g. `<dir>/api-key`. */
  path(key: string): string;
  /** Publishes a new version of every file at once; the previous version is removed after. */
  update(files: Record<string, string>): Promise<void>;
  remove(): Promise<void>;
}

export async function mountedSecret(files: Record<string, string>): Promise<MountedSecret> {
  const dir = await mkdtemp(join(tmpdir(), 'secret-'));
  let version = 0;
  const update = async (next: Record<string, string>) => {
    version += 1;
    const stamp = `..${new Date().toISOString().replace(/[-:.TZ]/g, '_')}.${String(version).padStart(9, '0')}`;
    await mkdir(join(dir, stamp));
    for (const [name, content] of Object.entries(next)) await writeFile(join(dir, stamp, name), content);
    const previous = await readlink(join(dir, '..data')).catch(() => undefined);
    await symlink(stamp, join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
    for (const name of Object.keys(next))
      await symlink(join('..data', name), join(dir, name)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
    if (previous) await rm(join(dir, previous), { recursive: true });
  };
  await update(files);
  return {
    dir,
    path: (key) => join(dir, key),
    update,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
