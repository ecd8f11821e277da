// Credentials that rotate, against the real API server. An exec credential plugin (a shell script)
// hands out a client certificate that expires, then another: the client must present the second
// one after the first expires — a new TLS connection, since a certificate is fixed per connection.
// A plugin's token the server refuses (401) is fetched anew for the next request, as client-go
// does. The API server says who it sees (SelfSubjectReview).
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { KubeApiError, KubeClient } from '../../../src/kube/index.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { eventually } from '../../support/eventually.ts';

const execFileAsync = promisify(execFile);
const kubeconfigPath = inject('kubeconfigPath');
const clusterKind = inject('clusterKind');
const logger = pino({ level: 'silent' });

const ReviewSchema = z.object({ status: z.object({ userInfo: z.object({ username: z.string() }) }) });
const KubeconfigSchema = z.looseObject({
  clusters: z.array(z.looseObject({ name: z.string(), cluster: z.looseObject({ server: z.string() }) })),
});

let dir: string;
let client: KubeClient | undefined;

/** A client certificate for `user`, signed by the local cluster's CA (in its run directory). */
async function clientCertificate(user: string): Promise<{ cert: string; key: string }> {
  const pki = join(dirname(kubeconfigPath), 'pki');
  const key = join(dir, `${user}.key`);
  const csr = join(dir, `${user}.csr`);
  const crt = join(dir, `${user}.crt`);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await execFileAsync('openssl', ['req', ...ec, '-keyout', key, '-out', csr, '-subj', `/CN=${user}`]);
  const ext = join(dir, `${user}.ext`);
  await writeFile(ext, 'extendedKeyUsage=clientAuth\n');
  await execFileAsync('openssl', [
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    join(pki, 'ca.crt'),
    '-CAkey',
    join(pki, 'ca.key'),
    '-CAcreateserial',
    '-CAserial',
    join(dir, 'ca.srl'),
    '-out',
    crt,
    '-days',
    '1',
    '-extfile',
    ext,
  ]);
  return { cert: await readFile(crt, 'utf8'), key: await readFile(key, 'utf8') };
}

function execCredential(status: Record<string, string>): string {
  return JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status });
}

function certificateStatus(
  certificate: { cert: string; key: string },
  expires?: Date,
): Record<string, string> {
  return {
    clientCertificateData: certificate.cert,
    clientKeyData: certificate.key,
    ...(expires === undefined ? {} : { expirationTimestamp: expires.toISOString() }),
  };
}

/**
 * A kubeconfig whose user is an exec plugin printing `first` on its first run and `second` on every
 * later one; the plugin counts its runs in `runs`.
 */
async function execKubeconfig(
  first: Record<string, string>,
  second: Record<string, string>,
): Promise<string> {
  const plugin = join(dir, 'plugin.sh');
  await writeFile(
    plugin,
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
  await chmod(plugin, 0o755);
  await rm(join(dir, 'runs'), { force: true });
  await writeFile(join(dir, 'first.json'), execCredential(first));
  await writeFile(join(dir, 'second.json'), execCredential(second));
  const cluster = KubeconfigSchema.parse(JSON.parse(await readFile(kubeconfigPath, 'utf8'))).clusters[0];
  if (cluster === undefined) throw new Error('the test kubeconfig has no cluster');
  const path = join(dir, 'kubeconfig');
  await writeFile(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [cluster],
      users: [
        {
          name: 'exec',
          user: {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: plugin,
              interactiveMode: 'Never',
            },
          },
        },
      ],
      contexts: [{ name: 'exec', context: { cluster: cluster.name, user: 'exec' } }],
      'current-context': 'exec',
    }),
  );
  return path;
}

async function pluginRuns(): Promise<number> {
  return Number((await readFile(join(dir, 'runs'), 'utf8')).trim());
}

async function whoAmI(kube: KubeClient): Promise<string> {
  const answer = await kube.requestJson('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    kind: 'SelfSubjectReview',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return ReviewSchema.parse(answer).status.userInfo.username;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kube-credentials-'));
});

afterEach(async () => {
  await client?.close();
  client = undefined;
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

// The CA key is needed to sign the plugin's certificates: only the local cluster has it at hand.
describe.skipIf(clusterKind !== 'local')('client certificates from an exec credential plugin', () => {
  it('are used again after the first expires: the second certificate is presented', async () => {
    const alice = await clientCertificate('l1-alice');
    const bob = await clientCertificate('l1-bob');
    const kubeconfig = await execKubeconfig(
      certificateStatus(alice, new Date(Date.now() + 3_000)),
      certificateStatus(bob),
    );

    client = await KubeClient.fromKubeconfig(kubeconfig, { logger, requestTimeoutMs: 10_000 });
    expect(await whoAmI(client)).toBe('l1-alice');

    // After the expiry the client must run the plugin again and present the new certificate.
    const current = client;
    const seen = await eventually(
      'a user other than l1-alice',
      async () => {
        const user = await whoAmI(current);
        return user === 'l1-alice' ? undefined : user;
      },
      30_000,
      500,
    );
    expect(seen).toBe('l1-bob');
    expect(await pluginRuns()).toBe(2);
    // And it stays on the new certificate.
    expect(await whoAmI(client)).toBe('l1-bob');
  });
});

describe('a token from an exec credential plugin', () => {
  it('refused with 401 is fetched anew: the next request carries the new token', async () => {
    const admin = adminKube(kubeconfigPath);
    const namespace = uniqueNamespace('kube-credentials');
    await createNamespace(admin, namespace);
    try {
      await admin.core.createNamespacedServiceAccount({
        namespace,
        body: { metadata: { name: 'l1-token' } },
      });
      const request = await admin.core.createNamespacedServiceAccountToken({
        namespace,
        name: 'l1-token',
        body: { spec: { audiences: [], expirationSeconds: 600 } },
      });
      const token = request.status?.token;
      if (token === undefined) throw new Error('no token in the TokenRequest answer');
      // No expiry on the first token: only the 401 can make the client ask the plugin again.
      const kubeconfig = await execKubeconfig({ token: 'not-a-valid-token' }, { token });

      client = await KubeClient.fromKubeconfig(kubeconfig, { logger, requestTimeoutMs: 10_000 });
      const refused = await whoAmI(client).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(KubeApiError);
      expect(refused).toMatchObject({ status: 401 });
      expect(await whoAmI(client)).toBe(`system:serviceaccount:${namespace}:l1-token`);
      expect(await pluginRuns()).toBe(2);
    } finally {
      await admin.core.deleteNamespace({ name: namespace }).catch(() => {});
    }
  });
});
