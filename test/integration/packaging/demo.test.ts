// `npm run demo` as a real process, twice at once (so neither can depend on a fixed port): the CI
// form exits 0 once it converges with the invalid deployment reported; the interactive form, with
// stdout not a terminal, prints plain lines, its printed status/diff/check commands work while it
// runs, and SIGTERM tears down the agent, the emulator, the cluster processes and its files. Then
// on a terminal (a pseudo-terminal through util-linux `script`): the table redrawn in place, no log
// line in it, and Ctrl-C typed at the terminal tears it down.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually, GiveUp } from '../../support/eventually.ts';
import { runInUserShell, userEnv } from '../../support/userShell.ts';

const ROOT = new URL('../../..', import.meta.url).pathname;
const DEMO = new URL('../../cluster/demo.ts', import.meta.url).pathname;
const LANGGRAPH_INSTALL = new URL('../../langgraph/install.sh', import.meta.url).pathname;
const INVALID_REASON = 'source_config.resource_spec.cpu_limit: the cpu limit (0.25) is below its request (1)';
const VALID = ['hello-web', 'chat-api', 'agent-platform'];

interface RunningDemo {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>;
}

function startDemo(args: readonly string[]): RunningDemo {
  const child = spawn(process.execPath, [DEMO, ...args], {
    cwd: ROOT,
    env: userEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  return { child, output: () => text, exited };
}

function waitForOutput(demo: RunningDemo, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return eventually(
    () => `${pattern} in the demo's output:\n${demo.output()}`,
    () => {
      const match = demo.output().match(pattern);
      if (match) return match;
      if (demo.child.exitCode !== null)
        throw new GiveUp(`the demo exited before ${pattern}:\n${demo.output()}`);
      return undefined;
    },
    timeoutMs,
  );
}

/** After a failed assertion: SIGTERM (the demo cleans up after itself), SIGKILL if it lingers. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.concurrent('npm run demo', () => {
  it('--exit-when-converged exits 0 once every valid deployment is DEPLOYED and the invalid one DEPLOY_FAILED', async () => {
    const demo = startDemo(['--exit-when-converged', '--timeout', '180']);
    const timer = setTimeout(() => demo.child.kill('SIGKILL'), 200_000);
    const code = await demo.exited;
    clearTimeout(timer);
    const output = demo.output();
    expect(code, output).toBe(0);
    expect(output).toMatch(
      new RegExp(
        `broken-limits \\(apps-staging\\): revision \\w{8}, DEPLOY_FAILED, replicas -: .*${literal(INVALID_REASON)}`,
      ),
    );
    for (const name of VALID)
      expect(output).toMatch(new RegExp(`\\[demo\\] ${name} \\(apps[\\w-]*\\): revision \\w{8}, DEPLOYED, `));
    expect(output).toContain(
      '[demo] converged: every valid deployment is DEPLOYED, broken-limits is DEPLOY_FAILED',
    );
    // Free ports: not the fixed 8080 and 9090 of old.
    const emulatorPort = Number(output.match(/control-plane emulator: http:\/\/127\.0\.0\.1:(\d+)/)?.[1]);
    const metricsPort = Number(output.match(/agent metrics: +http:\/\/127\.0\.0\.1:(\d+)\/metrics/)?.[1]);
    expect(emulatorPort).toBeGreaterThan(0);
    expect(metricsPort).toBeGreaterThan(0);
    expect([emulatorPort, metricsPort]).not.toContain(8080);
    expect([emulatorPort, metricsPort]).not.toContain(9090);
  }, 240_000);

  it('--exit-when-converged exits 1 when it does not converge in time, with the agent log tail', async () => {
    // A millisecond: over before the agent's first poll can report anything, the timeout path for real.
    const demo = startDemo(['--exit-when-converged', '--timeout', '0.001']);
    const timer = setTimeout(() => demo.child.kill('SIGKILL'), 200_000);
    const code = await demo.exited;
    clearTimeout(timer);
    const output = demo.output();
    expect(code, output).toBe(1);
    expect(output).toMatch(/\[demo\] not converged after 0\.001 s: \S+ \w+ \(reported: /);
    const logPath = output.match(/agent log kept: (\S+);/)?.[1] ?? '';
    // The log's last lines are in the output (JSON lines), and the file is kept for a look.
    expect(output).toMatch(/^\[demo\] {3}\{"level":"\w+"/m);
    expect(existsSync(logPath)).toBe(true);
    await rm(dirname(logPath), { recursive: true, force: true });
  }, 240_000);

  it('prints status, diff and check commands that work against it while it runs; SIGTERM tears it all down', async () => {
    const demo = startDemo([]);
    try {
      // Plain lines (stdout is a pipe): wait until every deployment has settled.
      for (const name of VALID)
        await waitForOutput(demo, new RegExp(`\\[demo\\] ${name} \\([\\w-]+\\): .*, DEPLOYED, `), 180_000);
      await waitForOutput(demo, /\[demo\] broken-limits \([\w-]+\): .*, DEPLOY_FAILED, /, 30_000);
      const output = demo.output();
      const printed = [
        ...output.matchAll(/^\[demo\] {3}(npm run --silent agent -- (\w+) --config (\S+))$/gm),
      ];
      expect(printed.map((m) => m[2])).toEqual(['status', 'diff', 'check']);
      const configPath = printed[0]?.[3] ?? '';
      expect(existsSync(configPath)).toBe(true);
      const commands = Object.fromEntries(printed.map((m) => [m[2], m[1] ?? '']));

      // The LangGraph CLI's environment, printed for the demo's emulator, works with the real CLI;
      // it turns the CLI's analytics off (a post to a third party, with no timeout, on every command).
      const exported =
        /^\[demo\] {3}(export LANGGRAPH_HOST_URL=\S+ LANGGRAPH_HOST_API_KEY=\S+ LANGGRAPH_CLI_NO_ANALYTICS=1 LISTENER_ID=(\S+) NAMESPACE=(\S+))$/m.exec(
          output,
        );
      expect(exported, output).not.toBeNull();
      const cliBin = (await runInUserShell(`bash ${LANGGRAPH_INSTALL}`)).stdout.trim().split('\n').at(-1);
      const listeners = await runInUserShell(`${exported?.[1]}; ${cliBin}/langgraph deploy listeners list`);
      expect(listeners.code, listeners.stderr).toBe(0);
      expect(listeners.stdout).toMatch(new RegExp(`${exported?.[2]}\\s+\\S+\\s+.*${exported?.[3]}`));

      // status: the table, with the invalid deployment failed and its reason; exit 1 (one failed).
      const status = await runInUserShell(commands.status ?? '');
      expect(status.stdout).toMatch(/^NAME +NAMESPACE +REVISION +REPLICAS +STATE +AGE +MESSAGE$/m);
      for (const name of VALID) expect(status.stdout).toMatch(new RegExp(`^${name} .* DEPLOYED `, 'm'));
      expect(status.stdout).toMatch(
        new RegExp(`^broken-limits .* DEPLOY_FAILED .*${literal(INVALID_REASON)}`, 'm'),
      );
      expect(status.code, status.stderr).toBe(1);

      // check: every line ✓ against the demo's emulator and cluster, exit 0.
      const check = await runInUserShell(commands.check ?? '');
      expect(check.stdout.split('\n').filter((line) => line.startsWith('✗'))).toEqual([]);
      expect(check.stdout).toMatch(/^all \d+ checks passed$/m);
      expect(check.code, check.stdout).toBe(0);

      // diff: nothing would change for the converged deployments; the invalid one is named as such.
      const diff = await runInUserShell(commands.diff ?? '');
      for (const name of VALID)
        expect(diff.stdout).toMatch(new RegExp(`^# deployment ${name} .*: no changes$`, 'm'));
      expect(`${diff.stdout}${diff.stderr}`).toContain(INVALID_REASON);

      // Teardown: SIGTERM → exit 0, the cluster's processes gone, the demo's files gone.
      const pids = [...output.matchAll(/\[demo\] started [\w-]+ \(pid (\d+)\)/g)].map((m) => Number(m[1]));
      expect(pids.length).toBeGreaterThanOrEqual(4);
      demo.child.kill('SIGTERM');
      expect(await demo.exited).toBe(0);
      expect(demo.output()).toContain('[demo] SIGTERM: stopping the agent, the emulator and the cluster');
      // Killed as the process exits; give the kernel a moment to reap them.
      await eventually(
        `the demo's processes (${pids.join(', ')}) gone`,
        async () => (pids.some(isRunning) ? undefined : true),
        5_000,
      );
      expect(existsSync(dirname(configPath))).toBe(false);
    } finally {
      await stopChild(demo.child);
    }
  }, 240_000);
});

describe('npm run demo on a terminal', () => {
  it('redraws the table in place, keeps the agent logs out of it, and stops on Ctrl-C', async () => {
    const command = `stty cols 400 rows 50; exec ${process.execPath} ${DEMO}`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ROOT,
      env: userEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    const exited = new Promise<number | string>((resolve) =>
      child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
    );
    // Cursor up to the table's first line, then clear to the end of the screen.
    const ESC = String.fromCharCode(27);
    const redraw = new RegExp(`${ESC}\\[\\d+F${ESC}\\[J`, 'g');
    const lastFrame = () => text.split(redraw).at(-1) ?? '';
    try {
      const settled = () =>
        VALID.every((name) =>
          new RegExp(`^${name} .* DEPLOYED `, 'm').test(lastFrame().replaceAll('\r', '')),
        ) &&
        /^broken-limits .* DEPLOY_FAILED .*cpu limit \(0\.25\) is below its request \(1\)/m.test(
          lastFrame().replaceAll('\r', ''),
        );
      await eventually(
        () => `the table to settle:\n${text}`,
        () => {
          if (settled()) return true;
          if (child.exitCode !== null) throw new GiveUp(`the table did not settle:\n${text}`);
          return undefined;
        },
        180_000,
      );
      // And it keeps redrawing in place (once a second), never scrolling a new table below.
      const redraws = () => text.match(redraw)?.length ?? 0;
      const before = redraws();
      expect(before).toBeGreaterThan(0);
      await eventually('a redraw', () => (redraws() > before ? true : undefined), 10_000);
      expect(text).toContain('\x1b[?25l');
      // The agent logs JSON lines to its file, never into the table.
      expect(text).not.toContain('{"level"');
      const logPath = text.match(/agent log: +(\S+)/)?.[1] ?? '';
      expect(existsSync(logPath)).toBe(true);

      child.stdin?.write('\x03');
      expect(await exited).toBe(0);
      expect(text).toContain('[demo] SIGINT: stopping the agent, the emulator and the cluster');
      expect(text).toContain('\x1b[?25h');
      expect(existsSync(dirname(logPath))).toBe(false);
    } finally {
      await stopChild(child);
    }
  }, 240_000);
});

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
