// Flux's two controllers under test: source-controller and kustomize-controller, built by
// bench/flux/build.sh, run as processes against the bench's cluster (as the agent is); read through
// their metrics (API requests by method), /proc (CPU, RSS) and kustomize-controller's log (which
// Kustomization applied which revision, and when).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sleep } from '../../src/sleep.ts';
import { readSamples } from '../../test/support/metricSamples.ts';
import { cpuSeconds, readProcStatus } from '../procfs.ts';
import { until } from '../sync/until.ts';

const BUILD_SCRIPT = new URL('./build.sh', import.meta.url).pathname;

/** The namespace Flux's own objects (the OCIRepository, the Kustomizations) live in. */
export const FLUX_NAMESPACE = 'flux-system';

/**
 * Builds the controllers the first time (minutes), else finds them: the directory (bin/, crds/)
 * and the version, which names it (flux-VERSION).
 */
export async function ensureFluxBuild(): Promise<{ readonly dir: string; readonly version: string }> {
  const { stdout } = await promisify(execFile)('bash', [BUILD_SCRIPT], { maxBuffer: 2 ** 20 });
  const dir = stdout.trim().split('\n').at(-1);
  const version = dir?.match(/flux-(v[^/]+)$/)?.[1];
  if (!dir || !version) throw new Error(`${BUILD_SCRIPT} printed no flux-VERSION directory`);
  return { dir, version };
}

/** The client settings of both controllers: the agent's, or Flux's own defaults. */
export interface FluxSettings {
  readonly concurrent: number;
  readonly kubeApiQps: number;
  readonly kubeApiBurst: number;
}

/** kustomize-controller's defaults (v1.9: --concurrent 4, --kube-api-qps 50, --kube-api-burst 300); source-controller's --concurrent is 2. */
export const FLUX_DEFAULTS = { concurrent: 4, kubeApiQps: 50, kubeApiBurst: 300 } as const;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** Kubernetes API requests by HTTP method (client-go's rest_client_requests_total). */
export type RequestsByMethod = Record<string, number>;

class Controller {
  readonly name: string;
  readonly metricsUrl: string;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  readonly #log: WriteStream;

  constructor(
    name: string,
    binary: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv,
    logPath: string,
    metricsUrl: string,
    onLine: (line: string) => void,
  ) {
    this.name = name;
    this.metricsUrl = metricsUrl;
    this.child = spawn(binary, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.#log = createWriteStream(logPath);
    let partial = '';
    const keep = (chunk: Buffer) => {
      this.#log.write(chunk);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => this.child.once('close', () => resolve()));
    void this.exited.then(() => this.#log.end());
  }

  get gone(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  async requests(): Promise<RequestsByMethod> {
    const text = await (await fetch(this.metricsUrl)).text();
    const methods: RequestsByMethod = {};
    for (const s of readSamples(text))
      if (s.name === 'rest_client_requests_total') {
        const method = s.labels.method ?? '?';
        methods[method] = (methods[method] ?? 0) + s.value;
      }
    return methods;
  }

  cpuS(): Promise<number> {
    return cpuSeconds(this.child.pid ?? 0);
  }

  /** Peak resident memory (VmHWM), MiB. */
  async peakRssMiB(): Promise<number> {
    const status = await readProcStatus(this.child.pid ?? 0);
    return status ? status.hwmKiB / 1024 : Number.NaN;
  }

  async stop(): Promise<void> {
    if (this.gone) return;
    this.child.kill('SIGTERM');
    const stopped = await Promise.race([this.exited.then(() => true), sleep(30_000).then(() => false)]);
    if (!stopped) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }
}

/** `server-side apply completed` of kustomize-controller's JSON log: a Kustomization's objects applied at a revision. */
interface ApplyLine {
  readonly msg?: string;
  readonly name?: string;
  readonly revision?: string;
  readonly Kustomization?: { readonly name?: string };
}

/** Which Kustomization applied which revision, from kustomize-controller's log lines. */
export class AppliedRevisions {
  /** Kustomization name → the revisions it has applied. */
  readonly #applied = new Map<string, Set<string>>();

  note(line: string): void {
    if (!line.includes('server-side apply completed')) return;
    const entry = JSON.parse(line) as ApplyLine;
    const name = entry.Kustomization?.name ?? entry.name;
    if (entry.msg !== 'server-side apply completed' || !name || !entry.revision) return;
    const revisions = this.#applied.get(name) ?? new Set<string>();
    revisions.add(entry.revision);
    this.#applied.set(name, revisions);
  }

  /** How many Kustomizations have applied `revision`. */
  count(revision: string): number {
    let count = 0;
    for (const revisions of this.#applied.values()) if (revisions.has(revision)) count++;
    return count;
  }
}

export class FluxControllers {
  readonly source: Controller;
  readonly kustomize: Controller;
  readonly #applied: AppliedRevisions;

  private constructor(source: Controller, kustomize: Controller, applied: AppliedRevisions) {
    this.source = source;
    this.kustomize = kustomize;
    this.#applied = applied;
  }

  static async start(
    buildDir: string,
    kubeconfigPath: string,
    workDir: string,
    settings: FluxSettings,
  ): Promise<FluxControllers> {
    const env = { ...process.env, KUBECONFIG: kubeconfigPath, RUNTIME_NAMESPACE: FLUX_NAMESPACE };
    const client = [
      `--kube-api-qps=${settings.kubeApiQps}`,
      `--kube-api-burst=${settings.kubeApiBurst}`,
      `--concurrent=${settings.concurrent}`,
    ];
    const [sourceMetrics, sourceHealth, storage, kustomizeMetrics, kustomizeHealth] = await Promise.all(
      Array.from({ length: 5 }, freePort),
    );
    const storagePath = join(workDir, 'flux-storage');
    await mkdir(storagePath, { recursive: true });
    const source = new Controller(
      'source-controller',
      join(buildDir, 'bin', 'source-controller'),
      [
        ...client,
        `--metrics-addr=127.0.0.1:${sourceMetrics}`,
        `--health-addr=127.0.0.1:${sourceHealth}`,
        `--storage-path=${storagePath}`,
        `--storage-addr=127.0.0.1:${storage}`,
        `--storage-adv-addr=127.0.0.1:${storage}`,
      ],
      env,
      join(workDir, 'source-controller.log'),
      `http://127.0.0.1:${sourceMetrics}/metrics`,
      () => {},
    );
    const applied = new AppliedRevisions();
    const kustomize = new Controller(
      'kustomize-controller',
      join(buildDir, 'bin', 'kustomize-controller'),
      [
        ...client,
        `--metrics-addr=127.0.0.1:${kustomizeMetrics}`,
        `--health-addr=127.0.0.1:${kustomizeHealth}`,
      ],
      env,
      join(workDir, 'kustomize-controller.log'),
      `http://127.0.0.1:${kustomizeMetrics}/metrics`,
      (line) => applied.note(line),
    );
    const flux = new FluxControllers(source, kustomize, applied);
    // Up once both serve their metrics.
    await until(
      'Flux controllers serving metrics',
      async () => {
        for (const c of [source, kustomize])
          if (c.gone)
            throw new Error(`${c.name} exited (code ${c.child.exitCode}); its log is in ${workDir}`);
        const up = await Promise.all(
          [source, kustomize].map((c) =>
            c.requests().then(
              () => true,
              () => false,
            ),
          ),
        );
        return up.every(Boolean) ? true : undefined;
      },
      60_000,
      250,
    );
    return flux;
  }

  /** How many Kustomizations have applied `revision`. */
  appliedAt(revision: string): number {
    return this.#applied.count(revision);
  }

  /** Both controllers' CPU seconds together. */
  async cpuS(): Promise<number> {
    return (await this.source.cpuS()) + (await this.kustomize.cpuS());
  }

  /** Both controllers' API requests by method, added up. */
  async requests(): Promise<RequestsByMethod> {
    const sum: RequestsByMethod = {};
    for (const c of [this.source, this.kustomize])
      for (const [method, count] of Object.entries(await c.requests()))
        sum[method] = (sum[method] ?? 0) + count;
    return sum;
  }

  async peakRssMiB(): Promise<{ source: number; kustomize: number }> {
    return { source: await this.source.peakRssMiB(), kustomize: await this.kustomize.peakRssMiB() };
  }

  async stop(): Promise<void> {
    await Promise.all([this.source.stop(), this.kustomize.stop()]);
  }
}
