// Prometheus and promtool, built from the Go module by test/monitoring/build.sh (cached outside
// the repository), for the monitoring tests: the rule file checked and unit-tested by promtool,
// the agent's /metrics linted by it, and a real Prometheus scraping a running agent.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { eventually, GiveUp } from './eventually.ts';
import { readRules } from './monitoringQueries.ts';

const run = promisify(execFile);
const BUILD = new URL('../monitoring/build.sh', import.meta.url).pathname;

let binDir: Promise<string> | undefined;

/** The directory of prometheus and promtool (built on first use; npm test's pretest builds it). */
export function prometheusBinDir(): Promise<string> {
  binDir ??= run('bash', [BUILD], { maxBuffer: 64 * 1024 * 1024 }).then(
    ({ stdout }) => stdout.trim().split('\n').at(-1) ?? '',
  );
  return binDir;
}

export interface ToolResult {
  readonly code: number;
  readonly output: string;
}

/** `promtool <args>`, with `input` on stdin; never throws for a non-zero exit (its output says why). */
export async function promtool(args: readonly string[], input?: string): Promise<ToolResult> {
  const bin = join(await prometheusBinDir(), 'promtool');
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, output }));
    child.stdin.end(input ?? '');
  });
}

/** The PrometheusRule's groups as a plain Prometheus rule file (what the Operator loads). */
export async function writeRuleFile(path: string, rules = readRules()): Promise<void> {
  await writeFile(path, stringify({ groups: rules.spec.groups }));
}

export interface RunningPrometheus {
  readonly url: string;
  /** An instant query's result vector. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** The active alerts (pending and firing). */
  alerts(): Promise<{ labels: Record<string, string>; state: string }[]>;
  stop(): Promise<void>;
}

interface ApiAnswer<T> {
  status: string;
  data: T;
  error?: string;
}

async function api<T>(url: string): Promise<T> {
  const response = await fetch(url);
  const body = (await response.json()) as ApiAnswer<T>;
  if (body.status !== 'success') throw new Error(`${url}: ${body.error ?? response.status}`);
  return body.data;
}

/** A Prometheus on 127.0.0.1:`port` with `config` (YAML text), its data in `dir`. */
export async function startPrometheus(options: {
  dir: string;
  port: number;
  config: string;
}): Promise<RunningPrometheus> {
  const configPath = join(options.dir, 'prometheus.yml');
  await writeFile(configPath, options.config);
  const url = `http://127.0.0.1:${options.port}`;
  const child: ChildProcess = spawn(
    join(await prometheusBinDir(), 'prometheus'),
    [
      `--config.file=${configPath}`,
      `--storage.tsdb.path=${join(options.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${options.port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  try {
    await eventually('Prometheus ready', async () => {
      if (child.exitCode !== null) throw new GiveUp('Prometheus exited');
      return (await fetch(`${url}/-/ready`)).ok || undefined;
    });
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`Prometheus did not become ready:\n${log}`, { cause: error });
  }
  return {
    url,
    query: async (expr) =>
      (
        await api<{
          resultType: string;
          result: { metric: Record<string, string>; value: [number, string] }[];
        }>(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`)
      ).result,
    alerts: async () =>
      (await api<{ alerts: { labels: Record<string, string>; state: string }[] }>(`${url}/api/v1/alerts`))
        .alerts,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
