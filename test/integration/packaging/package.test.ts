// The production package as users get it: `npm pack` of a clean copy of the tree (prepack builds
// dist), `npm install --omit=dev` of the tarball into an empty directory outside the source tree,
// and the installed `k8s-listener` run from there with plain Node: version, render, check, run.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { app, FAST_RECONCILE, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { docBlock, shellCommands } from '../../support/docBlocks.ts';
import { eventually } from '../../support/eventually.ts';

const REPO = new URL('../../..', import.meta.url).pathname.replace(/\/$/, '');
/** The project's pinned Node (the `node` devDependency), invoked explicitly: ≥ 22.19 as `engines` says. */
const NODE = join(REPO, 'node_modules', 'node', 'bin', 'node');
const FIXTURE = join(REPO, 'test', 'fixtures', 'deployment-maximal.json');

interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment of a user's shell: none of the variables npm or the suite set for this run. */
function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) =>
        !/^npm_(package|lifecycle|config_local_prefix)/i.test(key) &&
        !key.startsWith('K8S_LISTENER_') &&
        !['INIT_CWD', 'NODE_OPTIONS', 'NODE_PATH'].includes(key),
    ),
  );
}

function exec(command: string, args: readonly string[], cwd: string, timeoutMs = 240_000): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      command,
      [...args],
      { cwd, env: userEnv(), timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The files of the tree as a fresh checkout has them (tracked and new, nothing ignored: no dist). */
async function cleanCopyOfTree(target: string): Promise<void> {
  const listed = await exec(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    REPO,
    30_000,
  );
  expect(listed.code).toBe(0);
  for (const path of listed.stdout.split('\0').filter(Boolean)) {
    const from = join(REPO, path);
    // A tracked file deleted in the work tree is not part of it.
    if (!(await stat(from).catch(() => undefined))?.isFile()) continue;
    await mkdir(dirname(join(target, path)), { recursive: true });
    await copyFile(from, join(target, path));
  }
  // What `npm ci` would install, without installing it again.
  await symlink(join(REPO, 'node_modules'), join(target, 'node_modules'), 'dir');
}

let work: string;
let tarball: string;
let tarballFiles: string[];
let installDir: string;
let bin: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'k8s-listener-package-'));
  const checkout = join(work, 'checkout');
  await cleanCopyOfTree(checkout);
  await mkdir(join(work, 'pack'));
  const packed = await exec('npm', ['pack', '--json', '--pack-destination', join(work, 'pack')], checkout);
  expect(packed.code, packed.stderr).toBe(0);
  const report = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as {
    filename: string;
  }[];
  tarball = join(work, 'pack', report[0]?.filename ?? '');
  const listing = await exec('tar', ['-tzf', tarball], work, 30_000);
  tarballFiles = listing.stdout
    .split('\n')
    .filter(Boolean)
    .map((path) => path.replace(/^package\//, ''));

  // An empty directory with no package.json above it: nothing of the source tree is reachable.
  installDir = join(work, 'install');
  await mkdir(installDir);
  const installed = await exec(
    'npm',
    // From npm's cache where it can (`npm ci` just filled it): a slow registry timed this out once.
    ['install', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', '--no-save', tarball],
    installDir,
  );
  expect(installed.code, installed.stderr).toBe(0);
  bin = join(installDir, 'node_modules', '.bin', 'k8s-listener');
}, 300_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the npm package', () => {
  it('holds compiled JavaScript, the emulator seed and nothing of the sources, tests or chart', () => {
    expect(tarballFiles).toContain('package.json');
    expect(tarballFiles).toContain('dist/cli/main.js');
    expect(tarballFiles).toContain('dist/emulator/fixtures/seed.json');
    expect(tarballFiles.filter((f) => /\.(ts|mts|cts)$/.test(f) && !f.endsWith('.d.ts'))).toEqual([]);
    expect(tarballFiles.filter((f) => /^(src|test|charts|deploy|bench)\//.test(f))).toEqual([]);
    expect(tarballFiles.filter((f) => /(^|\/)(tsconfig|vitest|biome)[^/]*$|Dockerfile/.test(f))).toEqual([]);
    // Every file under dist is bundled output (its source map, its licence notices) but the seed.
    expect(
      tarballFiles.filter(
        (f) => f.startsWith('dist/') && !/\.js(\.map|\.LEGAL\.txt)?$/.test(f) && !f.endsWith('seed.json'),
      ),
    ).toEqual([]);
    expect(tarballFiles.some((f) => f.endsWith('.LEGAL.txt'))).toBe(true);
  });

  it('ships bundles of ASCII text only, which V8 holds at one byte a character', async () => {
    // One non-ASCII character (a name in a licence comment) made Node hold a bundle's whole
    // source as UTF-16: 1.3 MB more heap for the agent.
    const bundles = tarballFiles.filter((f) => f.startsWith('dist/') && f.endsWith('.js'));
    expect(bundles.length).toBeGreaterThan(1);
    for (const file of bundles) {
      const bytes = await readFile(join(installDir, 'node_modules', 'k8s-listener', file));
      expect(
        bytes.findIndex((byte) => byte >= 0x80),
        file,
      ).toBe(-1);
    }
  });

  it('installs with production dependencies only, at the versions the repository pins', async () => {
    const manifest = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    for (const [name, version] of Object.entries(manifest.dependencies)) {
      const installed = JSON.parse(
        await readFile(join(installDir, 'node_modules', name, 'package.json'), 'utf8'),
      ) as { version: string };
      expect(`${name}@${installed.version}`).toBe(`${name}@${version}`);
    }
    for (const name of ['typescript', 'vitest', '@biomejs/biome', 'testcontainers', 'node']) {
      expect(manifest.devDependencies[name], name).toBeDefined();
      expect(await stat(join(installDir, 'node_modules', name)).catch(() => undefined), name).toBeUndefined();
    }
  });

  it('installs as the Dockerfile does: the tarball unpacked, production dependencies at the lockfile versions', async () => {
    const imageDir = join(work, 'image');
    await mkdir(imageDir);
    expect((await exec('tar', ['-xzf', tarball, '--strip-components=1'], imageDir)).code).toBe(0);
    await copyFile(join(REPO, 'package-lock.json'), join(imageDir, 'package-lock.json'));
    const installed = await exec(
      'npm',
      ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'],
      imageDir,
    );
    expect(installed.code, installed.stderr).toBe(0);
    const lock = JSON.parse(await readFile(join(REPO, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; dev?: boolean }>;
    };
    const production = Object.entries(lock.packages).filter(([path, entry]) => path && !entry.dev);
    expect(production.length).toBeGreaterThan(10);
    for (const [path, entry] of production) {
      const manifest = await readFile(join(imageDir, path, 'package.json'), 'utf8').catch(() => undefined);
      // Optional platform packages of another OS are legitimately absent.
      if (manifest === undefined) continue;
      expect(`${path}@${(JSON.parse(manifest) as { version: string }).version}`).toBe(
        `${path}@${entry.version}`,
      );
    }
    const result = await exec(NODE, [join(imageDir, 'dist', 'cli', 'main.js'), 'version'], imageDir);
    expect(result.code, result.stderr).toBe(0);
  });

  it('prints its version', async () => {
    const { version } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
    const result = await exec(NODE, [bin, 'version'], installDir);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  it('installs and runs with the commands of docs/installing.md', async () => {
    const { version } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
    const commands = shellCommands(await docBlock('docs/installing.md', 'The package'));
    // The pack is beforeAll's, with --json added to read the tarball's name; the rest run as written,
    // in an empty directory, with the tarball where the page puts it (/tmp) moved to this test's own.
    expect(commands).toEqual([
      'npm pack --pack-destination /tmp',
      `npm install --omit=dev /tmp/${basename(tarball)}`,
      'npx k8s-listener version',
    ]);
    const dir = join(work, 'documented');
    await mkdir(dir);
    const installed = await exec(
      'bash',
      ['-c', commands[1]?.replace('/tmp/', `${dirname(tarball)}/`) ?? ''],
      dir,
    );
    expect(installed.code, installed.stderr).toBe(0);
    expect(await exec('bash', ['-c', commands[2] ?? ''], dir)).toMatchObject({
      code: 0,
      stdout: `${version}\n`,
    });
  });

  it('renders a deployment exactly as the sources do', async () => {
    const file = join(work, 'deployment.json');
    await copyFile(FIXTURE, file);
    // The maximal example mounts an nfs volume (Pod Security baseline allows it), an inline CSI
    // volume of the secrets-store driver, and names a ServiceAccount.
    const config = join(work, 'render-config.yaml');
    await writeFile(
      config,
      'render:\n  policy:\n    podSecurity: baseline\n    serviceAccounts: [agent-platform]\n    serviceAccountTokens: true\n    csiDrivers: [secrets-store.csi.k8s.io]\n',
    );
    const packaged = await exec(NODE, [bin, 'render', '--file', file, '--config', config], installDir);
    expect(packaged.code, packaged.stderr).toBe(0);
    expect(packaged.stdout).toContain('kind: Deployment');
    const fromSources = await exec(
      NODE,
      [join(REPO, 'src', 'cli', 'main.ts'), 'render', '--file', file, '--config', config],
      REPO,
    );
    expect(packaged.stdout).toBe(fromSources.stdout);
  });

  describe('against the emulator and the test cluster', () => {
    let world: World;
    let configPath: string;
    let agent: ChildProcess | undefined;

    beforeAll(async () => {
      world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
      configPath = join(work, 'config.yaml');
      await writeFile(
        configPath,
        JSON.stringify({
          listenerId: world.listenerId,
          controlPlane: { baseUrl: world.emulator.url },
          kubeconfig: world.kubeconfigPath,
          identity: 'packaged-agent',
          agentNamespace: 'default',
          namespaces: world.namespaces,
          probes: { host: '127.0.0.1', port: 0 },
          reconcile: {
            ...FAST_RECONCILE,
            leaderElection: {
              leaseName: `lease-${world.namespaces[0]}`,
              leaseDurationMs: 3_000,
              renewDeadlineMs: 2_000,
              retryPeriodMs: 500,
            },
          },
        }),
      );
    });
    afterAll(async () => {
      agent?.kill('SIGKILL');
      await world?.close();
    });

    it('passes its preflight check', async () => {
      const result = await exec(NODE, [bin, 'check', '--config', configPath, '--output', 'json'], installDir);
      const report = JSON.parse(result.stdout) as { ok: boolean; checks: { id: string; ok: boolean }[] };
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      expect(report.checks.length).toBeGreaterThan(3);
      expect(result.code).toBe(0);
    });

    it('runs until ready, deploys, and exits 0 on SIGTERM', async () => {
      const child = spawn(NODE, [bin, 'run', '--config', configPath], {
        cwd: installDir,
        env: userEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      agent = child;
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

      const probes = await eventually(
        'the probe address in the start line',
        async () => /"probes":"(http:\/\/[^"]+)"/.exec(output)?.[1],
        20_000,
      );
      await eventually(
        '/readyz 200',
        async () => ((await fetch(`${probes}/readyz`)).status === 200 ? true : undefined),
        30_000,
      );
      const deployment = await world.client.createDeployment(
        app(world, 'packaged', world.namespaces[0] ?? ''),
      );
      await waitForRevision(world, deployment, 'DEPLOYED');

      child.kill('SIGTERM');
      expect(await exited, output).toBe(0);
      agent = undefined;
      expect(output).toContain('"msg":"signal received"');
      expect(output).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find (module|package)/);
    });
  });
});
