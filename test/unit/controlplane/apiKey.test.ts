import { rm, writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/cli/logger.ts';
import { ApiKeyError, ApiKeyFile } from '../../../src/controlplane/apiKey.ts';
import { ControlPlaneClient } from '../../../src/controlplane/client.ts';
import { ControlPlaneError } from '../../../src/controlplane/errors.ts';
import { type RunningEmulator, startEmulator } from '../../../src/emulator/server.ts';
import { SEED_LISTENER_ID, SEED_PATH } from '../../support/emulatorHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { type MountedSecret, mountedSecret } from '../../support/mountedSecret.ts';

const OLD_KEY = 'sk-old-0123456789abcdef';
const NEW_KEY = 'sk-new-fedcba9876543210';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function logSink(): { logger: ReturnType<typeof createLogger>; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger('trace', sink), text: () => lines.join('') };
}

async function secret(files: Record<string, string>): Promise<MountedSecret> {
  const mounted = await mountedSecret(files);
  cleanup.push(() => mounted.remove());
  return mounted;
}

async function emulator(apiKey: string | undefined): Promise<RunningEmulator> {
  const running = await startEmulator({ apiKey, seedPath: SEED_PATH });
  cleanup.push(() => running.close());
  return running;
}

const status = async (url: string, key?: string) =>
  (await fetch(`${url}/v2/listeners`, key ? { headers: { 'x-api-key': key } } : {})).status;

describe('emulator key rotation', () => {
  it('accepts only the key set last, at run time', async () => {
    const running = await emulator(OLD_KEY);
    expect(await status(running.url, OLD_KEY)).toBe(200);
    expect(await status(running.url)).toBe(401);
    running.setApiKey(NEW_KEY);
    expect(await status(running.url, OLD_KEY)).toBe(401);
    expect(await status(running.url, NEW_KEY)).toBe(200);
    running.setApiKey(undefined);
    expect(await status(running.url)).toBe(200);
  });
});

describe('API key from a mounted Secret', () => {
  it('uses a rotated key without a restart: the old key is refused, the next requests succeed', async () => {
    const running = await emulator(OLD_KEY);
    const mounted = await secret({ 'api-key': `${OLD_KEY}\n` });
    const log = logSink();
    // A long interval: the change must be noticed through the watch or the 401, not by luck.
    const client = new ControlPlaneClient({
      baseUrl: running.url,
      apiKeyFile: mounted.path('api-key'),
      apiKeyFileCheckMs: 600_000,
      logger: log.logger,
      retry: { retries: 0 },
    });
    cleanup.push(() => client.close());
    expect((await client.getListener(SEED_LISTENER_ID)).id).toBe(SEED_LISTENER_ID);

    // The control plane rotates first: the key in the file is refused.
    running.setApiKey(NEW_KEY);
    const refused = await client.getListener(SEED_LISTENER_ID).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ControlPlaneError);
    expect((refused as ControlPlaneError).status).toBe(401);

    // Then the kubelet publishes the new Secret version: new directory, atomic `..data` swap.
    await mounted.update({ 'api-key': `${NEW_KEY}\n` });
    expect((await client.getListener(SEED_LISTENER_ID)).id).toBe(SEED_LISTENER_ID);
    const listing = await client.listAllDeployments();
    expect(listing.items.length).toBeGreaterThan(0);

    expect(log.text()).toContain('API key file changed; using the new key');
    expect(log.text()).not.toContain(OLD_KEY);
    expect(log.text()).not.toContain(NEW_KEY);
  });

  it('notices a rotation before any refusal, through the watch on the directory', async () => {
    const mounted = await secret({ 'api-key': OLD_KEY });
    const source = new ApiKeyFile({ path: mounted.path('api-key'), checkIntervalMs: 600_000 });
    cleanup.push(() => source.close());
    expect(await source.current()).toBe(OLD_KEY);
    await mounted.update({ 'api-key': NEW_KEY });
    const seen = await eventually(
      'the new key',
      async () => ((await source.current()) === NEW_KEY ? NEW_KEY : undefined),
      5_000,
      20,
    );
    expect(seen).toBe(NEW_KEY);
  });

  it('notices an in-place rewrite through the interval check alone', async () => {
    const mounted = await secret({ 'api-key': OLD_KEY });
    const path = `${mounted.dir}/plain-key`;
    await writeFile(path, OLD_KEY);
    const source = new ApiKeyFile({ path, checkIntervalMs: 50 });
    cleanup.push(() => source.close());
    expect(await source.current()).toBe(OLD_KEY);
    await writeFile(path, NEW_KEY);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await source.current()).toBe(NEW_KEY);
  });

  it('refuses a missing or empty file at the first request, naming the file and not the content', async () => {
    const mounted = await secret({ 'api-key': '  \n' });
    const empty = new ApiKeyFile({ path: mounted.path('api-key') });
    const emptyError = await empty.current().catch((e: unknown) => e);
    expect(emptyError).toBeInstanceOf(ApiKeyError);
    expect(emptyError).toMatchObject({ code: 'API_KEY_FILE_EMPTY', path: mounted.path('api-key') });

    const missingPath = `${mounted.dir}/nope`;
    const client = new ControlPlaneClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKeyFile: missingPath,
      logger: createLogger('silent'),
    });
    cleanup.push(() => client.close());
    const missing = await client.getListener(SEED_LISTENER_ID).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiKeyError);
    expect((missing as ApiKeyError).message).toBe(`cannot read the API key file ${missingPath}`);
    expect((missing as ApiKeyError).code).toBe('API_KEY_FILE_UNREADABLE');
  });

  it('keeps the last good key when the file vanishes, and warns once without the key', async () => {
    const mounted = await secret({ 'api-key': OLD_KEY });
    const log = logSink();
    const source = new ApiKeyFile({ path: mounted.path('api-key'), checkIntervalMs: 10, logger: log.logger });
    cleanup.push(() => source.close());
    expect(await source.current()).toBe(OLD_KEY);
    await rm(mounted.path('api-key'));
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 15));
      expect(await source.current()).toBe(OLD_KEY);
    }
    expect(log.text().match(/API key file unusable; keeping the last key/g)).toHaveLength(1);
    expect(log.text()).not.toContain(OLD_KEY);
  });

  it('refuses apiKey together with apiKeyFile', () => {
    expect(
      () =>
        new ControlPlaneClient({
          baseUrl: 'http://127.0.0.1:9',
          apiKey: OLD_KEY,
          apiKeyFile: '/var/run/secrets/api-key',
          logger: createLogger('silent'),
        }),
    ).toThrow('apiKey, apiKeyFile and apiKeySource are mutually exclusive');
  });
});
