// The agent as the image runs it, for the tests and benchmarks that measure it: the bundle `npm run
// build` makes (built here into a directory of the caller's, from the same command) and the
// image's environment (the Dockerfile's ENV; test/unit/package/dockerfile.test.ts keeps them equal).
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;

export const IMAGE_ENV = {
  NODE_ENV: 'production',
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
  NODE_OPTIONS: '--max-semi-space-size=16 --max-old-space-size-percentage=60',
} as const;

/**
 * Bundles the agent into `dir` with the esbuild command of package.json's build script (its
 * output directory moved there); returns the entry point to run with node.
 */
export async function buildBundle(dir: string): Promise<string> {
  const scripts = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).scripts as { build: string };
  const command = /esbuild (.*?) && /.exec(scripts.build)?.[1];
  if (!command) throw new Error('package.json build script has no esbuild command');
  // Words as a shell would split them (one argument is double-quoted).
  const words = [...command.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
  const args = words.map((word) => (word === '--outdir=dist/cli' ? `--outdir=${join(dir, 'cli')}` : word));
  if (!args.some((word) => word.startsWith(`--outdir=${dir}`)))
    throw new Error('build script has no --outdir=dist/cli');
  await mkdir(dir, { recursive: true });
  await execFileAsync(join(ROOT, 'node_modules', '.bin', 'esbuild'), args, { cwd: ROOT });
  // ES modules outside the package: say so, as the package's own package.json does.
  await writeFile(join(dir, 'package.json'), '{"type":"module"}\n');
  return join(dir, 'cli', 'main.js');
}
