import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { type ClusterConnection, KubeconfigError, loadKubeconfig } from '../../../src/kube/kubeconfig.ts';

const CA = '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nclient\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nSECRET-KEY-MATERIAL\n-----END PRIVATE KEY-----\n';
const b64 = (text: string) => Buffer.from(text).toString('base64');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeconfig-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes a kubeconfig with one context `ctx` joining `cluster` and `user`, unless `doc` says otherwise. */
async function kubeconfig(
  name: string,
  parts: { cluster?: Record<string, unknown>; user?: Record<string, unknown>; doc?: Record<string, unknown> },
): Promise<string> {
  const path = join(dir, name);
  await mkdir(join(path, '..'), { recursive: true });
  const doc = parts.doc ?? {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443', ...parts.cluster } }],
    users: [{ name: 'u', user: parts.user ?? {} }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'team-a' } }],
    'current-context': 'ctx',
  };
  await writeFile(path, stringify(doc));
  return path;
}

/** Loads with an environment that points nowhere else, so only what a test sets counts. */
function load(options: Parameters<typeof loadKubeconfig>[0] = {}): Promise<ClusterConnection> {
  return loadKubeconfig({
    env: {},
    homeDir: join(dir, 'home'),
    serviceAccountDir: join(dir, 'sa'),
    ...options,
  });
}

async function loadError(options: Parameters<typeof loadKubeconfig>[0]): Promise<KubeconfigError> {
  const error = await load(options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(KubeconfigError);
  return error as KubeconfigError;
}

// Credentials never travel in clear without the kubeconfig saying so.
describe('an http:// API server', () => {
  it('is refused, naming the field, unless the kubeconfig says insecure-skip-tls-verify', async () => {
    const path = await kubeconfig('plain', {
      cluster: { server: 'http://10.0.0.1:8080' },
      user: { token: 't' },
    });
    const error = await loadError({ path });
    expect(error.message).toContain('clusters[0].cluster.server');
    expect(error.message).toContain('http://');
    expect(error.message).not.toContain('10.0.0.1');
    const accepted = await kubeconfig('accepted', {
      cluster: { server: 'http://10.0.0.1:8080', 'insecure-skip-tls-verify': true },
      user: { token: 't' },
    });
    expect((await load({ path: accepted })).server).toBe('http://10.0.0.1:8080');
  });
});

describe('cluster', () => {
  it('reads server, CA data, tls-server-name and the context namespace', async () => {
    const path = await kubeconfig('config', {
      cluster: {
        server: 'https://api.example.test:6443/',
        'certificate-authority-data': b64(CA),
        'tls-server-name': 'kubernetes.default',
      },
    });
    const connection = await load({ path });
    expect(connection).toMatchObject({
      source: 'file',
      paths: [path],
      context: 'ctx',
      namespace: 'team-a',
      server: 'https://api.example.test:6443',
      tls: { ca: CA, rejectUnauthorized: true, servername: 'kubernetes.default' },
    });
  });

  it('reads a CA file relative to the kubeconfig, and insecure-skip-tls-verify without one', async () => {
    await mkdir(join(dir, 'conf', 'pki'), { recursive: true });
    await writeFile(join(dir, 'conf', 'pki', 'ca.crt'), CA);
    const withFile = await load({
      path: await kubeconfig('conf/config', { cluster: { 'certificate-authority': 'pki/ca.crt' } }),
    });
    expect(withFile.tls).toEqual({ ca: CA, rejectUnauthorized: true });
    const insecure = await load({
      path: await kubeconfig('insecure', { cluster: { 'insecure-skip-tls-verify': true } }),
    });
    expect(insecure.tls).toEqual({ rejectUnauthorized: false });
  });

  it.each([
    [{ server: '' }, 'clusters[0].cluster.server', 'no server'],
    [{ server: 'not a url' }, 'clusters[0].cluster.server', 'not a URL'],
    [
      { 'certificate-authority': '/ca.crt', 'certificate-authority-data': b64(CA) },
      'clusters[0].cluster.certificate-authority-data',
      'both set',
    ],
    [
      { 'certificate-authority-data': b64(CA), 'insecure-skip-tls-verify': true },
      'clusters[0].cluster.insecure-skip-tls-verify',
      'not allowed',
    ],
    [{ 'certificate-authority': 'missing.crt' }, 'clusters[0].cluster.certificate-authority', 'cannot read'],
    [
      { 'certificate-authority-data': 'not base64!' },
      'clusters[0].cluster.certificate-authority-data',
      'base64',
    ],
    [{ 'proxy-url': 'http://proxy:3128' }, 'clusters[0].cluster.proxy-url', 'proxy'],
  ])('refuses %j at %s', async (cluster, field, detail) => {
    const path = await kubeconfig('config', { cluster });
    const error = await loadError({ path });
    expect(error.file).toBe(path);
    expect(error.field).toBe(field);
    expect(error.message).toContain(detail);
  });
});

describe('user', () => {
  it('reads client certificate and key data', async () => {
    const connection = await load({
      path: await kubeconfig('config', {
        user: { 'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY) },
      }),
    });
    const credentials = await connection.credentials();
    expect(credentials.clientCertificate).toEqual({ cert: CERT, key: KEY });
    expect(credentials.headers).toEqual({});
  });

  it('reads client certificate and key files relative to the kubeconfig', async () => {
    await mkdir(join(dir, 'nested', 'certs'), { recursive: true });
    await writeFile(join(dir, 'nested', 'certs', 'user.crt'), CERT);
    await writeFile(join(dir, 'nested', 'certs', 'user.key'), KEY);
    const connection = await load({
      path: await kubeconfig('nested/config', {
        user: { 'client-certificate': 'certs/user.crt', 'client-key': './certs/user.key' },
      }),
    });
    expect((await connection.credentials()).clientCertificate).toEqual({ cert: CERT, key: KEY });
  });

  it('sends a token as a bearer header, and username/password as Basic', async () => {
    const token = await load({ path: await kubeconfig('t', { user: { token: 'tok-123' } }) });
    expect((await token.credentials()).headers).toEqual({ authorization: 'Bearer tok-123' });
    const basic = await load({
      path: await kubeconfig('b', { user: { username: 'ann', password: 'pw:1' } }),
    });
    expect((await basic.credentials()).headers).toEqual({
      authorization: `Basic ${Buffer.from('ann:pw:1').toString('base64')}`,
    });
  });

  it('reads a tokenFile relative to the kubeconfig', async () => {
    await mkdir(join(dir, 'k'), { recursive: true });
    await writeFile(join(dir, 'k', 'token'), 'file-token\n');
    const connection = await load({ path: await kubeconfig('k/config', { user: { tokenFile: 'token' } }) });
    expect((await connection.credentials()).headers).toEqual({ authorization: 'Bearer file-token' });
  });

  it('connects anonymously when the context names no user', async () => {
    const path = await kubeconfig('config', {
      doc: {
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
        contexts: [{ name: 'ctx', context: { cluster: 'c' } }],
        'current-context': 'ctx',
        users: null,
      },
    });
    const credentials = await (await load({ path })).credentials();
    expect(credentials.headers).toEqual({});
    expect(credentials.clientCertificate).toBeUndefined();
  });

  it('refuses an auth-provider user, naming the provider and pointing to exec plugins', async () => {
    const path = await kubeconfig('config', {
      user: { 'auth-provider': { name: 'gcp', config: { 'access-token': 'ya29.SECRET' } } },
    });
    const error = await loadError({ path });
    expect(error).toMatchObject({ reason: 'unsupported', file: path, field: 'users[0].user.auth-provider' });
    expect(error.message).toContain('"gcp"');
    expect(error.message).toContain('exec credential plugin');
    expect(error.message).not.toContain('ya29.SECRET');
  });

  it.each([
    [
      { token: 'SECRET-TOKEN', username: 'a', password: 'SECRET-PW' },
      'users[0].user.username',
      'more than one',
    ],
    [{ 'client-certificate-data': b64(CERT) }, 'users[0].user.client-key', 'both a certificate and a key'],
    [
      { 'client-key': '/k', 'client-key-data': b64(KEY), 'client-certificate-data': b64(CERT) },
      'users[0].user.client-key-data',
      'both set',
    ],
    [
      { 'client-certificate-data': b64(CERT), 'client-key-data': 'SECRET%KEY' },
      'users[0].user.client-key-data',
      'base64',
    ],
    [{ as: 'admin', token: 'SECRET-TOKEN' }, 'users[0].user.as', 'impersonation'],
    [{ tokenFile: 'no-such-token' }, 'users[0].user.tokenFile', 'cannot read'],
    [
      { exec: { apiVersion: 'client.authentication.k8s.io/v1alpha1', command: 'x' } },
      'users[0].user.exec.apiVersion',
      'exec',
    ],
    [
      { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'x', interactiveMode: 'Always' } },
      'users[0].user.exec.interactiveMode',
      'terminal',
    ],
  ])('refuses %j at %s, without the secret', async (user, field, detail) => {
    const path = await kubeconfig('config', { user });
    const error = await loadError({ path });
    expect(error.field).toBe(field);
    expect(error.message).toContain(detail);
    expect(error.message).not.toMatch(/SECRET/);
    expect(JSON.stringify(error)).not.toMatch(/SECRET/);
  });
});

describe('document', () => {
  it('reports a YAML syntax error by position, never quoting the line', async () => {
    const path = join(dir, 'config');
    await writeFile(path, 'users:\n- name: u\n  user:\n    token: "SECRET-TOKEN\n  bad: [\n');
    const error = await loadError({ path });
    expect(error.reason).toBe('invalid');
    expect(error.message).toMatch(/not valid YAML/);
    expect(error.message).not.toContain('SECRET');
  });

  it('reports a schema error with the field path, never the value', async () => {
    const path = join(dir, 'config');
    await writeFile(path, stringify({ users: [{ name: 'u', user: { token: ['SECRET-TOKEN'] } }] }));
    const error = await loadError({ path });
    expect(error.field).toBe('users[0].user.token');
    expect(error.message).not.toContain('SECRET');
  });

  it.each([
    [{ 'current-context': 'gone', contexts: [] }, 'current-context', 'context "gone" is not defined'],
    [{ contexts: [{ name: 'x', context: { cluster: 'c' } }] }, undefined, 'no current-context'],
    [
      { 'current-context': 'x', contexts: [{ name: 'x', context: { cluster: 'nope' } }] },
      'contexts[0].context.cluster',
      'cluster "nope" is not defined',
    ],
    [
      {
        'current-context': 'x',
        clusters: [{ name: 'c', cluster: { server: 'https://h' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'nobody' } }],
      },
      'contexts[0].context.user',
      'user "nobody" is not defined',
    ],
  ])('refuses a dangling reference %#', async (doc, field, detail) => {
    const path = await kubeconfig('config', { doc });
    const error = await loadError({ path });
    expect(error).toMatchObject({ reason: 'invalid', file: path, field });
    expect(error.message).toContain(detail);
  });

  it('ignores a broken exec stanza of a user the current context does not use', async () => {
    const path = await kubeconfig('config', {
      doc: {
        clusters: [{ name: 'c', cluster: { server: 'https://h' } }],
        users: [
          { name: 'other', user: { exec: { command: 'no apiVersion' } } },
          { name: 'u', user: { token: 't' } },
        ],
        contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'ctx',
      },
    });
    expect((await (await load({ path })).credentials()).headers.authorization).toBe('Bearer t');
  });

  it('reads a kubeconfig in the shape test/cluster/localCluster.ts writes (JSON, client certificate data)', async () => {
    // The same document writeKubeconfig() produces, field for field.
    const path = join(dir, 'kubeconfig');
    const server = 'https://127.0.0.1:41234';
    await writeFile(
      path,
      JSON.stringify(
        {
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'local', cluster: { server, 'certificate-authority-data': b64(CA) } }],
          users: [
            { name: 'admin', user: { 'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY) } },
          ],
          contexts: [{ name: 'local', context: { cluster: 'local', user: 'admin' } }],
          'current-context': 'local',
        },
        null,
        2,
      ),
      { mode: 0o600 },
    );
    const connection = await load({ path });
    expect(connection).toMatchObject({
      source: 'file',
      context: 'local',
      server,
      tls: { ca: CA, rejectUnauthorized: true },
    });
    expect(connection.namespace).toBeUndefined();
    expect(await connection.credentials()).toEqual({
      headers: {},
      clientCertificate: { cert: CERT, key: KEY },
      generation: 1,
      certificateGeneration: 1,
    });
    // Nothing secret shows when the connection itself is logged.
    expect(JSON.stringify(connection)).not.toContain('SECRET-KEY-MATERIAL');
  });
});

describe('sources and merging', () => {
  async function twoFiles(): Promise<[string, string]> {
    await mkdir(join(dir, 'a'), { recursive: true });
    await mkdir(join(dir, 'b'), { recursive: true });
    await writeFile(join(dir, 'a', 'ca.crt'), 'CA of a');
    await writeFile(join(dir, 'b', 'ca.crt'), 'CA of b');
    await writeFile(join(dir, 'b', 'token'), 'token of b');
    const first = await kubeconfig('a/config', {
      doc: {
        // No current-context here: the second file's applies.
        clusters: [
          { name: 'shared', cluster: { server: 'https://a.test', 'certificate-authority': 'ca.crt' } },
        ],
        users: [{ name: 'shared-user', user: { token: 'token of a' } }],
      },
    });
    const second = await kubeconfig('b/config', {
      doc: {
        clusters: [
          { name: 'shared', cluster: { server: 'https://b.test' } },
          { name: 'only-b', cluster: { server: 'https://only-b.test', 'certificate-authority': 'ca.crt' } },
        ],
        users: [
          { name: 'shared-user', user: { token: 'token of b' } },
          { name: 'b-user', user: { tokenFile: 'token' } },
        ],
        contexts: [
          { name: 'to-shared', context: { cluster: 'shared', user: 'shared-user' } },
          { name: 'to-b', context: { cluster: 'only-b', user: 'b-user' } },
        ],
        'current-context': 'to-shared',
      },
    });
    return [first, second];
  }

  it('merges $KUBECONFIG as client-go: the first file to define a name wins, paths stay relative to their file', async () => {
    const [first, second] = await twoFiles();
    const env = { KUBECONFIG: [join(dir, 'missing'), first, '', second, first].join(':') };
    const shared = await load({ env });
    expect(shared).toMatchObject({
      source: 'file',
      paths: [first, second],
      context: 'to-shared',
      server: 'https://a.test',
      tls: { ca: 'CA of a' },
    });
    expect((await shared.credentials()).headers.authorization).toBe('Bearer token of a');
    const onlyB = await load({ env, context: 'to-b' });
    expect(onlyB).toMatchObject({ server: 'https://only-b.test', tls: { ca: 'CA of b' } });
    expect((await onlyB.credentials()).headers.authorization).toBe('Bearer token of b');
  });

  it('takes current-context from the first file that sets one', async () => {
    const [first, second] = await twoFiles();
    const third = await kubeconfig('c/config', { doc: { 'current-context': 'to-b' } });
    expect((await load({ env: { KUBECONFIG: `${third}:${first}:${second}` } })).context).toBe('to-b');
    expect((await load({ env: { KUBECONFIG: `${first}:${second}:${third}` } })).context).toBe('to-shared');
  });

  it('fails when no file of $KUBECONFIG exists', async () => {
    const error = await loadError({ env: { KUBECONFIG: join(dir, 'nope') } });
    expect(error.reason).toBe('not-found');
  });

  it('falls back to ~/.kube/config, and fails typed without it', async () => {
    expect((await loadError({})).reason).toBe('not-found');
    await kubeconfig('home/.kube/config', { user: { token: 't' } });
    expect(await load({})).toMatchObject({ paths: [join(dir, 'home', '.kube', 'config')], context: 'ctx' });
  });

  it('an explicit path wins over in-cluster and $KUBECONFIG, and must exist', async () => {
    await serviceAccount();
    const other = await kubeconfig('other', { cluster: { server: 'https://other.test' } });
    const path = await kubeconfig('explicit', { cluster: { server: 'https://explicit.test' } });
    const env = { ...IN_CLUSTER_ENV, KUBECONFIG: other };
    expect((await load({ path, env })).server).toBe('https://explicit.test');
    expect((await loadError({ path: join(dir, 'absent'), env })).reason).toBe('not-found');
  });

  const IN_CLUSTER_ENV = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
  async function serviceAccount(token = 'sa-token-1'): Promise<string> {
    const sa = join(dir, 'sa');
    await mkdir(sa, { recursive: true });
    await writeFile(join(sa, 'token'), token);
    await writeFile(join(sa, 'ca.crt'), CA);
    await writeFile(join(sa, 'namespace'), 'agent-ns');
    return sa;
  }

  it('uses the service account in a Pod, before $KUBECONFIG', async () => {
    await serviceAccount();
    const other = await kubeconfig('other', {});
    const connection = await load({ env: { ...IN_CLUSTER_ENV, KUBECONFIG: other } });
    expect(connection).toMatchObject({
      source: 'in-cluster',
      namespace: 'agent-ns',
      server: 'https://10.0.0.1:443',
      tls: { ca: CA, rejectUnauthorized: true },
    });
    expect(connection.paths).toBeUndefined();
    expect((await connection.credentials()).headers).toEqual({ authorization: 'Bearer sa-token-1' });
    const v6 = await load({ env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' } });
    expect(v6.server).toBe('https://[fd00::1]:6443');
  });

  it('is not in-cluster without the service variables or without the token', async () => {
    const other = await kubeconfig('other', {});
    expect((await load({ env: { ...IN_CLUSTER_ENV, KUBECONFIG: other } })).source).toBe('file');
    await serviceAccount();
    expect((await load({ env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBECONFIG: other } })).source).toBe(
      'file',
    );
  });

  it('re-reads a rotated service-account token at most every minute, and at once after invalidate()', async () => {
    const sa = await serviceAccount('first');
    let now = 1_000_000;
    const connection = await load({ env: IN_CLUSTER_ENV, now: () => now });
    const first = await connection.credentials();
    expect(first.headers.authorization).toBe('Bearer first');
    await writeFile(join(sa, 'token'), 'second');
    now += 59_000;
    expect(await connection.credentials()).toBe(first);
    now += 1_000;
    const second = await connection.credentials();
    expect(second.headers.authorization).toBe('Bearer second');
    expect(second.generation).toBe(first.generation + 1);
    expect(second.certificateGeneration).toBe(first.certificateGeneration);

    await writeFile(join(sa, 'token'), 'third');
    connection.invalidate(first.generation); // a late 401 of replaced credentials: ignored
    expect((await connection.credentials()).headers.authorization).toBe('Bearer second');
    connection.invalidate(second.generation);
    expect((await connection.credentials()).headers.authorization).toBe('Bearer third');

    // A token caught missing mid-rotation keeps the last one.
    await rm(join(sa, 'token'));
    now += 60_000;
    expect((await connection.credentials()).headers.authorization).toBe('Bearer third');
  });

  it('re-reads a user tokenFile the same way', async () => {
    await writeFile(join(dir, 'tok'), 'one');
    let now = 0;
    const connection = await load({
      path: await kubeconfig('config', { user: { tokenFile: 'tok' } }),
      now: () => now,
    });
    expect((await connection.credentials()).headers.authorization).toBe('Bearer one');
    await writeFile(join(dir, 'tok'), 'two');
    now += 30_000;
    expect((await connection.credentials()).headers.authorization).toBe('Bearer one');
    now += 30_000;
    expect((await connection.credentials()).headers.authorization).toBe('Bearer two');
  });
});

describe('exec credential plugin', () => {
  /**
   * A plugin that prints response-N.json on its N-th run and records its environment, arguments
   * and KUBERNETES_EXEC_INFO for that run.
   */
  async function plugin(): Promise<{
    command: string;
    respond: (n: number, status: unknown, apiVersion?: string) => Promise<void>;
    runs: () => Promise<number>;
  }> {
    const pluginDir = join(dir, 'plugin');
    await mkdir(pluginDir, { recursive: true });
    const command = join(pluginDir, 'credential.sh');
    await writeFile(
      command,
      [
        '#!/bin/sh',
        'set -e',
        'dir="$(dirname "$0")"',
        'n=$(( $(cat "$dir/runs" 2>/dev/null || echo 0) + 1 ))',
        'echo "$n" > "$dir/runs"',
        'printf "%s" "$KUBERNETES_EXEC_INFO" > "$dir/info-$n.json"',
        'printf "%s" "$PLUGIN_REGION" > "$dir/env-$n"',
        'printf "%s " "$@" > "$dir/args-$n"',
        'cat "$dir/response-$n.json"',
        '',
      ].join('\n'),
    );
    await chmod(command, 0o755);
    return {
      command,
      respond: (n, status, apiVersion = 'client.authentication.k8s.io/v1') =>
        writeFile(
          join(pluginDir, `response-${n}.json`),
          JSON.stringify({ apiVersion, kind: 'ExecCredential', status }),
        ),
      runs: async () => Number((await readFile(join(pluginDir, 'runs'), 'utf8').catch(() => '0')).trim()),
    };
  }

  function execUser(command: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command,
        args: ['token', '--cluster', 'c'],
        env: [{ name: 'PLUGIN_REGION', value: 'eu-1' }],
        interactiveMode: 'Never',
        ...extra,
      },
    };
  }

  it('runs once for concurrent first calls, with the cluster arguments, env and ExecCredential', async () => {
    const p = await plugin();
    const connection = await load({ path: await kubeconfig('config', { user: execUser(p.command) }) });
    expect(await p.runs()).toBe(0);
    await p.respond(1, { token: 'exec-1' });

    const [first, again] = await Promise.all([connection.credentials(), connection.credentials()]);
    expect(first.headers).toEqual({ authorization: 'Bearer exec-1' });
    expect(again).toBe(first);
    expect(await p.runs()).toBe(1);
    expect(await readFile(join(dir, 'plugin', 'args-1'), 'utf8')).toBe('token --cluster c ');
    expect(await readFile(join(dir, 'plugin', 'env-1'), 'utf8')).toBe('eu-1');
    expect(JSON.parse(await readFile(join(dir, 'plugin', 'info-1.json'), 'utf8'))).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
  });

  it('runs again once the credential expires, and keeps one without expiry', async () => {
    const p = await plugin();
    const connection = await load({ path: await kubeconfig('config', { user: execUser(p.command) }) });
    await p.respond(1, { token: 'exec-1', expirationTimestamp: new Date(Date.now() + 1_000).toISOString() });
    await p.respond(2, { token: 'exec-2' });
    const first = await connection.credentials();

    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const second = await connection.credentials();
    expect(second.headers).toEqual({ authorization: 'Bearer exec-2' });
    expect(second.generation).toBeGreaterThan(first.generation);
    // No expiry: kept until the server refuses it.
    expect(await connection.credentials()).toBe(second);
    expect(await p.runs()).toBe(2);
  });

  it('runs again when the credential in use is invalidated, not when an older one is', async () => {
    const p = await plugin();
    const connection = await load({ path: await kubeconfig('config', { user: execUser(p.command) }) });
    await p.respond(1, { token: 'exec-1' });
    await p.respond(2, { token: 'exec-2' });
    const first = await connection.credentials();

    connection.invalidate(first.generation);
    const second = await connection.credentials();
    expect(second.headers).toEqual({ authorization: 'Bearer exec-2' });
    connection.invalidate(first.generation);
    expect(await connection.credentials()).toBe(second);
    expect(await p.runs()).toBe(2);
  });

  it('takes a client certificate from the plugin and signals when it changes', async () => {
    const p = await plugin();
    const connection = await load({ path: await kubeconfig('config', { user: execUser(p.command) }) });
    await p.respond(1, { clientCertificateData: CERT, clientKeyData: KEY });
    await p.respond(2, { clientCertificateData: CERT, clientKeyData: KEY });
    await p.respond(3, { clientCertificateData: 'rotated cert', clientKeyData: 'rotated key' });
    const first = await connection.credentials();
    expect(first.clientCertificate).toEqual({ cert: CERT, key: KEY });
    expect(first.headers).toEqual({});
    connection.invalidate();
    const same = await connection.credentials();
    expect(same.generation).toBe(first.generation + 1);
    expect(same.certificateGeneration).toBe(first.certificateGeneration);
    connection.invalidate();
    const rotated = await connection.credentials();
    expect(rotated.clientCertificate).toEqual({ cert: 'rotated cert', key: 'rotated key' });
    expect(rotated.certificateGeneration).toBe(first.certificateGeneration + 1);
  });

  it('speaks v1beta1, passes cluster info when asked, and resolves a relative command against the kubeconfig', async () => {
    const p = await plugin();
    const path = await kubeconfig('config', {
      cluster: {
        'certificate-authority-data': b64(CA),
        'tls-server-name': 'api.internal',
        extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { audience: 'k8s' } }],
      },
      user: execUser('./plugin/credential.sh', {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        provideClusterInfo: true,
        interactiveMode: undefined,
      }),
    });
    await p.respond(1, { token: 'beta' }, 'client.authentication.k8s.io/v1beta1');
    const connection = await load({ path });
    expect((await connection.credentials()).headers.authorization).toBe('Bearer beta');
    expect(JSON.parse(await readFile(join(dir, 'plugin', 'info-1.json'), 'utf8'))).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: 'https://127.0.0.1:6443',
          'tls-server-name': 'api.internal',
          'certificate-authority-data': b64(CA),
          config: { audience: 'k8s' },
        },
      },
    });
  });

  it('is not run when the user also has a static credential, as in client-go', async () => {
    const p = await plugin();
    const connection = await load({
      path: await kubeconfig('config', { user: { ...execUser(p.command), token: 'static' } }),
    });
    expect((await connection.credentials()).headers.authorization).toBe('Bearer static');
    expect(await p.runs()).toBe(0);
  });

  async function execError(
    setUp: (p: Awaited<ReturnType<typeof plugin>>) => Promise<Record<string, unknown>>,
  ): Promise<KubeconfigError> {
    const p = await plugin();
    const connection = await load({ path: await kubeconfig('config', { user: await setUp(p) }) });
    const error = await connection.credentials().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(KubeconfigError);
    expect((error as KubeconfigError).reason).toBe('exec-failed');
    expect((error as KubeconfigError).field).toMatch(/^users\[0\]\.user\.exec/);
    return error as KubeconfigError;
  }

  it.each([
    ['a failing plugin', async () => ({}), 'exited with code 1'],
    ['output that is not JSON', async () => ({ raw: 'Bearer SECRET-TOKEN' }), 'not JSON'],
    [
      'another apiVersion',
      async () => ({ apiVersion: 'client.authentication.k8s.io/v1beta1', status: { token: 'SECRET-TOKEN' } }),
      'returned client.authentication.k8s.io/v1beta1',
    ],
    ['a certificate without a key', async () => ({ status: { clientCertificateData: CERT } }), 'not both'],
    ['no credential', async () => ({ status: {} }), 'neither a token'],
    [
      'a malformed expiry',
      async () => ({ status: { token: 'SECRET-TOKEN', expirationTimestamp: 'SECRET-TOKEN' } }),
      'expirationTimestamp',
    ],
  ])('fails typed on %s, without the output', async (_name, response, detail) => {
    const error = await execError(async (p) => {
      const r = (await response()) as { raw?: string; apiVersion?: string; status?: unknown };
      if (r.raw !== undefined) await writeFile(join(dir, 'plugin', 'response-1.json'), r.raw);
      else if (r.status !== undefined) await p.respond(1, r.status, r.apiVersion);
      return execUser(p.command);
    });
    expect(error.message).toContain(detail);
    expect(error.message).not.toContain('SECRET');
  });

  it('names a missing command with its install hint, never its arguments or environment', async () => {
    const error = await execError(async () => ({
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: 'k8s-listener-no-such-plugin',
        args: ['--secret', 'SECRET-ARG'],
        env: [{ name: 'SECRET_ENV', value: 'SECRET-VALUE' }],
        installHint: 'install it from the vendor',
        interactiveMode: 'Never',
      },
    }));
    expect(error.message).toContain('"k8s-listener-no-such-plugin" not found (install it from the vendor)');
    expect(error.message).not.toContain('SECRET-');
    expect(error.cause).toBeUndefined();
  });

  it('kills a plugin that does not finish in time, with what it started', async () => {
    const script = join(dir, 'slow.sh');
    // The background child holds the output pipe open: killing the shell alone would not end the run.
    await writeFile(script, `#!/bin/sh\nsleep 30 &\necho $! > "${join(dir, 'child.pid')}"\nwait\n`);
    await chmod(script, 0o755);
    const connection = await load({
      path: await kubeconfig('config', { user: execUser(script) }),
      execTimeoutMs: 500,
    });
    const started = Date.now();
    await expect(connection.credentials()).rejects.toThrow(/did not finish within 500 ms/);
    expect(Date.now() - started).toBeLessThan(3_000);
    const pid = Number((await readFile(join(dir, 'child.pid'), 'utf8')).trim());
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Dead: gone, or a zombie where no init reaps orphans (as in some containers).
    const state = await readFile(`/proc/${pid}/stat`, 'utf8').then(
      (stat) => stat.split(' ')[2],
      () => 'gone',
    );
    expect(['gone', 'Z']).toContain(state);
  });

  it('holds a failure for a few seconds instead of re-running the plugin on every request', async () => {
    const p = await plugin();
    let now = 0;
    const connection = await load({
      path: await kubeconfig('config', { user: execUser(p.command) }),
      now: () => now,
    });
    await expect(connection.credentials()).rejects.toThrow(KubeconfigError);
    await p.respond(2, { token: 'recovered' });
    await expect(connection.credentials()).rejects.toThrow(KubeconfigError);
    expect(await p.runs()).toBe(1);
    now += 5_000;
    expect((await connection.credentials()).headers.authorization).toBe('Bearer recovered');
    expect(await p.runs()).toBe(2);
  });
});

describe('module weight', () => {
  it('loads no package but zod and yaml (in particular not @kubernetes/client-node)', async () => {
    const moduleUrl = new URL('../../../src/kube/kubeconfig.ts', import.meta.url).href;
    const script = [
      "import { registerHooks } from 'node:module';",
      'const urls = [];',
      'registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); urls.push(r.url); return r; } });',
      `await import(${JSON.stringify(moduleUrl)});`,
      'console.log(JSON.stringify(urls));',
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
    const packages = new Set(
      (JSON.parse(stdout) as string[]).flatMap(
        (url) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? [],
      ),
    );
    expect([...packages].sort()).toEqual(['yaml', 'zod']);
  });
});
