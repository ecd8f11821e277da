// A benchmark run's record in bench/results/: the machine it ran on and when, beside its figures.
// bench/README.md's tables are generated from these files (npm run docs).
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';

export const RESULTS_DIR = new URL('./results/', import.meta.url).pathname;

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

/** Writes `<startedAt>-<suffix>.json`; returns its path. */
export async function writeRecord(startedAt: Date, suffix: string, record: object): Promise<string> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${startedAt.toISOString().replace(/[:.]/g, '-')}-${suffix}.json`);
  await writeFile(path, `${JSON.stringify(record, null, 2)}\n`);
  return path;
}
