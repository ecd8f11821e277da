// The kubeconfig loader against the real API server: each way of authenticating it supports is
// proved by asking the server who we are (SelfSubjectReview) over a connection built only from
// what loadKubeconfig returns.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { type ClusterConnection, loadKubeconfig } from '../../../src/kube/kubeconfig.ts';
import { uniqueNamespace } from '../../support/adminKube.ts';

const kubeconfigPath = inject('kubeconfigPath');
const namespace = uniqueNamespace('kubeconfig');
let admin: ClusterConnection;
let dir: string;
let saToken: string;

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** One request with the connection's TLS and current credentials, on a pool of its own. */
async function call(
  connection: ClusterConnection,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<Answer> {
  const credentials = await connection.credentials();
  const agent = new Agent({ connect: { ...connection.tls, ...credentials.clientCertificate } });
  try {
    const response = await request(connection.server + path, {
      method,
      dispatcher: agent,
      headers: { ...credentials.headers, accept: 'application/json', 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
  } finally {
    await agent.close();
  }
}

async function whoAmI(connection: ClusterConnection): Promise<string | undefined> {
  const answer = await call(connection, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
  });
  if (answer.status !== 201) return `HTTP ${answer.status}`;
  return (answer.body.status as { userInfo?: { username?: string } } | undefined)?.userInfo?.username;
}

/** The cluster's own kubeconfig with its user replaced. */
async function kubeconfigWithUser(name: string, user: Record<string, unknown>): Promise<string> {
  const doc = JSON.parse(await readFile(kubeconfigPath, 'utf8')) as {
    users: { name: string; user: unknown }[];
  };
  for (const entry of doc.users) entry.user = user;
  const path = join(dir, name);
  await writeFile(path, stringify(doc));
  return path;
}

/** An exec plugin that prints the N-th file of its directory on its N-th run. */
async function execPlugin(responses: readonly unknown[]): Promise<string> {
  const pluginDir = await mkdtemp(join(dir, 'plugin-'));
  for (const [index, status] of responses.entries()) {
    await writeFile(
      join(pluginDir, `response-${index + 1}.json`),
      JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status }),
    );
  }
  const command = join(pluginDir, 'plugin.sh');
  await writeFile(
    command,
    '#!/bin/sh\nset -e\ndir="$(dirname "$0")"\nn=$(( $(cat "$dir/runs" 2>/dev/null || echo 0) + 1 ))\necho "$n" > "$dir/runs"\ncat "$dir/response-$n.json"\n',
  );
  await chmod(command, 0o755);
  return command;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeconfig-it-'));
  admin = await loadKubeconfig({ path: kubeconfigPath, env: {} });
  const created = await call(admin, 'POST', '/api/v1/namespaces', { metadata: { name: namespace } });
  expect(created.status).toBe(201);
  const sa = await call(admin, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    metadata: { name: 'agent' },
  });
  expect(sa.status).toBe(201);
  const token = await call(admin, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts/agent/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 600 },
  });
  expect(token.status).toBe(201);
  saToken = (token.body.status as { token: string }).token;
});

afterAll(async () => {
  if (admin !== undefined)
    await call(admin, 'DELETE', `/api/v1/namespaces/${namespace}`).catch(() => undefined);
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const serviceAccountUser = () => `system:serviceaccount:${namespace}:agent`;

describe('kubeconfig against the real API server', () => {
  it('the local cluster kubeconfig authenticates with its client certificate', async () => {
    expect(admin.source).toBe('file');
    expect((await admin.credentials()).clientCertificate).toBeDefined();
    expect(await whoAmI(admin)).toBe('kubernetes-admin');
  });

  it('a token file user authenticates as the service account', async () => {
    await writeFile(join(dir, 'sa-token'), saToken);
    const connection = await loadKubeconfig({
      path: await kubeconfigWithUser('token-file', { tokenFile: 'sa-token' }),
    });
    expect(await whoAmI(connection)).toBe(serviceAccountUser());
  });

  it('in-cluster: the service host and port, the mounted token and CA', async () => {
    const sa = join(dir, 'serviceaccount');
    await mkdir(sa);
    await writeFile(join(sa, 'token'), saToken);
    await writeFile(join(sa, 'ca.crt'), admin.tls.ca ?? '');
    await writeFile(join(sa, 'namespace'), namespace);
    const url = new URL(admin.server);
    const connection = await loadKubeconfig({
      env: { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port },
      serviceAccountDir: sa,
    });
    expect(connection).toMatchObject({ source: 'in-cluster', namespace, server: admin.server });
    expect(await whoAmI(connection)).toBe(serviceAccountUser());
  });

  it('an exec plugin token; after a 401, invalidate() runs the plugin again', async () => {
    const command = await execPlugin([{ token: 'not-a-valid-token' }, { token: saToken }]);
    const connection = await loadKubeconfig({
      path: await kubeconfigWithUser('exec-token', {
        exec: { apiVersion: 'client.authentication.k8s.io/v1', command, interactiveMode: 'Never' },
      }),
    });
    const refused = await connection.credentials();
    expect(await whoAmI(connection)).toBe('HTTP 401');
    connection.invalidate(refused.generation);
    expect(await whoAmI(connection)).toBe(serviceAccountUser());
  });

  it('an exec plugin client certificate', async () => {
    const { clientCertificate } = await admin.credentials();
    const command = await execPlugin([
      { clientCertificateData: clientCertificate?.cert, clientKeyData: clientCertificate?.key },
    ]);
    const connection = await loadKubeconfig({
      path: await kubeconfigWithUser('exec-cert', {
        exec: { apiVersion: 'client.authentication.k8s.io/v1', command, interactiveMode: 'Never' },
      }),
    });
    expect(await whoAmI(connection)).toBe('kubernetes-admin');
  });
});
