// The emulator command from an install whose path has a space in it: the bundled seed is found
// (a file URL's pathname keeps the space as %20, which no file has).
import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SEED_DEPLOYMENTS } from '../../support/emulatorHarness.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
let dir: string | undefined;
let child: ChildProcess | undefined;

afterAll(async () => {
  child?.kill('SIGTERM');
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The url the emulator logs once it listens, or the reason it stopped first. */
function listeningUrl(process: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(output);
      if (match?.[1]) resolve(match[1]);
    };
    process.stdout?.on('data', onData);
    process.stderr?.on('data', onData);
    process.once('exit', (code) => reject(new Error(`emulator exited ${code}: ${output}`)));
  });
}

/** No key from the environment: the emulator then takes every request. */
function withoutApiKey(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.K8S_LISTENER_EMULATOR_API_KEY;
  return env;
}

describe('emulator command', () => {
  it('loads the bundled seed when installed under a path with a space', async () => {
    dir = await mkdtemp(join(tmpdir(), 'k8s listener '));
    const install = join(dir, 'with space');
    await mkdir(install);
    await cp(join(ROOT, 'src'), join(install, 'src'), { recursive: true });
    await cp(join(ROOT, 'package.json'), join(install, 'package.json'));
    await symlink(join(ROOT, 'node_modules'), join(install, 'node_modules'));

    child = spawn(
      process.execPath,
      [join(install, 'src/cli/main.ts'), 'emulator', '--port', '0', '--log-level', 'info'],
      { cwd: dir, env: withoutApiKey() },
    );
    const url = await listeningUrl(child);
    const response = await fetch(`${url}/v2/deployments?limit=100`);
    expect(response.status).toBe(200);
    const listing = (await response.json()) as {
      resources: { id: string }[];
    };
    expect(listing.resources.map((d) => d.id)).toContain(SEED_DEPLOYMENTS.chatApi);
  }, 30_000);
});
