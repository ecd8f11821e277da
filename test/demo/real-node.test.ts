// `npm run demo` on the real node. `npm test` runs this project after unit and integration (its
// posttest): their cluster holds the machine's one real node until it stops. The deployments of
// the demo's first namespace run on the node: each answers the command the demo prints for it —
// chat-api, a real LangGraph server, runs its graph; hello-web's probe app opens the PostgreSQL
// and Redis the agent provisioned for it with the passwords it generated — the printed
// `langgraph deploy`, run as printed by a newcomer with the CLI installed, ends DEPLOYED and its
// server answers a run, and SIGTERM takes the node away again.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REAL_NODE_LOCK_DIR, realNodeMissing } from '../cluster/realNodeLauncher.ts';
import { eventually, GiveUp } from '../support/eventually.ts';
import { installLanggraphCli, runCommand } from '../support/langgraphCli.ts';
import { runInUserShell, userEnv } from '../support/userShell.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const DEMO = new URL('../cluster/demo.ts', import.meta.url).pathname;

const missing = await realNodeMissing();
if (missing) process.stderr.write(`[real node] demo/real-node skips: ${missing}\n`);

describe.skipIf(missing !== undefined)('npm run demo on the real node', () => {
  let child: ChildProcess | undefined;
  let output = '';
  let home: string | undefined;
  const exited = () =>
    new Promise<number | string>((resolve) => {
      if (!child || child.exitCode !== null || child.signalCode !== null)
        resolve(child?.exitCode ?? child?.signalCode ?? 'not started');
      else child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
    });

  function waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    return eventually(
      () => `${pattern} in the demo's output:\n${output}`,
      () => {
        const match = output.match(pattern);
        if (match) return match;
        if (child?.exitCode !== null) throw new GiveUp(`the demo exited before ${pattern}:\n${output}`);
        return undefined;
      },
      timeoutMs,
      500,
    );
  }

  afterAll(async () => {
    if (home) await rm(home, { recursive: true, force: true });
    if (child && child.exitCode === null && child.signalCode === null) {
      const done = exited();
      child.kill('SIGTERM');
      const timer = setTimeout(() => child?.kill('SIGKILL'), 30_000);
      await done;
      clearTimeout(timer);
    }
  });

  it('runs the first namespace on the node, each deployment answering the command it prints', async () => {
    child = spawn(process.execPath, [DEMO], { cwd: ROOT, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);

    // The node is the demo's, not a kwok fallback: nothing else holds it now.
    await waitFor(/\[demo\] real node: (.*)/, 600_000);
    expect(output).toMatch(/\[demo\] real node: the deployments in apps run on it/);

    const hello = await waitFor(
      /\[demo\] serving on the real node: hello-web: (curl -s http:\/\/[\d.]+\/stores)$/m,
      300_000,
    );
    const chat = await waitFor(
      /\[demo\] serving on the real node: chat-api: (curl -s http:\/\/[\d.]+\/runs\/wait .*)$/m,
      300_000,
    );
    // The rest settle as on kwok: agent-platform DEPLOYED there, the invalid one refused.
    await waitFor(/\[demo\] agent-platform \(apps-staging\): revision \w{8}, DEPLOYED, /, 120_000);
    await waitFor(/\[demo\] broken-limits \(apps-staging\): revision \w{8}, DEPLOY_FAILED, /, 60_000);

    // A run of the LangGraph server's graph, in the server's PostgreSQL: its answer.
    const run = await runInUserShell(chat[1] ?? '');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ count: 1 });

    // The stores the listener provisions for every deployment: the generated passwords open them.
    const stores = await runInUserShell(hello[1] ?? '');
    expect(stores.code, stores.stderr).toBe(0);
    expect(JSON.parse(stores.stdout)).toEqual({
      DATABASE_URI: { ok: true, max_connections: expect.any(Number) },
      POSTGRES_URI: { ok: true, max_connections: expect.any(Number) },
      REDIS_URI: { ok: true },
    });

    // The printed `langgraph deploy`, run as printed after the printed export, by a newcomer who
    // installed the CLI: DEPLOYED, then its server answers a run with the printed curl.
    const exported = (await waitFor(/^\[demo\] {3}(export LANGGRAPH_HOST_URL=.*)$/m, 1_000))[1] ?? '';
    const deploy =
      (await waitFor(/^\[demo\] {3}(cd \S+ && langgraph deploy --image-uri .*)$/m, 1_000))[1] ?? '';
    const bin = await installLanggraphCli();
    home = await mkdtemp(join(tmpdir(), 'k8s-listener-demo-home-'));
    const deployed = await runCommand('bash', ['-c', `${exported}\n${deploy}`], {
      env: { ...userEnv(), PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: home },
      timeoutMs: 280_000,
    });
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}`).toBe(0);
    expect(deployed.stdout).toContain('Deployment successful!');
    const mine = await waitFor(
      /\[demo\] serving on the real node: my-agent: (curl -s http:\/\/[\d.]+\/runs\/wait .*)$/m,
      120_000,
    );
    const answered = await runInUserShell(mine[1] ?? '');
    expect(answered.code, answered.stderr).toBe(0);
    expect(JSON.parse(answered.stdout)).toEqual({ count: 1 });

    // Every pod of apps runs on the real node; none of apps-staging does.
    const kubeconfig = output.match(/export KUBECONFIG=(\S+)/)?.[1] ?? '';
    const kubectl = output.match(/kubectl: +(\S+\/kubectl) /)?.[1] ?? '';
    const pods = await runInUserShell(
      `KUBECONFIG=${kubeconfig} ${kubectl} get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.labels.app\\.kubernetes\\.io/instance} {.metadata.labels.app\\.kubernetes\\.io/component} {.spec.nodeName} {.status.phase}{"\\n"}{end}'`,
    );
    expect(pods.code, pods.stderr).toBe(0);
    const lines = pods.stdout.trim().split('\n');
    const apps = lines.filter((line) => line.startsWith('apps '));
    // Each of them, of each component: each with its database and its Redis.
    expect(new Set(apps.map((line) => line.split(' ').slice(1, 3).join(' ')))).toEqual(
      new Set(
        ['hello-web', 'chat-api', 'my-agent'].flatMap((name) =>
          ['main', 'database', 'kvstore'].map((component) => `${name} ${component}`),
        ),
      ),
    );
    for (const line of apps) expect(line).toMatch(/ real-node Running$/);
    for (const line of lines.filter((l) => l.startsWith('apps-staging ')))
      expect(line).not.toContain('real-node');
  });

  it('SIGTERM stops the demo and gives the machine its real node back', async () => {
    expect(child).toBeDefined();
    const done = exited();
    child?.kill('SIGTERM');
    expect(await done).toBe(0);
    // The demo exits at once; the node's reaper (test/cluster/realNodeLauncher.ts) sees it gone within a
    // second and takes away what the node added to the machine, then the lock.
    await eventually(
      'the real node lock released',
      () => (existsSync(REAL_NODE_LOCK_DIR) ? undefined : true),
      60_000,
      500,
    );
    expect(existsSync(REAL_NODE_LOCK_DIR)).toBe(false);
  });
});
