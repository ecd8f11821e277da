// A V8 CPU profile (`node --cpu-prof`) told as a table a reader can commit and compare: the time
// the process spent on the CPU by area (a package of node_modules, a folder of src, Node's own
// code, the garbage collector) and the functions that took most of it. The agent runs as a bundle
// (dist/): each frame is traced back to its source through the bundle's source map.
//
// Run: node bench/cpuProfile.ts <file.cpuprofile | directory of them> [--top 20] [--until-ms MS]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';

const CallFrame = z.object({
  functionName: z.string(),
  url: z.string(),
  lineNumber: z.number(),
  columnNumber: z.number(),
});
const CpuProfile = z.object({
  nodes: z.array(z.object({ id: z.number(), callFrame: CallFrame })),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});
export type CpuProfile = z.infer<typeof CpuProfile>;

/** Where a frame's code came from, after its source map. */
interface Origin {
  readonly area: string;
  readonly where: string;
}

/** V8's pseudo-frames: `(garbage collector)`, `(program)` (native code), `(idle)`, `(root)`. */
const PSEUDO = /^\(.*\)$/;

/** The area of a source path: a package of node_modules, a folder of src, or the file. */
export function areaOf(source: string): string {
  const modules = source.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const [scope = '', name = ''] = source.slice(modules + 'node_modules/'.length).split('/');
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  const src = source.lastIndexOf('src/');
  if (src >= 0) {
    const parts = source.slice(src).split('/');
    return parts.length > 2 ? parts.slice(0, 2).join('/') : parts.join('/');
  }
  if (source.startsWith('node:') || !source.includes('/')) return 'node (its own JavaScript)';
  return basename(source);
}

/** Traces frames to their sources, reading each bundle's `.map` once. */
class Origins {
  readonly #maps = new Map<string, SourceMap | undefined>();

  of(frame: z.infer<typeof CallFrame>): Origin {
    if (PSEUDO.test(frame.functionName)) return { area: frame.functionName, where: '' };
    if (frame.url === '' || frame.url.startsWith('node:'))
      return { area: 'node (its own JavaScript)', where: frame.url };
    const map = this.#map(frame.url);
    const entry = map?.findEntry(frame.lineNumber, frame.columnNumber);
    const source =
      entry && 'originalSource' in entry ? entry.originalSource : frame.url.replace(/^file:\/\//, '');
    const line = entry && 'originalLine' in entry ? entry.originalLine + 1 : frame.lineNumber + 1;
    const short = source.replace(/^.*?(node_modules\/|src\/)/, '$1');
    return { area: areaOf(source), where: `${short}:${line}` };
  }

  #map(url: string): SourceMap | undefined {
    if (this.#maps.has(url)) return this.#maps.get(url);
    let map: SourceMap | undefined;
    try {
      const path = url.startsWith('file:') ? fileURLToPath(url) : url;
      map = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')));
    } catch {
      map = undefined;
    }
    this.#maps.set(url, map);
    return map;
  }
}

export interface ProfileSummary {
  /** Time on the CPU, `(idle)` aside, in ms. */
  readonly busyMs: number;
  readonly byArea: readonly { readonly area: string; readonly ms: number }[];
  readonly byFunction: readonly { readonly name: string; readonly where: string; readonly ms: number }[];
}

/**
 * Self time by area and by function over one or more profiles of a run; with `untilMs`, only the
 * samples of a profile's first `untilMs` (e.g. a cold sync: the profile starts with the process).
 */
export function summarize(
  profiles: readonly CpuProfile[],
  origins = new Origins(),
  untilMs = Number.POSITIVE_INFINITY,
): ProfileSummary {
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, { name: string; where: string; ms: number }>();
  let busyMs = 0;
  for (const profile of profiles) {
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    let elapsedMs = 0;
    for (const [i, id] of profile.samples.entries()) {
      // timeDeltas[i] is the time before sample i: it is charged to that sample's frame.
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      elapsedMs += ms;
      if (elapsedMs > untilMs) break;
      const frame = frames.get(id);
      if (!frame || frame.functionName === '(idle)') continue;
      const origin = origins.of(frame);
      busyMs += ms;
      byArea.set(origin.area, (byArea.get(origin.area) ?? 0) + ms);
      const name = frame.functionName || '(anonymous)';
      const key = `${name} ${origin.where}`;
      const seen = byFunction.get(key) ?? { name, where: origin.where, ms: 0 };
      seen.ms += ms;
      byFunction.set(key, seen);
    }
  }
  const descending = <T extends { ms: number }>(rows: Iterable<T>) => [...rows].sort((a, b) => b.ms - a.ms);
  return {
    busyMs,
    byArea: descending([...byArea].map(([area, ms]) => ({ area, ms }))),
    byFunction: descending(byFunction.values()),
  };
}

const percent = (ms: number, of: number) => `${((100 * ms) / of).toFixed(1)} %`;
const cell = (text: string) => text.replaceAll('|', '\\|');

/** The summary as Markdown: areas at 0.5 % or more, then the `top` functions by self time. */
export function summaryMarkdown(summary: ProfileSummary, top = 20): string {
  const { busyMs } = summary;
  const areas = summary.byArea.filter((row) => row.ms / busyMs >= 0.005);
  const rest = busyMs - areas.reduce((sum, row) => sum + row.ms, 0);
  const lines = [
    `On the CPU: ${(busyMs / 1000).toFixed(1)} s (idle aside).`,
    '',
    '| area | self time | share |',
    '|---|---|---|',
    ...areas.map(
      (row) => `| ${cell(row.area)} | ${(row.ms / 1000).toFixed(2)} s | ${percent(row.ms, busyMs)} |`,
    ),
    ...(rest > 0 ? [`| the others | ${(rest / 1000).toFixed(2)} s | ${percent(rest, busyMs)} |`] : []),
    '',
    '| function | source | self time | share |',
    '|---|---|---|---|',
    ...summary.byFunction
      .slice(0, top)
      .map(
        (row) =>
          `| ${cell(row.name)} | ${cell(row.where)} | ${(row.ms / 1000).toFixed(2)} s | ${percent(row.ms, busyMs)} |`,
      ),
  ];
  return `${lines.join('\n')}\n`;
}

/** The profiles at a path: the file itself, or every `.cpuprofile` of a directory. */
export function readProfiles(path: string): CpuProfile[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((name) => name.endsWith('.cpuprofile'))
        .map((name) => join(path, name))
    : [path];
  return files.map((file) => CpuProfile.parse(JSON.parse(readFileSync(file, 'utf8'))));
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '20' }, 'until-ms': { type: 'string' } },
  });
  const [path] = positionals;
  if (!path) {
    console.error('usage: node bench/cpuProfile.ts <file.cpuprofile | directory> [--top 20] [--until-ms MS]');
    process.exit(2);
  }
  const untilMs = values['until-ms'] === undefined ? undefined : Number(values['until-ms']);
  process.stdout.write(
    summaryMarkdown(summarize(readProfiles(path), new Origins(), untilMs), Number(values.top)),
  );
}
