// A process's CPU time, page faults and memory as Linux reports them in /proc/PID/stat and
// /proc/PID/status, and this process's TCP connections (proc(5)).
import { readdir, readFile, readlink } from 'node:fs/promises';

/** Linux clock ticks a second (USER_HZ), the unit of /proc/PID/stat's CPU times. */
export const CLOCK_TICKS = 100;

export interface ProcStat {
  /** The command name (at most 15 characters). */
  readonly comm: string;
  /** User + system CPU time, in clock ticks. */
  readonly cpuTicks: number;
  /** Page faults that read from disk (majflt): a process at its memory limit re-reads its evicted code. */
  readonly majorFaults: number;
}

/** /proc/PID/stat, or undefined once the process is gone. */
export async function readProcStat(pid: number | string): Promise<ProcStat | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  // The command, in parentheses, may hold spaces and parentheses itself: the fields follow the last ')'.
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  // After the command: state is field 3, majflt 12, utime 14 and stime 15 (1-based, as proc(5) counts).
  return {
    comm: text.slice(text.indexOf('(') + 1, close),
    cpuTicks: Number(fields[11]) + Number(fields[12]),
    majorFaults: Number(fields[9]),
  };
}

/** A process's user + system CPU time in seconds; NaN once it is gone. */
export async function cpuSeconds(pid: number | string): Promise<number> {
  const stat = await readProcStat(pid);
  return stat ? stat.cpuTicks / CLOCK_TICKS : Number.NaN;
}

export interface ProcStatus {
  /** Resident memory now (VmRSS), in KiB; NaN where the kernel gives none (a zombie). */
  readonly rssKiB: number;
  /** The peak of the resident memory (VmHWM), in KiB. */
  readonly hwmKiB: number;
  /** The resident pages of files (RssFile: the binary and its libraries), which a memory limit evicts first. */
  readonly rssFileKiB: number;
}

/** /proc/PID/status's memory lines, or undefined once the process is gone. */
export async function readProcStatus(pid: number | string): Promise<ProcStatus | undefined> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM'), rssFileKiB: kib('RssFile') };
}

/** This process's established TCP connections to `port` (its socket fds matched to /proc/net/tcp). */
export async function connectionsTo(port: number): Promise<number> {
  const own = new Set<string>();
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) own.add(inode);
  }
  let count = 0;
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    const lines = (await readFile(table, 'utf8').catch(() => '')).split('\n').slice(1);
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      // rem_address is field 3 (hex ip:port), st field 4 (01: ESTABLISHED), inode field 10.
      const remotePort = Number.parseInt(f[2]?.split(':')[1] ?? '', 16);
      if (remotePort === port && f[3] === '01' && own.has(f[9] ?? '')) count++;
    }
  }
  return count;
}
