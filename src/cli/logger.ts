// The process logger: JSON lines for machines, with every field that could carry a credential
// or a secret value redacted before it is written.
import pino, { type Logger } from 'pino';

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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { app: 'k8s-listener' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return destination ? pino(options, destination) : pino(options);
}
