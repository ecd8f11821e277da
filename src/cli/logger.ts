// The process logger: JSON lines for machines, human-readable lines on a terminal, with every
// field that could carry a credential or a secret value redacted before it is written.
import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';

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
  return destination ? pino(options, destination) : pino(options);
}

export function resolveLogFormat(format: LogFormat, stream: { isTTY?: boolean }): 'json' | 'pretty' {
  if (format !== 'auto') return format;
  return stream.isTTY === true ? 'pretty' : 'json';
}

function isLoggerOptions(value: pino.DestinationStream | LoggerOptions | undefined): value is LoggerOptions {
  return value !== undefined && !('write' in value);
}
