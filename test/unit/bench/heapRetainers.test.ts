// bench/heapRetainers.ts on a heap snapshot of a process that holds a known amount in one class:
// the class's retained size is found through the dominator tree, and --inside names what it holds.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const TOOL = new URL('../../../bench/heapRetainers.ts', import.meta.url).pathname;

let dir: string;
let snapshot: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'heap-retainers-'));
  // A Holder keeps 2,000 flat strings of 1,000 characters (about 2 MiB) that nothing else
  // references (JSON.parse makes flat strings; concatenation would share pieces).
  const program = `
    class Holder { constructor() { this.items = Array.from({ length: 2000 }, (_, i) => JSON.parse('"' + String(i).padStart(1000, 'x') + '"')); } }
    globalThis.kept = new Holder();
    require('node:v8').writeHeapSnapshot(${JSON.stringify(join(dir, 'test.heapsnapshot'))});
  `;
  await run(process.execPath, ['-e', program]);
  const [file] = (await readdir(dir)).filter((name) => name.endsWith('.heapsnapshot'));
  snapshot = join(dir, file ?? '');
}, 60_000);
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('bench/heapRetainers.ts', () => {
  it('finds the retained size of a class and what it holds', async () => {
    const { stdout } = await run(
      process.execPath,
      [TOOL, snapshot, '--deployments', '1000', '--inside', 'Holder'],
      {
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    const holder = /^\s+([\d.]+) MiB {2}Holder \(1\) \(([\d.]+) KiB per deployment\)$/m.exec(stdout);
    expect(holder, stdout).not.toBeNull();
    // 2,000 × ~1 KiB strings and their array: about 2 MiB, and 2 KiB for each of 1,000 deployments.
    expect(Number(holder?.[1])).toBeGreaterThan(1.9);
    expect(Number(holder?.[1])).toBeLessThan(2.2);
    expect(Number(holder?.[2])).toBeGreaterThan(1.9);
    expect(stdout).toMatch(/inside Holder, by node/);
    expect(stdout).toMatch(/^\s+\d+ KiB\s+1\s+array /m);
  }, 60_000);
});
