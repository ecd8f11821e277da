// The chart and the agent can never drift apart: every values file in the repository is rendered
// with `helm template`, and the ConfigMap's config.yaml is loaded with the agent's own loader.
import { execFile } from 'node:child_process';
import { glob, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml, stringify } from 'yaml';
import { type AgentConfig, ConfigError, loadAgentConfig } from '../../../src/config/agentConfig.ts';

const run = promisify(execFile);
const binDir = inject('clusterBinDir');
const root = new URL('../../..', import.meta.url).pathname;
const chart = join(root, 'charts/k8s-listener');
const helmBinary = binDir ? join(binDir, 'helm') : 'helm';

/** Where values files live: the chart's own (and any ci/ ones), deploy/, test fixtures. */
const VALUES_GLOBS = ['charts/**/*values*.yaml', 'deploy/**/*values*.yaml', 'test/**/*values*.yaml'];

/** Values the chart requires (values.schema.json), supplied only where a file lacks them. */
const REQUIRED_SETS: readonly [path: string, set: string][] = [
  ['listenerId', 'listenerId=7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11'],
  ['controlPlane.url', 'controlPlane.url=http://cp.example.test'],
  ['namespaces', 'namespaces={apps}'],
];

interface Manifest {
  kind: string;
  data?: Record<string, string>;
  spec?: {
    template: {
      spec: {
        containers: { volumeMounts?: { name: string; mountPath: string }[] }[];
        volumes?: {
          name: string;
          secret?: { secretName: string; items?: { key: string; path: string }[] };
        }[];
      };
    };
  };
}

async function valuesFiles(): Promise<string[]> {
  const found = new Set<string>();
  for (const pattern of VALUES_GLOBS) {
    for await (const file of glob(pattern, { cwd: root, exclude: (name) => name.includes('node_modules') }))
      found.add(file);
  }
  return [...found].sort();
}

function lookup(values: unknown, path: string): unknown {
  let current = values;
  for (const key of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function isMissing(value: unknown): boolean {
  return (
    value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)
  );
}

/** Renders the chart with one values file and loads the ConfigMap's config.yaml as the agent does. */
async function renderAndLoad(
  valuesPath: string,
  extraSets: readonly string[] = [],
): Promise<{ config: AgentConfig; manifests: Manifest[]; values: Record<string, unknown> }> {
  const values = (parseYaml(await readFile(valuesPath, 'utf8')) ?? {}) as Record<string, unknown>;
  const sets = REQUIRED_SETS.filter(([path]) => isMissing(lookup(values, path))).flatMap(([, set]) => [
    '--set',
    set,
  ]);
  const { stdout } = await run(
    helmBinary,
    ['template', 'agent', chart, '-f', valuesPath, ...sets, ...extraSets.flatMap((s) => ['--set', s])],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const manifests = parseAllDocuments(stdout)
    .map((doc) => doc.toJSON() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
  const configMap = manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.yaml'] !== undefined);
  const text = configMap?.data?.['config.yaml'];
  if (text === undefined) throw new Error(`no ConfigMap with config.yaml rendered for ${valuesPath}`);
  const configPath = join(await mkdtemp(join(tmpdir(), 'chart-config-')), 'config.yaml');
  await writeFile(configPath, text);
  // No environment: what the agent reads must come from the chart alone.
  const config = await loadAgentConfig({ file: configPath, env: {} });
  return { config, manifests, values };
}

describe('chart values → agent configuration', () => {
  it('finds the values files of the repository', async () => {
    const files = await valuesFiles();
    expect(files).toContain('charts/k8s-listener/values.yaml');
    expect(files).toContain('deploy/values-example.yaml');
  });

  it('renders every values file into a configuration the agent loads, with its settings intact', async () => {
    const files = await valuesFiles();
    for (const file of files) {
      const { config, values } = await renderAndLoad(join(root, file)).catch((error: unknown) => {
        throw new Error(`${file}: ${error instanceof Error ? error.message : String(error)}`, {
          cause: error,
        });
      });
      // The file's own agent settings reach the agent unchanged.
      const own = (values.config ?? {}) as Record<string, unknown>;
      expect(config, file).toMatchObject(own);
      if (!isMissing(values.logLevel)) expect(config.log.level, file).toBe(values.logLevel);
    }
  });

  it('mounts the API-key Secret where controlPlane.apiKeyFile points, for an existing and a chart-made Secret', async () => {
    const example = join(root, 'deploy/values-example.yaml');
    for (const sets of [[], ['controlPlane.existingSecret.name=', 'controlPlane.apiKey=not-a-real-key']]) {
      const { config, manifests } = await renderAndLoad(example, sets);
      const apiKeyFile = config.controlPlane.apiKeyFile ?? '';
      expect(apiKeyFile).not.toBe('');
      expect(config.controlPlane.apiKey).toBeUndefined();
      const pod = manifests.find((m) => m.kind === 'Deployment')?.spec?.template.spec;
      const mount = pod?.containers[0]?.volumeMounts?.find((v) => apiKeyFile.startsWith(`${v.mountPath}/`));
      const volume = pod?.volumes?.find((v) => v.name === mount?.name);
      expect(volume?.secret?.items?.map((item) => `${mount?.mountPath}/${item.path}`)).toEqual([apiKeyFile]);
      // The Secret reaches the agent as a file only, never as an environment variable.
      expect(JSON.stringify(pod?.containers[0])).not.toContain('K8S_LISTENER_API_KEY');
    }
    const withoutKey = await renderAndLoad(example, ['controlPlane.existingSecret.name=']);
    expect(withoutKey.config.controlPlane.apiKeyFile).toBeUndefined();
  });

  it('catches a misspelled key in a values file, naming it and its valid spelling', async () => {
    const example = parseYaml(await readFile(join(root, 'deploy/values-example.yaml'), 'utf8')) as {
      config: Record<string, Record<string, unknown>>;
    };
    const render = example.config.render ?? {};
    example.config.render = { ...render, ingressClassName: 'nginx' };
    const misspelled = join(await mkdtemp(join(tmpdir(), 'values-')), 'values-misspelled.yaml');
    await writeFile(misspelled, stringify(example));
    const error = await renderAndLoad(misspelled).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).unknownKeys).toEqual([
      { path: 'render.ingressClassName', suggestion: 'render.ingress.className' },
    ]);
  });
});
