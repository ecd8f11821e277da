// The official LangGraph CLI as a test's peer: installed by test/langgraph/install.sh into a
// cached venv, and run as a user's shell runs it, with the environment the CLI reads.
import { spawn } from 'node:child_process';

const INSTALL = new URL('../langgraph/install.sh', import.meta.url).pathname;

export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end (or SIGTERM after `timeoutMs`): its exit code and output. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // The CLI's own wait is 300 s; ours ends well before a test's.
    const timer = setTimeout(() => child.kill('SIGTERM'), options.timeoutMs ?? 170_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Installs the CLI (a no-op once cached) and returns the venv's bin directory. */
export async function installLanggraphCli(): Promise<string> {
  const installed = await runCommand('bash', [INSTALL], { env: process.env, timeoutMs: 600_000 });
  if (installed.code !== 0) throw new Error(`test/langgraph/install.sh failed: ${installed.stderr}`);
  return installed.stdout.trim().split('\n').at(-1) ?? '';
}

/** The environment of one CLI command against the emulator at `url` (no analytics: no internet). */
export function cliEnv(
  bin: string,
  home: string,
  url: string,
  apiKey: string,
  extra: NodeJS.ProcessEnv = {},
) {
  return {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: home,
    LANGGRAPH_HOST_URL: url,
    LANGGRAPH_HOST_API_KEY: apiKey,
    // Otherwise each command starts a thread posting to the CLI's analytics host, without a timeout.
    LANGGRAPH_CLI_NO_ANALYTICS: '1',
    ...extra,
  };
}

/**
 * One CLI command as a user's shell runs it, in `dir` against the emulator at `url`; `vars` gives
 * the shell's variables at the time of the call (ids the test learns as it goes).
 */
export function langgraphShell(options: {
  readonly bin: () => string;
  readonly dir: () => string;
  readonly url: () => string;
  readonly apiKey: string;
  readonly vars: () => NodeJS.ProcessEnv;
  readonly timeoutMs?: number;
}): (command: string) => Promise<Ran> {
  return (command) =>
    runCommand('bash', ['-c', command], {
      cwd: options.dir(),
      env: cliEnv(options.bin(), options.dir(), options.url(), options.apiKey, options.vars()),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
}
