// The process logger: JSON lines for machines, human-readable lines on a terminal, with every
// field that could carry a credential or a secret value redacted before it is written. Log lines
// carry tenants' strings (names, messages, errors): neither form lets one act on a terminal.
import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import { terminalJsonText, terminalText } from '../report/terminalText.ts';

// pino-pretty and its dependencies load only when a terminal asks for them: a running agent logs
// JSON and need not hold their code.
const loadModule = createRequire(import.meta.url);

export const REDACTED_PATHS = [
  'apiKey',
  '*.apiKey',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  'secrets[*].value',
  '*.secrets[*].value',
  'deployment.secrets[*].value',
  'stringData',
  '*.stringData',
  'data',
  '*.data',
];

export type LogFormat = 'json' | 'pretty' | 'auto';

export interface LoggerOptions {
  /** json: one JSON object a line; pretty: human-readable lines; auto: pretty on a terminal. */
  readonly format?: LogFormat;
  /** Where lines go (default stdout); with auto, pretty only when this is a terminal. */
  readonly destination?: (pino.DestinationStream & { isTTY?: boolean }) | undefined;
}

export function createLogger(
  level: string,
  destinationOrOptions?: pino.DestinationStream | LoggerOptions,
): Logger {
  const { format = 'json', destination }: LoggerOptions = isLoggerOptions(destinationOrOptions)
    ? destinationOrOptions
    : { destination: destinationOrOptions };
  const options: pino.LoggerOptions = {
    level,
    base: { app: 'k8s-listener' },
    // Redaction happens before a line is serialised, so it holds for the pretty form too.
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  if (resolveLogFormat(format, destination ?? process.stdout) === 'pretty') {
    const target = destination ?? process.stdout;
    options.hooks = { streamWrite: prettyInput };
    // A synchronous stream in this thread, not a worker transport: lines are never lost on exit.
    const pretty = loadModule('pino-pretty') as typeof import('pino-pretty');
    const stream = pretty({
      destination: target,
      sync: true,
      colorize: target.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,app',
    });
    return pino(options, stream);
  }
  // JSON escapes C0 controls; DEL, C1, bidi marks and invisible characters are escaped too, for
  // `kubectl logs` on a terminal.
  options.hooks = { streamWrite: terminalJsonText };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * The JSON line pino-pretty reads, its strings escaped as terminalText: pretty prints the message
 * and an error's stack as they are, so JSON escapes alone would reach the terminal as raw controls.
 * A stack keeps its own line breaks.
 */
export function prettyInput(line: string): string {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return `${terminalText(line)}\n`;
  }
  return `${JSON.stringify(printable(record, undefined))}\n`;
}

function printable(value: unknown, key: string | undefined): unknown {
  if (typeof value === 'string')
    return key === 'stack' ? value.split('\n').map(terminalText).join('\n') : terminalText(value);
  if (Array.isArray(value)) return value.map((item) => printable(item, undefined));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [terminalText(k), printable(v, k)]));
  return value;
}

export function resolveLogFormat(format: LogFormat, stream: { isTTY?: boolean }): 'json' | 'pretty' {
  if (format !== 'auto') return format;
  return stream.isTTY === true ? 'pretty' : 'json';
}

function isLoggerOptions(value: pino.DestinationStream | LoggerOptions | undefined): value is LoggerOptions {
  return value !== undefined && !('write' in value);
}
