// The KubeConfig connection's credentials: an exec plugin (a shell script) whose client certificate
// expires is run again, and the certificate generation tells the transport to open a new pool.
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kubeConfigConnection } from '../../../src/kube/credentials.ts';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'credentials-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A plugin printing `first.json` on its first run and `second.json` after; `runs` counts runs. */
async function plugin(first: object, second: object): Promise<string> {
  const path = join(dir, 'plugin.sh');
  await writeFile(join(dir, 'first.json'), JSON.stringify(first));
  await writeFile(join(dir, 'second.json'), JSON.stringify(second));
  await writeFile(
    path,
    [
      '#!/bin/sh',
      `dir='${dir}'`,
      'n=$(cat "$dir/runs" 2>/dev/null || echo 0)',
      'n=$((n + 1))',
      'echo "$n" > "$dir/runs"',
      'if [ "$n" -eq 1 ]; then cat "$dir/first.json"; else cat "$dir/second.json"; fi',
      '',
    ].join('\n'),
  );
  await chmod(path, 0o755);
  return path;
}

function credential(status: Record<string, string>): object {
  return { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status };
}

function configWithExec(command: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443/', skipTLSVerify: false }],
    users: [
      {
        name: 'u',
        exec: { apiVersion: 'client.authentication.k8s.io/v1', command, interactiveMode: 'Never' },
      },
    ],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return config;
}

async function runs(): Promise<number> {
  return Number((await readFile(join(dir, 'runs'), 'utf8')).trim());
}

describe('kubeConfigConnection', () => {
  it('runs an exec plugin again when its client certificate expires, with a new certificate generation', async () => {
    const command = await plugin(
      credential({
        clientCertificateData: 'CERT-A',
        clientKeyData: 'KEY-A',
        expirationTimestamp: new Date(Date.now() + 1_000).toISOString(),
      }),
      credential({ clientCertificateData: 'CERT-B', clientKeyData: 'KEY-B' }),
    );
    const connection = await kubeConfigConnection(configWithExec(command), { cacheMs: 0 });
    expect(connection.server).toBe('https://127.0.0.1:6443');

    const first = await connection.credentials();
    expect(first.clientCertificate).toEqual({ cert: 'CERT-A', key: 'KEY-A' });
    // Before the expiry: the cached credential, same certificate generation, no second run.
    const again = await connection.credentials();
    expect(again.certificateGeneration).toBe(first.certificateGeneration);
    expect(await runs()).toBe(1);

    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const second = await connection.credentials();
    expect(second.clientCertificate).toEqual({ cert: 'CERT-B', key: 'KEY-B' });
    expect(second.certificateGeneration).toBe(first.certificateGeneration + 1);
    expect(await runs()).toBe(2);
  });

  it('gives token credentials as an authorization header, and keeps them within the cache time', async () => {
    const command = await plugin(credential({ token: 'first-token' }), credential({ token: 'second-token' }));
    let now = 0;
    const connection = await kubeConfigConnection(configWithExec(command), {
      cacheMs: 10_000,
      now: () => now,
    });
    const first = await connection.credentials();
    expect(first.headers.authorization).toBe('Bearer first-token');
    expect(first.clientCertificate).toBeUndefined();
    now = 5_000;
    expect((await connection.credentials()).generation).toBe(first.generation);
    // invalidate() of an older generation is ignored; of the current one, the next call re-reads.
    connection.invalidate(first.generation - 1);
    expect((await connection.credentials()).generation).toBe(first.generation);
    connection.invalidate(first.generation);
    expect((await connection.credentials()).generation).toBe(first.generation + 1);
  });
});
