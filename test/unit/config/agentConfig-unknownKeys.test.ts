import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { runRenderCommand } from '../../../src/cli/render.ts';
import { AgentConfig, ConfigError, loadAgentConfig, REPLACED_KEYS } from '../../../src/config/agentConfig.ts';
import { distance, schemaKeyPaths, schemaKeys, suggestKey } from '../../../src/config/keySuggestion.ts';

const run = promisify(execFile);
const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;
const LISTENER = '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11';
const REQUIRED = {
  listenerId: LISTENER,
  controlPlane: { baseUrl: 'http://cp.example.test' },
  namespaces: ['apps'],
};

async function configFile(document: unknown): Promise<string> {
  const path = join(await mkdtemp(join(tmpdir(), 'config-')), 'config.yaml');
  await writeFile(path, stringify(document));
  return path;
}

/** Sets `value` at a dotted path of a copy of `base`. */
function withKey(base: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(base);
  let current: Record<string, unknown> = copy;
  const segments = path.split('.');
  for (const key of segments.slice(0, -1)) {
    current[key] = (current[key] as Record<string, unknown> | undefined) ?? {};
    current = current[key] as Record<string, unknown>;
  }
  current[segments.at(-1) ?? ''] = value;
  return copy;
}

async function loadError(document: unknown): Promise<ConfigError> {
  const error = await loadAgentConfig({ file: await configFile(document), env: {} }).catch((e: unknown) => e);
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  return error;
}

describe('unknown configuration keys', () => {
  // Unknown or misspelled key → the suggestion the error must name (undefined: nothing close).
  it.each([
    ['listenerID', 'listenerId'],
    ['namespace', 'namespaces'],
    ['kubeConfig', 'kubeconfig'],
    ['prune', 'reconcile.prune'],
    ['ingressClassName', 'render.ingress.className'],
    ['somethingElse', undefined],
    ['controlPlane.baseURL', 'controlPlane.baseUrl'],
    ['controlPlane.apikey', 'controlPlane.apiKey'],
    ['controlPlane.api_key_file', 'controlPlane.apiKeyFile'],
    ['controlPlane.timeout', 'controlPlane.timeoutMs'],
    ['log.levl', 'log.level'],
    ['log.fromat', 'log.format'],
    ['probes.prot', 'probes.port'],
    ['probes.hostname', 'probes.host'],
    ['reconcile.pollIntervalMS', 'reconcile.pollIntervalMs'],
    ['reconcile.keepDatabaseVolumes', 'reconcile.prune.keepDatabaseVolumes'],
    ['reconcile.concurency', 'reconcile.concurrency'],
    ['reconcile.leaseName', 'reconcile.leaderElection.leaseName'],
    ['reconcile.prune.maxVanishedFrac', 'reconcile.prune.maxVanishedFraction'],
    ['reconcile.prune.keepDatabaseVolume', 'reconcile.prune.keepDatabaseVolumes'],
    ['reconcile.leaderElection.enable', 'reconcile.leaderElection.enabled'],
    ['reconcile.leaderElection.leaseDuration', 'reconcile.leaderElection.leaseDurationMs'],
    ['render.ingressClassName', 'render.ingress.className'],
    ['render.ingres', 'render.ingress'],
    ['render.ingress.classname', 'render.ingress.className'],
    ['render.ingress.tlsSecret', 'render.ingress.tlsSecretName'],
    ['render.app.containerPrt', 'render.app.containerPort'],
    ['render.defaults.prod.memoryMB', 'render.defaults.prod.memoryMb'],
    ['render.limits.memoryWhenOnlyRequests', 'render.limits.memoryWhenOnlyRequest'],
    ['render.autoscaling.targetCPUUtilisation', 'render.autoscaling.targetCpuUtilization'],
    ['render.prod.podDisruptionBudgets', 'render.prod.podDisruptionBudget'],
    ['render.database.storageClass', 'render.database.storageClassName'],
    ['render.database.defaults.storageGB', 'render.database.defaults.storageGi'],
    ['render.kvstore.imag', 'render.kvstore.image'],
    ['render.kvstore.defaults.memoryMB', 'render.kvstore.defaults.memoryMb'],
    ['render.defaults.dev_free.cpus', 'render.defaults.dev_free.cpu'],
    ['render.hardening.runAsNonroot', 'render.hardening.runAsNonRoot'],
    ['render.policy.podSecurityLevel', 'render.policy.podSecurity'],
    ['render.redis', undefined],
  ])('%s is refused, naming %s', async (path, suggestion) => {
    const error = await loadError(withKey(REQUIRED, path, 1));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.unknownKeys).toEqual([{ path, suggestion }]);
    // Unknown keys come first; a section left incomplete by a misspelled key is named after them.
    expect(error.fields[0]).toBe(path);
    expect(error.message).toContain(
      suggestion ? `unknown key ${path} (did you mean ${suggestion}?)` : `unknown key ${path}`,
    );
    if (!suggestion) expect(error.message).not.toContain('did you mean');
  });

  it('refuses a key an earlier version knew, naming the key that replaced it', async () => {
    const error = await loadError(withKey(REQUIRED, 'render.database.uriEnv', 'PG_URL'));
    expect(error.unknownKeys).toEqual([
      {
        path: 'render.database.uriEnv',
        suggestion: 'render.database.uriEnvs',
        replacedBy: 'render.database.uriEnvs',
      },
    ]);
    expect(error.message).toContain(
      'unknown key render.database.uriEnv (replaced by render.database.uriEnvs: a list of names, each given the connection string)',
    );
    expect(error.message).not.toContain('PG_URL');
    // Every replacement named is a key of the schema.
    for (const { key } of Object.values(REPLACED_KEYS)) expect(schemaKeyPaths(AgentConfig)).toContain(key);
  });

  it('refuses the same database variable named twice', async () => {
    const error = await loadError(
      withKey(REQUIRED, 'render.database.uriEnvs', ['DATABASE_URI', 'DATABASE_URI']),
    );
    expect(error.fields).toEqual(['render.database.uriEnvs']);
  });

  it('reports every unknown key and every other problem in one error, with no value', async () => {
    const document = {
      listenerId: LISTENER,
      controlPlane: {
        baseUrl: 'http://cp.example.test',
        apiKey: 'sk-never-print',
        apiKy: 'sk-never-print-2',
      },
      render: { ingressClassName: 'nginx-secret-looking-value', app: { containerPort: 'eighty' } },
      reconcile: { keepDatabaseVolumes: true, pollIntervalMS: 10_000 },
    };
    const error = await loadError(document);
    expect(error.unknownKeys.map((k) => k.path).sort()).toEqual([
      'controlPlane.apiKy',
      'reconcile.keepDatabaseVolumes',
      'reconcile.pollIntervalMS',
      'render.ingressClassName',
    ]);
    expect(error.fields).toContain('render.app.containerPort');
    expect(error.message).toMatch(/^invalid configuration in .*config\.yaml: unknown key /);
    for (const value of ['sk-never-print', 'nginx-secret-looking-value', 'eighty'])
      expect(error.message).not.toContain(value);
  });

  // Every object of the schema, found by walking it (so a section added later is covered too).
  const objectPaths = [
    '',
    ...schemaKeys(AgentConfig)
      .filter((k) => k.isObject)
      .map((k) => k.path),
  ];
  it.each(objectPaths)('the object at %j refuses an unknown key', async (path) => {
    const unknown = path ? `${path}.zzUnknownKey` : 'zzUnknownKey';
    const error = await loadError(withKey(REQUIRED, unknown, 1));
    expect(error.unknownKeys.map((k) => k.path)).toContain(unknown);
  });

  it('covers every section of the configuration', () => {
    expect(objectPaths).toEqual(
      expect.arrayContaining([
        'controlPlane',
        'log',
        'probes',
        'reconcile',
        'reconcile.prune',
        'reconcile.leaderElection',
        'render.app',
        'render.ingress',
        'render.database.defaults',
      ]),
    );
  });

  it('leaves free-form maps open: the probes, ingress annotations', async () => {
    const config = await loadAgentConfig({
      file: await configFile({
        ...REQUIRED,
        render: {
          app: { readinessProbe: { httpGet: { path: '/ready', port: 'http' }, anyOtherField: 1 } },
          ingress: { annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': '10m' } },
        },
      }),
      env: {},
    });
    expect(config.render.app.readinessProbe).toMatchObject({ anyOtherField: 1 });
    expect(config.render.ingress.annotations).toEqual({
      'nginx.ingress.kubernetes.io/proxy-body-size': '10m',
    });
  });

  it('refuses apiKey together with apiKeyFile, naming both', async () => {
    const error = await loadAgentConfig({
      file: await configFile({
        ...REQUIRED,
        controlPlane: { ...REQUIRED.controlPlane, apiKeyFile: '/var/run/secrets/api-key' },
      }),
      env: { K8S_LISTENER_API_KEY: 'sk-never-print' },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).fields).toEqual(['controlPlane.apiKey', 'controlPlane.apiKeyFile']);
    expect((error as ConfigError).message).toContain('controlPlane.apiKey and controlPlane.apiKeyFile');
    expect((error as ConfigError).message).not.toContain('sk-never-print');
  });

  it('lists key paths from the schema itself, down to leaves but not into free-form maps', () => {
    const paths = schemaKeyPaths(AgentConfig);
    expect(paths).toContain('render.ingress.className');
    expect(paths).toContain('reconcile.leaderElection.leaseNamespace');
    expect(paths).toContain('render.defaults.dev_free.cpu');
    expect(paths).toContain('render.app.readinessProbe');
    expect(paths.some((p) => p.startsWith('render.app.readinessProbe.'))).toBe(false);
    expect(paths.some((p) => p.startsWith('render.ingress.annotations.'))).toBe(false);
    expect(new Set(paths).size).toBe(paths.length);
  });

  it.each([
    ['', '', 0],
    ['kitten', 'sitting', 3],
    ['abc', '', 3],
    ['flaw', 'lawn', 2],
  ])('edit distance %j → %j is %i', (a, b, expected) => {
    expect(distance(a, b)).toBe(expected);
    expect(distance(b, a)).toBe(expected);
  });

  it('suggests nothing far away', () => {
    expect(suggestKey('render.zzzz', ['render.ingress', 'render.app'])).toBeUndefined();
  });
});

describe('run', () => {
  it('stops at start with exit 1 and the error on stderr, before touching anything', async () => {
    const file = await configFile({ ...REQUIRED, render: { ingressClassName: 'nginx' } });
    const result = await run(process.execPath, [MAIN, 'run', '--config', file], {
      env: { PATH: process.env.PATH ?? '' },
      timeout: 30_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `k8s-listener run: invalid configuration in ${file}: unknown key render.ingressClassName (did you mean render.ingress.className?)\n`,
    );
  });
});

describe('render --config', () => {
  it('refuses unknown keys anywhere in the file with the agent’s own message, and accepts a valid file', async () => {
    const bad = await configFile({
      render: { ingressClassName: 'nginx' },
      reconcile: { keepDatabaseVolumes: true },
    });
    const error = await runRenderCommand([
      '--file',
      'test/fixtures/deployment-minimal.json',
      '--config',
      bad,
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      `invalid configuration in ${bad}: unknown key render.ingressClassName (did you mean render.ingress.className?); unknown key reconcile.keepDatabaseVolumes (did you mean reconcile.prune.keepDatabaseVolumes?)`,
    );

    // A full agent configuration and a render-only one both work; listenerId etc. are not needed.
    const good = await configFile({ render: { ingress: { className: 'nginx' } }, log: { level: 'warn' } });
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const code = await runRenderCommand([
        '--file',
        'test/fixtures/deployment-minimal.json',
        '--config',
        good,
      ]);
      expect(code).toBe(0);
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  });

  it('refuses an invalid value in the render section, naming the field', async () => {
    const bad = await configFile({ render: { app: { containerPort: 0 } } });
    const error = await runRenderCommand([
      '--file',
      'test/fixtures/deployment-minimal.json',
      '--config',
      bad,
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).fields).toEqual(['render.app.containerPort']);
  });
});
