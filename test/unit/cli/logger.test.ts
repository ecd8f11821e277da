import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfigFromFlags } from '../../../src/cli/configFlags.ts';
import { createLogger, type LogFormat, resolveLogFormat } from '../../../src/cli/logger.ts';
import { HOSTILE_STRINGS, rawControls } from '../../support/terminalControls.ts';

const LISTENER = '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11';
const SECRET = 'sk-must-never-show-9f8e7d';
const main = new URL('../../../src/cli/main.ts', import.meta.url).pathname;
const run = promisify(execFile);

/** A destination that records what is written; `isTTY` makes it look like a terminal. */
function capture(isTTY = false): Writable & { text(): string; isTTY: boolean } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return Object.assign(stream, { text: () => chunks.join(''), isTTY });
}

function logSecrets(format: LogFormat, out: ReturnType<typeof capture>): void {
  const logger = createLogger('info', { format, destination: out });
  logger.info(
    {
      apiKey: SECRET,
      request: { headers: { 'x-api-key': SECRET } },
      deployment: { secrets: [{ name: 'TOKEN', value: SECRET }] },
      object: { kind: 'Secret', stringData: { TOKEN: SECRET } },
    },
    'applied objects',
  );
}

describe('log format', () => {
  it('pretty: human-readable lines, redaction still applied', () => {
    const out = capture();
    logSecrets('pretty', out);
    const text = out.text();
    expect(text).toContain('INFO');
    expect(text).toContain('applied objects');
    expect(text).toContain('[redacted]');
    expect(text).not.toContain(SECRET);
    expect(() => JSON.parse(text.split('\n')[0] ?? '')).toThrow();
  });

  it('json: one JSON object a line, the same redaction', () => {
    const out = capture();
    logSecrets('json', out);
    const line = JSON.parse(out.text().trim()) as Record<string, unknown>;
    expect(line).toMatchObject({
      level: 'info',
      msg: 'applied objects',
      apiKey: '[redacted]',
      app: 'k8s-listener',
    });
    expect(out.text()).not.toContain(SECRET);
  });

  it.each([
    ['auto', true, 'pretty'],
    ['auto', false, 'json'],
    ['json', true, 'json'],
    ['pretty', false, 'pretty'],
  ] as const)('%s on a terminal=%s is %s', (format, isTTY, expected) => {
    expect(resolveLogFormat(format, { isTTY })).toBe(expected);
    const out = capture(isTTY);
    createLogger('info', { format, destination: out }).info('hello');
    const isJson = out.text().startsWith('{');
    expect(isJson ? 'json' : 'pretty').toBe(expected);
  });
});

// Log lines carry tenants' strings (deployment names, error messages) to whoever reads them on a
// terminal: `kubectl logs` of the JSON, or the pretty lines of `auto` on a terminal.
describe('log lines hold no raw control character', () => {
  const logHostile = (format: LogFormat, out: ReturnType<typeof capture>) => {
    const logger = createLogger('info', { format, destination: out });
    HOSTILE_STRINGS.forEach((hostile, i) => {
      logger.warn(
        { deployment: `web${hostile}`, [`key${hostile}`]: [hostile], err: new Error(`refused ${hostile}`) },
        `deployment web${hostile} failed`,
      );
      logger.info({ i }, 'next');
    });
  };

  it('json: every string escaped (C1, DEL and bidi marks too), and parsed back to the same values', () => {
    const out = capture();
    logHostile('json', out);
    expect(rawControls(out.text())).toEqual([]);
    const lines = out
      .text()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(2 * HOSTILE_STRINGS.length);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.deployment)).toEqual(
      HOSTILE_STRINGS.map((h) => `web${h}`),
    );
  });

  it('pretty: the message, fields and stack escaped; a record starts only where the logger starts one', () => {
    const out = capture();
    logHostile('pretty', out);
    const text = out.text();
    expect(rawControls(text)).toEqual([]);
    expect(text).toContain('deployment web\\x1b[1A\\x1b[2K failed');
    // Every record begins with its time; no hostile string started one of its own.
    expect(text.match(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] /gm)).toHaveLength(2 * HOSTILE_STRINGS.length);
    // An error's stack keeps its own line breaks.
    expect(text).toMatch(/Error: refused a\\x1bb\n\s+at /);
  });
});

describe('--log-level', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('wins over LOG_LEVEL, which wins over the file', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'config-')), 'config.yaml');
    await writeFile(
      file,
      `listenerId: ${LISTENER}\nnamespaces: [apps]\ncontrolPlane:\n  baseUrl: http://cp.example.test\nlog:\n  level: warn\n`,
    );
    expect((await loadConfigFromFlags({ config: file })).log.level).toBe('warn');
    vi.stubEnv('LOG_LEVEL', 'error');
    expect((await loadConfigFromFlags({ config: file })).log.level).toBe('error');
    expect((await loadConfigFromFlags({ config: file, 'log-level': 'debug' })).log.level).toBe('debug');
  });

  // The real process: `run` logs its start at info before it reaches the (missing) cluster.
  async function runAgent(args: string[], env: Record<string, string>, logConfig: string) {
    const dir = await mkdtemp(join(tmpdir(), 'run-'));
    const file = join(dir, 'config.yaml');
    await writeFile(
      file,
      `listenerId: ${LISTENER}\nnamespaces: [apps]\ncontrolPlane:\n  baseUrl: http://127.0.0.1:9\nprobes:\n  host: 127.0.0.1\n  port: 0\nlog:\n${logConfig}`,
    );
    const result = await run(
      process.execPath,
      [main, 'run', '--config', file, '--kubeconfig', join(dir, 'missing-kubeconfig'), ...args],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 },
    ).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    return result;
  }

  it('is honoured by run over LOG_LEVEL and the file', async () => {
    const quiet = await runAgent(['--log-level', 'error'], { LOG_LEVEL: 'debug' }, '  level: debug\n');
    expect(quiet.code).toBe(1);
    expect(quiet.stdout).not.toContain('k8s-listener starting');

    const loud = await runAgent(['--log-level', 'info'], { LOG_LEVEL: 'error' }, '  level: error\n');
    expect(loud.code).toBe(1);
    const starting = loud.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; level: string })
      .find((line) => line.msg === 'k8s-listener starting');
    expect(starting?.level).toBe('info');
  }, 60_000); // two real processes: seconds each on a loaded 2-core machine

  it('run writes human-readable lines with log.format: pretty', async () => {
    const pretty = await runAgent([], {}, '  level: info\n  format: pretty\n');
    expect(pretty.code).toBe(1);
    expect(pretty.stdout).toMatch(/INFO.*k8s-listener starting/);
    expect(pretty.stdout.startsWith('{')).toBe(false);
  }, 30_000);
});
