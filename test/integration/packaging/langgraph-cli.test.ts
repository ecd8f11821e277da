// The real control plane's own client as a peer: the official LangGraph CLI (PyPI langgraph-cli,
// installed by test/langgraph/install.sh into a cached venv) runs the commands of the sections
// "Deploying with the LangGraph CLI" of docs/langgraph-cli.md and the README against the emulator,
// with the agent running on the test cluster. Its own waits must end where the agent's reports
// take them: DEPLOYED, or DEPLOY_FAILED with the reason.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Agent } from '../../../src/manager/agent.ts';
import { startAgent, startWorld, type World } from '../../support/agentHarness.ts';
import { docBlock, shellCommands } from '../../support/docBlocks.ts';
import { eventually } from '../../support/eventually.ts';
import { installLanggraphCli, langgraphShell } from '../../support/langgraphCli.ts';

const API_KEY = 'langgraph-cli-test-key';
const IMAGE = 'registry.example.test/agents/hello';
const THIRD_DIGEST = 'b408d2577c15445a4390f24bda860628b2b67a3de4b7430a7903a13467186e10';
/** The heading of both pages' sections whose block this test runs. */
const SECTION = 'Deploying with the LangGraph CLI';

let bin: string;
let world: World;
let agent: Agent;
let dir: string;
let ns: string;
let commands: string[];
let deploymentId = '';

/** One command of the page, as a user's shell runs it, with the CLI's environment. */
const cli = langgraphShell({
  bin: () => bin,
  dir: () => dir,
  url: () => world.emulator.url,
  apiKey: API_KEY,
  vars: () => ({ LISTENER_ID: world.listenerId, NAMESPACE: ns, DEPLOYMENT_ID: deploymentId }),
});

const workload = async (name: string) =>
  (await world.kube.apps.listNamespacedDeployment({ namespace: ns })).items.find(
    (d) => d.metadata?.name === name,
  );
const revisions = () =>
  world.emulator.state().deployments.find((d) => d.deployment.id === deploymentId)?.revisions ?? [];

beforeAll(async () => {
  bin = await installLanggraphCli();
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1, apiKey: API_KEY });
  [ns = ''] = world.namespaces;
  // The pull Secret `--image-pull-secret regcred` names is the platform's: the agent applies
  // nothing that names a Secret which does not exist.
  await world.kube.core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'regcred' },
      type: 'kubernetes.io/dockerconfigjson',
      stringData: { '.dockerconfigjson': '{"auths":{}}' },
    },
  });
  agent = await startAgent(world, { allowedNamespaces: world.namespaces });
  dir = await mkdtemp(join(tmpdir(), 'k8s-listener-langgraph-'));
  await writeFile(
    join(dir, 'langgraph.json'),
    JSON.stringify({ dependencies: ['.'], graphs: { agent: './agent.py:graph' } }),
  );
  commands = shellCommands(await docBlock('docs/langgraph-cli.md', SECTION));
  // The README's section holds the same commands.
  expect(shellCommands(await docBlock('README.md', SECTION))).toEqual(commands);
  expect(commands.map((c) => c.split(' ').slice(0, 3).join(' '))).toEqual([
    'langgraph deploy listeners',
    'langgraph deploy --image-uri',
    'langgraph deploy list',
    'langgraph deploy --deployment-id',
    'langgraph deploy revisions',
    'langgraph deploy logs',
    'langgraph deploy delete',
  ]);
}, 300_000);
afterAll(async () => {
  await agent?.stop();
  await world?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the LangGraph CLI against the emulator and the agent', () => {
  it('deploy listeners list: shows the listener and its namespace', async () => {
    const listed = await cli(commands[0] ?? '');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${world.listenerId}\\s+test-${ns}\\s+${ns}`));
  });

  it('deploy --image-uri … without --listener-id: refused, and the CLI gives its own hint from our detail', async () => {
    const refused = await cli(
      `langgraph deploy --image-uri ${IMAGE}@sha256:${THIRD_DIGEST} --name no-listener --no-input`,
    );
    // 2: click's exit code for a usage error, which the CLI raises on `listener_id' is required`.
    expect(refused.code, `${refused.stdout}\n${refused.stderr}`).toBe(2);
    expect(refused.stderr).toContain('This workspace deploys through a listener in your own cluster.');
    expect(refused.stderr).toContain('Re-run with --listener-id and --k8s-namespace.');
    expect(refused.stderr).toContain("'listener_id' is required");
    expect(world.emulator.state().deployments.map((d) => d.deployment.name)).not.toContain('no-listener');
  });

  it('deploy --image-uri … --listener-id … : created as external_docker, rolled out, and the CLI’s wait sees DEPLOYED', async () => {
    const created = await cli(commands[1] ?? '');
    expect(created.code, `${created.stdout}\n${created.stderr}`).toBe(0);
    expect(created.stdout).toContain('Deployment successful!');
    deploymentId = /Deployment ID: (\S+)/.exec(created.stdout)?.[1] ?? '';
    const stored = world.emulator
      .state()
      .deployments.find((d) => d.deployment.id === deploymentId)?.deployment;
    expect(stored?.source).toBe('external_docker');
    const hello = await workload('hello-agent');
    expect(hello?.spec?.template.spec?.containers[0]?.image).toMatch(/@sha256:1a1c0e81/);
    expect(hello?.spec?.template.spec?.imagePullSecrets).toEqual([{ name: 'regcred' }]);
  });

  it('deploy list: shows it', async () => {
    const listed = await cli(commands[2] ?? '');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${deploymentId}\\s+hello-agent`));
  });

  it('deploy --deployment-id … --image-uri <other>: a new revision, the new image rolled out, DEPLOYED', async () => {
    const updated = await cli(commands[3] ?? '');
    expect(updated.code, `${updated.stdout}\n${updated.stderr}`).toBe(0);
    expect(updated.stdout).toContain('Deployment successful!');
    expect((await workload('hello-agent'))?.spec?.template.spec?.containers[0]?.image).toMatch(
      /@sha256:842aaab4/,
    );
  });

  it('deploy revisions list: both revisions with their true statuses', async () => {
    const listed = await cli(commands[4] ?? '');
    expect(listed.code, listed.stderr).toBe(0);
    const [first, second] = revisions();
    expect(listed.stdout).toMatch(new RegExp(`${second?.id}\\s+DEPLOYED`));
    expect(listed.stdout).toMatch(new RegExp(`${first?.id}\\s+REPLACED`));
  });

  it('a revision that can never be scheduled: the CLI’s wait ends DEPLOY_FAILED, and deploy logs gives the agent’s reason', async () => {
    // Raised through the API: cpu no node has (source_config changes make no revision).
    await world.client.patchDeployment(deploymentId, {
      source_config: {
        resource_spec: { image_pull_secrets: [{ name: 'regcred' }], cpu: 1000, memory_mb: 64 },
      },
    });
    const failed = await cli(
      `langgraph deploy --deployment-id "$DEPLOYMENT_ID" --image-uri ${IMAGE}@sha256:${THIRD_DIGEST} --no-input`,
    );
    expect(failed.code, `${failed.stdout}\n${failed.stderr}`).toBe(1);
    expect(failed.stdout).toContain('Deployment failed');
    expect(revisions().at(-1)?.status).toBe('DEPLOY_FAILED');

    const logs = await cli(commands[5] ?? '');
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/\[ERROR\] DEPLOY_FAILED: pod \S+ is in Unschedulable for more than \d+ s/);
    // Under it, the scheduler's own words (the evidence the agent gathers for the tenant).
    expect(logs.stdout).toMatch(/^pod \S+: Unschedulable: 0\/\d+ nodes are available: .*Insufficient cpu/m);

    // --follow: the newest entry, then polls from its time (start_time) — printed once, no older one.
    const followed = await cli(
      'timeout -s INT 7 langgraph deploy logs --deployment-id "$DEPLOYMENT_ID" --level ERROR --limit 1 --follow',
    );
    expect(followed.stdout.match(/\[ERROR\] /g), followed.stdout).toHaveLength(1);
    expect(followed.stdout).toMatch(/DEPLOY_FAILED: pod \S+ is in Unschedulable/);
  });

  it('deploy delete --force: the agent removes its objects and reports it deleted', async () => {
    const deleted = await cli(commands[6] ?? '');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain(`Deleted deployment ${deploymentId}`);
    await eventually('the objects pruned', async () => ((await workload('hello-agent')) ? undefined : true));
    await eventually('the deployment removed from the control plane', async () =>
      world.emulator.state().deployments.some((d) => d.deployment.id === deploymentId) ? undefined : true,
    );
  });
});
