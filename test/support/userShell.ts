// Commands as a user types them: through bash, from the repository root, in a user's environment
// (none of a suite's K8S_LISTENER_* variables: they point at the suite's cluster, and the
// environment wins over a --config file).
import { execFile } from 'node:child_process';

const ROOT = new URL('../..', import.meta.url).pathname;

export function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('K8S_LISTENER_')),
  );
}

/** Runs a command line exactly as printed: its exit code and output. */
export function runInUserShell(command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['-c', command],
      { cwd: ROOT, env: userEnv(), timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
