// Starts the real emulator (seeded) and a client pointed at it, for tests.
import pino, { type Logger } from 'pino';
import { type RunningEmulator, startEmulator } from '../../src/emulator/server.ts';
import { ControlPlaneTestClient } from './controlPlaneTestClient.ts';

export const SEED_PATH = new URL('../../src/emulator/fixtures/seed.json', import.meta.url).pathname;
export const SEED_LISTENER_ID = '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11';
export const SEED_DEPLOYMENTS = {
  helloWeb: '3f8d6c1e-1a2b-4c3d-8e4f-000000000101',
  chatApi: '3f8d6c1e-1a2b-4c3d-8e4f-000000000102',
  agentPlatform: '3f8d6c1e-1a2b-4c3d-8e4f-000000000103',
} as const;

export interface Harness {
  readonly emulator: RunningEmulator;
  readonly client: ControlPlaneTestClient;
  close(): Promise<void>;
}

export async function startHarness(
  options: { apiKey?: string; seed?: boolean; logger?: Logger; clientRetries?: number } = {},
): Promise<Harness> {
  const logger = options.logger ?? pino({ level: 'silent' });
  const emulator = await startEmulator({
    apiKey: options.apiKey,
    seedPath: options.seed === false ? undefined : SEED_PATH,
    logger,
  });
  const client = new ControlPlaneTestClient({
    baseUrl: emulator.url,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    logger,
    retry: { retries: options.clientRetries ?? 2, minDelayMs: 5, maxDelayMs: 50 },
  });
  return {
    emulator,
    client,
    close: async () => {
      await client.close();
      await emulator.close();
    },
  };
}
