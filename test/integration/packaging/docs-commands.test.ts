// The commands of the README and docs/ run as they are written, read from the pages themselves:
// the operator commands against a running agent, the emulator, the test cluster; the install
// commands with the cluster's own kubectl and helm. Only what no test can use is substituted: the
// configuration file's path, a free port for the emulator, the API key's value.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import type { Agent } from '../../../src/manager/agent.ts';
import { kubectl } from '../../support/adminKube.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { docBlock, shellCommands } from '../../support/docBlocks.ts';
import { eventually } from '../../support/eventually.ts';

const ROOT = new URL('../../..', import.meta.url).pathname;

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A command as a user's shell runs it, from the repository root. */
function start(command: string, env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn('bash', ['-c', command], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function run(command: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<Ran> {
  const child = start(command, env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => stopGroup(child), timeoutMs);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** npm starts node under a shell: stop the whole process group. */
function stopGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): void {
  if (child.pid !== undefined && child.exitCode === null) {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

describe('operator commands of README.md, docs/operating.md and docs/architecture.md', () => {
  let world: World;
  let agent: Agent;
  let dir: string;
  let configPath: string;
  const withConfig = (command: string) => command.replaceAll('config.yaml', configPath);

  beforeAll(async () => {
    world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
    const [ns = ''] = world.namespaces;
    agent = await startAgent(world, { allowedNamespaces: world.namespaces });
    const web = await world.client.createDeployment(app(world, 'web', ns));
    await waitForRevision(world, web, 'DEPLOYED');
    dir = await mkdtemp(join(tmpdir(), 'k8s-listener-docs-'));
    configPath = join(dir, 'config.yaml');
    await writeFile(
      configPath,
      stringify({
        listenerId: world.listenerId,
        controlPlane: { baseUrl: world.emulator.url },
        kubeconfig: world.kubeconfigPath,
        namespaces: [ns],
        agentNamespace: 'default',
      }),
    );
  });
  afterAll(async () => {
    await agent?.stop();
    await world?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the README's Operate block: status, one deployment, diff, check and render, each exit 0", async () => {
    const commands = shellCommands(await docBlock('README.md', 'Operate'));
    expect(commands.map((c) => c.split(' ')[5])).toEqual(['status', 'status', 'diff', 'check', 'render']);
    const outputs: string[] = [];
    for (const command of commands) {
      const result = await run(withConfig(command));
      expect(result.code, `${command}\n${result.stderr}`).toBe(0);
      outputs.push(result.stdout);
    }
    const [table, detail, diff, check, render] = outputs;
    expect(table).toMatch(/^web\s+\S+\s+\w{8}\s+main 1\/1\s+DEPLOYED/m);
    expect(detail).toMatch(/^Deployment\s+web\s+main\s+Current/m);
    expect(diff).toContain('no changes');
    expect(check).toMatch(/✓/);
    expect(check).not.toMatch(/✗/);
    expect(render).toMatch(/^kind: Deployment$/m);
  });

  it('the status, diff and check blocks of docs/operating.md, --watch until Ctrl-C included', async () => {
    const commands = [
      ...shellCommands(await docBlock('docs/operating.md', '`k8s-listener status`')),
      ...shellCommands(await docBlock('docs/operating.md', '`k8s-listener diff`')),
      ...shellCommands(await docBlock('docs/operating.md', '`k8s-listener check`')),
    ];
    expect(commands).toHaveLength(6);
    for (const command of commands) {
      if (command.includes('--watch')) {
        const child = start(withConfig(command));
        let seen = '';
        child.stdout?.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
        });
        await eventually(
          'a status table from --watch',
          async () => (/^web\s.*DEPLOYED/m.test(seen) ? true : undefined),
          60_000,
        );
        const closed = new Promise((resolve) => child.once('close', resolve));
        stopGroup(child, 'SIGINT');
        await closed;
        continue;
      }
      const result = await run(withConfig(command));
      expect(result.code, `${command}\n${result.stderr}`).toBe(0);
    }
  });

  it('the suspend block of docs/operating.md: suspended, shown, resumed', async () => {
    const commands = shellCommands(await docBlock('docs/operating.md', '`k8s-listener suspend`'));
    expect(commands.map((c) => c.split(' ')[5])).toEqual(['suspend', 'status', 'resume']);
    const [suspend = '', status = '', resume = ''] = commands;
    const suspended = await run(withConfig(suspend));
    expect(suspended.code, suspended.stderr).toBe(0);
    expect(suspended.stdout).toContain('suspended by');
    expect(suspended.stdout).toContain('the agent acknowledged it');
    const shown = await run(withConfig(status));
    expect(shown.code, shown.stderr).toBe(3);
    expect(shown.stdout).toMatch(/^State:\s+SUSPENDED/m);
    expect(shown.stdout).toContain('INC-42: tuning replicas by hand');
    const resumed = await run(withConfig(resume));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('resumed');
  });

  it("docs/architecture.md's render and emulator commands", async () => {
    const [render = ''] = shellCommands(await docBlock('docs/architecture.md', 'Render'));
    const rendered = await run(render);
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(rendered.stdout).toMatch(/^kind: Deployment$/m);

    const [emulator = ''] = shellCommands(await docBlock('docs/architecture.md', 'Control-plane emulator'));
    expect(emulator).toContain('--port 8080 --api-key secret');
    const port = await freePort();
    const child = start(emulator.replace('--port 8080', `--port ${port}`));
    try {
      const url = `http://127.0.0.1:${port}/v2/listeners`;
      const answered = await eventually('the emulator to answer', async () => {
        const response = await fetch(url, { headers: { 'X-Api-Key': 'secret' } }).catch(() => undefined);
        return response?.status;
      });
      expect(answered).toBe(200);
      expect((await fetch(url)).status).toBe(401);
    } finally {
      stopGroup(child);
    }
  });
});

describe('install commands of README.md and docs/installing.md, and the monitoring install of docs/operating.md', () => {
  const binDir = inject('clusterBinDir');
  const kubeconfigPath = inject('kubeconfigPath');
  const env = () => ({
    PATH: `${binDir}:${process.env.PATH ?? ''}`,
    KUBECONFIG: kubeconfigPath,
    API_KEY: 'docs-test-key',
    HELM_CACHE_HOME: join(tmpdir(), 'k8s-listener-docs-helm', 'cache'),
    HELM_CONFIG_HOME: join(tmpdir(), 'k8s-listener-docs-helm', 'config'),
    HELM_DATA_HOME: join(tmpdir(), 'k8s-listener-docs-helm', 'data'),
  });
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'prometheusrules.monitoring.coreos.com' },
    spec: {
      group: 'monitoring.coreos.com',
      scope: 'Namespaced',
      names: {
        kind: 'PrometheusRule',
        listKind: 'PrometheusRuleList',
        plural: 'prometheusrules',
        singular: 'prometheusrule',
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };

  // The example values' namespaces, as a newcomer's cluster has them: not there yet (a test of
  // the shared cluster, such as render/dry-run, may have made them for its own dry runs).
  beforeAll(async () => {
    await run('kubectl delete namespace apps apps-staging --ignore-not-found --wait=true', env());
  }, 120_000);

  afterAll(async () => {
    await run('helm uninstall k8s-listener -n k8s-listener --wait', env());
    await run(
      'kubectl delete namespace k8s-listener apps apps-staging --ignore-not-found --wait=false',
      env(),
    );
    await run(`kubectl delete crd ${crd.metadata.name} --ignore-not-found`, env());
  });

  it('install the chart with the example values: the agent Deployment, its Secret and the Roles exist', async () => {
    const readme = shellCommands(await docBlock('README.md', 'Install'));
    expect(shellCommands(await docBlock('docs/installing.md', 'With Helm'))).toEqual(readme);
    for (const command of readme) {
      const result = await run(command, env());
      expect(result.code, `${command}\n${result.stderr}`).toBe(0);
    }
    const deployment = JSON.parse(
      await kubectl(binDir, kubeconfigPath, [
        '-n',
        'k8s-listener',
        'get',
        'deployment',
        'k8s-listener',
        '-o',
        'json',
      ]),
    ) as { spec: { replicas: number } };
    expect(deployment.spec.replicas).toBe(2);
    const roles = await kubectl(binDir, kubeconfigPath, ['-n', 'apps', 'get', 'roles', '-o', 'name']);
    expect(roles).toMatch(/role\.rbac\.authorization\.k8s\.io\/k8s-listener/);
  });

  it('installs the alerts and the dashboard with the monitoring command (PrometheusRule CRD present)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-crd-'));
    await writeFile(join(dir, 'crd.json'), JSON.stringify(crd));
    await kubectl(binDir, kubeconfigPath, ['apply', '-f', join(dir, 'crd.json')]);
    await kubectl(binDir, kubeconfigPath, [
      'wait',
      '--for=condition=Established',
      `crd/${crd.metadata.name}`,
    ]);
    await rm(dir, { recursive: true, force: true });
    const [command = ''] = shellCommands(await docBlock('docs/operating.md', 'Metrics and probes'));
    expect(command).toMatch(/^helm upgrade --install k8s-listener /);
    const result = await run(command, env());
    expect(result.code, result.stderr).toBe(0);
    const rules = await kubectl(binDir, kubeconfigPath, [
      '-n',
      'k8s-listener',
      'get',
      'prometheusrules',
      '-o',
      'json',
    ]);
    expect(
      (JSON.parse(rules) as { items: { metadata: { labels: Record<string, string> } }[] }).items[0]?.metadata
        .labels.release,
    ).toBe('prometheus');
    const dashboards = await kubectl(binDir, kubeconfigPath, [
      '-n',
      'k8s-listener',
      'get',
      'configmaps',
      '-l',
      'grafana_dashboard=1',
      '-o',
      'name',
    ]);
    expect(dashboards.trim()).not.toBe('');
  });
});
