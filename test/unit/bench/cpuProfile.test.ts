// The CPU profile summary: self time charged to the right frame, each bundled frame traced to its
// source through the bundle's map, and grouped by package or src folder.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { areaOf, type CpuProfile, summarize, summaryMarkdown } from '../../../bench/cpuProfile.ts';

describe('areaOf', () => {
  it.each([
    ['../../node_modules/undici/lib/dispatcher/client-h1.js', 'undici'],
    ['../../node_modules/@jridgewell/trace-mapping/dist/x.mjs', '@jridgewell/trace-mapping'],
    ['../../node_modules/a/node_modules/zod/v4/core/parse.js', 'zod'],
    ['../../src/kube/watchStream.ts', 'src/kube'],
    ['../../src/sleep.ts', 'src/sleep.ts'],
    ['node:internal/streams/readable', 'node (its own JavaScript)'],
  ])('%s is %s', (source, area) => {
    expect(areaOf(source)).toBe(area);
  });
});

/** A bundle of a package function and a src function, with its source map, and where each landed. */
function bundle() {
  const dir = mkdtempSync(join(tmpdir(), 'cpu-profile-'));
  mkdirSync(join(dir, 'node_modules', 'pkg'), { recursive: true });
  mkdirSync(join(dir, 'src', 'kube'), { recursive: true });
  writeFileSync(
    join(dir, 'node_modules', 'pkg', 'index.js'),
    'export function decode(x) {\n  return x * 2;\n}\n',
  );
  writeFileSync(
    join(dir, 'src', 'kube', 'client.ts'),
    "import { decode } from 'pkg';\nexport function request(x: number) {\n  return decode(x) + 1;\n}\n",
  );
  const out = join(dir, 'dist', 'main.js');
  buildSync({
    entryPoints: [join(dir, 'src', 'kube', 'client.ts')],
    bundle: true,
    format: 'esm',
    sourcemap: true,
    outfile: out,
    nodePaths: [join(dir, 'node_modules')],
    logLevel: 'silent',
  });
  const lines = readFileSync(out, 'utf8').split('\n');
  const at = (text: string) => {
    const line = lines.findIndex((l) => l.includes(text));
    return { lineNumber: line, columnNumber: lines[line]?.indexOf(text) ?? 0 };
  };
  return { url: pathToFileURL(out).href, decode: at('return x * 2'), request: at('return decode(x) + 1') };
}

describe('summarize', () => {
  const { url, decode, request } = bundle();
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1, columnNumber: -1 } },
      { id: 2, callFrame: { functionName: 'decode', url, ...decode } },
      { id: 3, callFrame: { functionName: 'request', url, ...request } },
      {
        id: 4,
        callFrame: { functionName: '(garbage collector)', url: '', lineNumber: -1, columnNumber: -1 },
      },
      { id: 5, callFrame: { functionName: '(idle)', url: '', lineNumber: -1, columnNumber: -1 } },
    ],
    // Each delta (µs) is charged to the sample it precedes.
    samples: [2, 2, 3, 4, 5],
    timeDeltas: [1000, 2000, 4000, 1000, 50_000],
  };

  it('charges self time by area and function, traced through the source map, idle aside', () => {
    const summary = summarize([profile]);
    expect(summary.busyMs).toBe(8);
    expect(summary.byArea).toEqual([
      { area: 'src/kube', ms: 4 },
      { area: 'pkg', ms: 3 },
      { area: '(garbage collector)', ms: 1 },
    ]);
    expect(summary.byFunction[0]).toEqual({ name: 'request', where: 'src/kube/client.ts:3', ms: 4 });
    expect(summary.byFunction[1]).toEqual({ name: 'decode', where: 'node_modules/pkg/index.js:2', ms: 3 });
  });

  it('charges only the window asked for: the samples of the first `untilMs`', () => {
    // 1 + 2 + 4 ms: the garbage collector's sample, at 8 ms, is past the window.
    const summary = summarize([profile], undefined, 7);
    expect(summary.busyMs).toBe(7);
    expect(summary.byArea.map((row) => row.area)).toEqual(['src/kube', 'pkg']);
  });

  it('tells it as tables of areas and functions with their shares', () => {
    const text = summaryMarkdown(summarize([profile]), 2);
    expect(text).toContain('| src/kube | 0.00 s | 50.0 % |');
    expect(text).toContain('| request | src/kube/client.ts:3 | 0.00 s | 50.0 % |');
    expect(text).not.toContain('(garbage collector) |  |');
  });
});
