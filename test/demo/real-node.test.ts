// `npm run demo` on the real node. `npm test` runs this project after unit and integration (its
// posttest): their cluster holds the machine's one real node until it stops. The deployments of
// the demo's first namespace run on the node: each answers the command the demo prints for it,
// chat-api's probe app opens the PostgreSQL and Redis the agent rendered with the passwords it
// generated, and SIGTERM takes the node away again.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { REAL_NODE_LOCK_DIR, realNodeMissing } from '../cluster/realNodeLauncher.ts';
import { eventually, GiveUp } from '../support/eventually.ts';
import { runInUserShell, userEnv } from '../support/userShell.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const DEMO = new URL('../cluster/demo.ts', import.meta.url).pathname;

const missing = await realNodeMissing();
if (missing) process.stderr.write(`[real node] demo/real-node skips: ${missing}\n`);

describe.skipIf(missing !== undefined)('npm run demo on the real node', () => {
  let child: ChildProcess | undefined;
  let output = '';
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
      /\[demo\] serving on the real node: hello-web: (curl -s http:\/\/[\d.]+\/ok)$/m,
      300_000,
    );
    const chat = await waitFor(
      /\[demo\] serving on the real node: chat-api: (curl -s http:\/\/[\d.]+\/stores)$/m,
      300_000,
    );
    // The rest settle as on kwok: agent-platform DEPLOYED there, the invalid one refused.
    await waitFor(/\[demo\] agent-platform \(apps-staging\): revision \w{8}, DEPLOYED, /, 120_000);
    await waitFor(/\[demo\] broken-limits \(apps-staging\): revision \w{8}, DEPLOY_FAILED, /, 60_000);

    const ok = await runInUserShell(hello[1] ?? '');
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ ok: true });

    // The generated passwords open the stores; max_connections is the seed's db_max_connections.
    const stores = await runInUserShell(chat[1] ?? '');
    expect(stores.code, stores.stderr).toBe(0);
    expect(JSON.parse(stores.stdout)).toEqual({
      DATABASE_URI: { ok: true, max_connections: 100 },
      POSTGRES_URI: { ok: true, max_connections: 100 },
      REDIS_URI: { ok: true },
    });

    // Every pod of apps runs on the real node; none of apps-staging does.
    const kubeconfig = output.match(/export KUBECONFIG=(\S+)/)?.[1] ?? '';
    const kubectl = output.match(/kubectl: +(\S+\/kubectl) /)?.[1] ?? '';
    const pods = await runInUserShell(
      `KUBECONFIG=${kubeconfig} ${kubectl} get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.labels.app\\.kubernetes\\.io/instance} {.metadata.labels.app\\.kubernetes\\.io/component} {.spec.nodeName} {.status.phase}{"\\n"}{end}'`,
    );
    expect(pods.code, pods.stderr).toBe(0);
    const lines = pods.stdout.trim().split('\n');
    const apps = lines.filter((line) => line.startsWith('apps '));
    // Each of them, of each component: hello-web, and chat-api with its database and its Redis.
    expect(new Set(apps.map((line) => line.split(' ').slice(1, 3).join(' ')))).toEqual(
      new Set(['hello-web main', 'chat-api main', 'chat-api database', 'chat-api kvstore']),
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
