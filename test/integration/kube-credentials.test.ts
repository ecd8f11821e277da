// Credentials that rotate, against the real API server: an exec credential plugin (a shell script)
// hands out a client certificate that expires, then another; the client must present the second
// one after the first expires — a new TLS connection, since a certificate is fixed per connection.
// The API server says who it sees (SelfSubjectReview).
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { KubeClient } from '../../src/kube/index.ts';

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

function execCredential(certificate: { cert: string; key: string }, expires?: Date): string {
  return JSON.stringify({
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    status: {
      clientCertificateData: certificate.cert,
      clientKeyData: certificate.key,
      ...(expires === undefined ? {} : { expirationTimestamp: expires.toISOString() }),
    },
  });
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

afterAll(async () => {
  await client?.close();
  await rm(dir, { recursive: true, force: true });
});

// The CA key is needed to sign the plugin's certificates: only the local cluster has it at hand.
describe.skipIf(clusterKind !== 'local')('client certificates from an exec credential plugin', () => {
  it('are used again after the first expires: the second certificate is presented', async () => {
    const alice = await clientCertificate('l1-alice');
    const bob = await clientCertificate('l1-bob');
    // The plugin prints the first credential on its first run, the second on every later run.
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
    await writeFile(join(dir, 'first.json'), execCredential(alice, new Date(Date.now() + 3_000)));
    await writeFile(join(dir, 'second.json'), execCredential(bob));
    const cluster = KubeconfigSchema.parse(JSON.parse(await readFile(kubeconfigPath, 'utf8'))).clusters[0];
    if (cluster === undefined) throw new Error('the local kubeconfig has no cluster');
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
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

    client = await KubeClient.fromKubeconfig(kubeconfig, { logger, requestTimeoutMs: 10_000 });
    expect(await whoAmI(client)).toBe('l1-alice');

    // After the expiry the client must run the plugin again and present the new certificate;
    // credentials are re-read within seconds of expiry, not per request.
    const deadline = Date.now() + 30_000;
    let seen = 'l1-alice';
    while (seen === 'l1-alice' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      seen = await whoAmI(client);
    }
    expect(seen).toBe('l1-bob');
    expect(Number((await readFile(join(dir, 'runs'), 'utf8')).trim())).toBe(2);
    // And it stays on the new certificate.
    expect(await whoAmI(client)).toBe('l1-bob');
  });
});
