// bench/procfs.ts: a process's counters and memory as /proc gives them, whatever its command name.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readProcStat, readProcStatus } from '../../../bench/procfs.ts';

let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('bench/procfs.ts', () => {
  it('reads the fields after a command name that holds parentheses and spaces', async () => {
    dir = await mkdtemp(join(tmpdir(), 'procfs-'));
    // The command name is the executable's file name: a link named like a stat line's separator.
    const odd = join(dir, 'x) (y');
    await symlink('/bin/sleep', odd);
    const child = spawn(odd, ['30'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => child.once('spawn', resolve));
      const stat = await readProcStat(child.pid ?? 0);
      expect(stat?.comm).toBe('x) (y');
      expect(Number.isInteger(stat?.cpuTicks)).toBe(true);
      expect(Number.isInteger(stat?.majorFaults)).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it("reads this process's resident memory and its peak, and nothing for a process that is gone", async () => {
    const status = await readProcStatus(process.pid);
    expect(status?.rssKiB).toBeGreaterThan(0);
    expect(status?.hwmKiB).toBeGreaterThanOrEqual(status?.rssKiB ?? Number.POSITIVE_INFINITY);
    expect(Number.isInteger(status?.rssFileKiB)).toBe(true);
    // Above the kernel's largest pid (2^22).
    expect(await readProcStatus(5_000_000)).toBeUndefined();
    expect(await readProcStat(5_000_000)).toBeUndefined();
  });
});
