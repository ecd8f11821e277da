// bench/procfs.ts: a process's counters and memory as /proc gives them, whatever its command name.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectionsTo, cpuSeconds, readProcStat, readProcStatus } from '../../../bench/procfs.ts';

let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('bench/procfs.ts', () => {
  it("gives a process's CPU seconds, and NaN once it is gone", async () => {
    const start = await cpuSeconds(process.pid);
    let spin = 0;
    for (const until = performance.now() + 50; performance.now() < until; ) spin++;
    expect(spin).toBeGreaterThan(0);
    expect(await cpuSeconds(process.pid)).toBeGreaterThan(start);
    expect(await cpuSeconds(2 ** 30)).toBeNaN();
  });

  it('counts only the connections of this process to a port', async () => {
    const server = createServer(() => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const sockets = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(port, '127.0.0.1', () => resolve(socket));
          }),
      ),
    );
    try {
      // The server's accepted ends are this process's too, but their remote port is the client's.
      expect(await connectionsTo(port)).toBe(3);
    } finally {
      for (const socket of sockets) socket.destroy();
      server.close();
    }
  });

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
