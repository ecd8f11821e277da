// `k8s-listener emulator`: runs the control-plane emulator until interrupted.
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startEmulator } from '../emulator/server.ts';
import { createLogger } from './logger.ts';

export const EMULATOR_USAGE = `Usage: k8s-listener emulator [--host 127.0.0.1] [--port 8080] [--seed FILE] [--state FILE] [--api-key KEY]

Runs the control-plane emulator: every endpoint of the interface, deployment create and delete,
listener writes and the status-report extension, in memory.
  --seed FILE     initial state (default: the bundled seed; "none" for an empty state)
  --state FILE    persist the state to FILE and load it from there at start
  --api-key KEY   require X-Api-Key (also read from K8S_LISTENER_EMULATOR_API_KEY)
`;

export async function runEmulatorCommand(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '8080' },
      seed: { type: 'string' },
      state: { type: 'string' },
      'api-key': { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(EMULATOR_USAGE);
    return 0;
  }
  const logger = createLogger(values['log-level']);
  const seedPath =
    values.seed === 'none'
      ? undefined
      : (values.seed ?? fileURLToPath(new URL('../emulator/fixtures/seed.json', import.meta.url)));
  const emulator = await startEmulator({
    host: values.host,
    port: Number(values.port),
    seedPath,
    statePath: values.state,
    apiKey: values['api-key'] ?? process.env.K8S_LISTENER_EMULATOR_API_KEY,
    logger,
  });
  logger.info(
    { url: emulator.url, seed: seedPath ?? 'none', state: values.state },
    'control-plane emulator listening',
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await emulator.close();
  return 0;
}
