// A benchmark run's record in bench/results/: the machine it ran on and when, beside its figures.
// bench/README.md's tables are generated from these files (npm run docs).
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';

export const RESULTS_DIR = new URL('./results/', import.meta.url).pathname;
/** Summaries of CPU profiles of runs (bench/cpuProfile.ts), named as the run's record. */
export const PROFILES_DIR = new URL('./profiles/', import.meta.url).pathname;

export const loadAverage = () => loadavg().map((l) => Number(l.toFixed(2)));

export function machine(loadAverageAtStart: readonly number[]) {
  return {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
    loadAverageAtStart,
    loadAverageAtEnd: loadAverage(),
  };
}

const stamp = (startedAt: Date) => startedAt.toISOString().replace(/[:.]/g, '-');

/** Writes `<startedAt>-<suffix>.json`; returns its path. */
export async function writeRecord(startedAt: Date, suffix: string, record: object): Promise<string> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${stamp(startedAt)}-${suffix}.json`);
  await writeFile(path, `${JSON.stringify(record, null, 2)}\n`);
  return path;
}

/** Writes `bench/profiles/<startedAt>-<suffix>.md`; returns its path relative to bench/. */
export async function writeProfileSummary(startedAt: Date, suffix: string, text: string): Promise<string> {
  await mkdir(PROFILES_DIR, { recursive: true });
  const name = `${stamp(startedAt)}-${suffix}.md`;
  await writeFile(join(PROFILES_DIR, name), text);
  return `profiles/${name}`;
}
