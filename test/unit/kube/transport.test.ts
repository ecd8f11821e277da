// The transport's one TLS context: a client key pair OpenSSL cannot use fails when the client is
// opened, as a KubeconfigError naming the kubeconfig and never the key, not at every request.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ClusterConnection } from '../../../src/kube/kubeconfig.ts';
import { KubeconfigError } from '../../../src/kube/kubeconfigError.ts';
import { KubeTransport } from '../../../src/kube/transport.ts';

const KEY_TEXT = 'not-a-private-key-3f1c';

function connectionWithKey(key: string): ClusterConnection {
  return {
    source: 'file',
    paths: ['/home/ops/.kube/config'],
    server: 'https://127.0.0.1:6443',
    tls: { rejectUnauthorized: true },
    credentials: async () => ({
      headers: {},
      clientCertificate: { cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', key },
      generation: 1,
      certificateGeneration: 1,
    }),
    invalidate: () => undefined,
  };
}

describe('KubeTransport TLS context', () => {
  it('refuses an unusable client key pair at open with a typed error that names the file, not the key', async () => {
    const opened = KubeTransport.open(
      connectionWithKey(`-----BEGIN PRIVATE KEY-----\n${KEY_TEXT}\n-----END PRIVATE KEY-----\n`),
      {
        logger: pino({ level: 'silent' }),
        requestTimeoutMs: 1_000,
        userAgent: 'test',
      },
    );
    const error = await opened.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(KubeconfigError);
    expect(error).toMatchObject({ reason: 'invalid', file: '/home/ops/.kube/config' });
    expect((error as Error).message).toMatch(/cannot be used for TLS/);
    expect((error as Error).message).not.toContain(KEY_TEXT);
  });
});
