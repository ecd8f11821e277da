// The pod's memory limit on this machine: a cgroup v1 memory controller the agent runs in, so that
// Node sizes its heap as in the pod and a limit reached shows as in the pod.
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from './log.ts';

/** A memory cgroup limited to `mib`, or undefined (with the reason logged) when none can be made. */
export async function makeMemoryCgroup(mib: number): Promise<string | undefined> {
  if (mib <= 0) return undefined;
  const dir = `/sys/fs/cgroup/memory/k8s-listener-bench-${process.pid}`;
  try {
    await mkdir(dir);
    await writeFile(join(dir, 'memory.limit_in_bytes'), String(mib * 2 ** 20));
    return dir;
  } catch (error) {
    log(`no memory cgroup (${(error as Error).message}): the agent runs without the pod's memory limit`);
    return undefined;
  }
}

/** Removes the cgroup once no process is left in it. */
export async function removeMemoryCgroup(cgroup: string | undefined): Promise<void> {
  if (cgroup) await rmdir(cgroup).catch(() => undefined);
}

/** How often the cgroup's limit was hit so far (memory.failcnt). */
export async function limitHits(cgroup: string | undefined): Promise<number | undefined> {
  if (!cgroup) return undefined;
  return Number(await readFile(join(cgroup, 'memory.failcnt'), 'utf8').catch(() => Number.NaN));
}
