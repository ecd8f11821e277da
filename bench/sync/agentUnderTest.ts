// The agent under test, as operators run it: a `run` process with a configuration file, the
// image's environment and, where one can be made, the chart's memory limit; read through its
// metrics and /proc, stopped as Kubernetes stops a pod.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../src/sleep.ts';
import { type AgentProcess, startAgentProcess } from '../../test/support/agentProcess.ts';
import { IMAGE_ENV } from '../../test/support/imageRuntime.ts';
import { readSamples, type Sample } from '../../test/support/metricSamples.ts';
import { CLOCK_TICKS, readProcStat, readProcStatus } from '../procfs.ts';
import { log } from './log.ts';
import { until } from './until.ts';

/** How every agent of a run is started. */
export interface AgentLaunch {
  /** The entry point: the bundle, or the sources. */
  readonly main: string;
  /** Node flags for the agent only, space-separated. */
  readonly nodeOptions: string;
  /** NAME=value pairs over the image's environment, space-separated. */
  readonly env: string;
  readonly memoryCgroup: string | undefined;
}

export interface MemoryMiB {
  readonly rssMiB: number;
  readonly hwmMiB: number;
  /** The binary's and libraries' pages; a memory limit reached evicts these first. */
  readonly rssFileMiB: number;
}

export class AgentUnderTest {
  readonly #running: AgentProcess;
  /** Everything the agent logged (a long run that fails is explained here). */
  readonly logPath: string;
  readonly metricsUrl: string;

  private constructor(running: AgentProcess, logPath: string, metricsUrl: string) {
    this.#running = running;
    this.logPath = logPath;
    this.metricsUrl = metricsUrl;
  }

  /**
   * Starts the agent; resolves once its probe server (and so its metrics) is up. `profileDir`
   * takes a CPU profile written at exit; `snapshotDir` a heap snapshot on SIGUSR2.
   */
  static async start(
    configPath: string,
    launch: AgentLaunch,
    output: { readonly logPath: string; readonly profileDir?: string; readonly snapshotDir?: string },
  ): Promise<AgentUnderTest> {
    const { profileDir, snapshotDir } = output;
    const running = startAgentProcess(configPath, 'bench-agent', {
      // The image's environment (Dockerfile ENV; a unit test keeps the two the same) and the pod's.
      image: { main: launch.main, env: IMAGE_ENV },
      env: Object.fromEntries(
        launch.env
          .split(' ')
          .filter(Boolean)
          .map((pair) => {
            const equals = pair.indexOf('=');
            return [pair.slice(0, equals), pair.slice(equals + 1)];
          }),
      ),
      nodeFlags: [
        ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
        ...(snapshotDir ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`] : []),
        ...launch.nodeOptions.split(' ').filter(Boolean),
      ],
      ...(launch.memoryCgroup ? { cgroup: launch.memoryCgroup } : {}),
      logPath: output.logPath,
    });
    return new AgentUnderTest(running, output.logPath, `${await running.started}/metrics`);
  }

  get pid(): number {
    return this.#running.child.pid ?? 0;
  }

  /**
   * The agent's metrics. A failed read is tried again once a second later (an N = 10,000 run
   * ended on one ECONNRESET after 111 minutes); an agent that is gone fails the run with its exit
   * and where its log is.
   */
  async readMetrics(): Promise<Sample[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return readSamples(await (await fetch(this.metricsUrl)).text());
      } catch (error) {
        const { child } = this.#running;
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(
            `the agent exited (code ${child.exitCode}, signal ${child.signalCode}); its log: ${this.logPath}`,
          );
        if (attempt >= 3)
          throw new Error(
            `reading ${this.metricsUrl} failed ${attempt} times; the agent's log: ${this.logPath}`,
            {
              cause: error,
            },
          );
        log(`reading the agent's metrics failed (${String(error)}); trying again`);
        await sleep(1_000);
      }
    }
  }

  async memory(): Promise<MemoryMiB | undefined> {
    const status = await readProcStatus(this.pid);
    return (
      status && {
        rssMiB: status.rssKiB / 1024,
        hwmMiB: status.hwmKiB / 1024,
        rssFileMiB: status.rssFileKiB / 1024,
      }
    );
  }

  /** User + system CPU seconds, and page faults that read from disk. */
  async counters(): Promise<{ cpuS: number; majorFaults: number } | undefined> {
    const stat = await readProcStat(this.pid);
    return stat && { cpuS: stat.cpuTicks / CLOCK_TICKS, majorFaults: stat.majorFaults };
  }

  async cpuSeconds(): Promise<number | undefined> {
    return (await this.counters())?.cpuS;
  }

  /** Signals the agent to write a heap snapshot and waits until the file is complete (its size settles). */
  async takeHeapSnapshot(dir: string): Promise<void> {
    this.#running.child.kill('SIGUSR2');
    let lastSize = -1;
    await until(
      'the heap snapshot',
      async () => {
        const file = (await readdir(dir)).find((name) => name.endsWith('.heapsnapshot'));
        if (file === undefined) return undefined;
        const { size } = await stat(join(dir, file));
        const settled = size > 0 && size === lastSize;
        lastSize = size;
        return settled ? true : undefined;
      },
      120_000,
      1_000,
    );
    log(`heap snapshot written to ${dir}`);
  }

  /** SIGTERM, and SIGKILL after 30 s, as Kubernetes stops a pod; nothing to do once it has exited. */
  async stop(): Promise<void> {
    const { child, exited } = this.#running;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const stopped = await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)]);
    if (!stopped) {
      child.kill('SIGKILL');
      await exited;
    }
  }
}
