// A failing LangGraph server as its tenant sees it, through the official CLI, on the real node:
// `langgraph deploy` ends DEPLOY_FAILED and `langgraph deploy logs` shows the server's own words —
// the exception of a graph that fails at import, an OOMKill and the limit it hit, the pull error of
// a digest the registry does not have — and no secret: a server that prints one of its secret
// values and its DATABASE_URI at start has both masked in what the control plane holds. The
// failures are chosen by env in the one LangGraph image (test/cluster/node/langgraph/entrypoint.sh,
// counter.py), given as the CLI gives env: langgraph.json's `env`, sent as the deployment's secrets.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Agent } from '../../../src/manager/agent.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { startAgent, startWorld, type World } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { installLanggraphCli, langgraphShell, type Ran } from '../../support/langgraphCli.ts';
import {
  image,
  REAL_NODE_NAMESPACE_ANNOTATIONS,
  type RealNodeImages,
  realNodeFor,
  realNodeRender,
} from '../../support/realNodeSuite.ts';

const API_KEY = 'failure-evidence-test-key';
const SECRET = 'tenant-secret-5d1e9c0b7a';
const node = realNodeFor('node/failure-evidence');

describe.skipIf(!node)('a failing LangGraph server, as its tenant sees it through the LangGraph CLI', () => {
  const realNode = node as RealNodeImages;
  let bin: string;
  let world: World;
  let agent: Agent;
  let root: string;
  let ns: string;

  /** One CLI command in the directory of the deployment `name` (its langgraph.json). */
  const cliIn = (name: string) =>
    langgraphShell({
      bin: () => bin,
      dir: () => join(root, name),
      url: () => world.emulator.url,
      apiKey: API_KEY,
      vars: () => ({ LISTENER_ID: world.listenerId, NAMESPACE: ns }),
      timeoutMs: 280_000,
    });

  /** `langgraph deploy` of the node's LangGraph image (or `imageUri`) with `env`, to its end (or not: `wait`). */
  async function deploy(
    name: string,
    env: Record<string, string>,
    imageUri?: string,
    wait = true,
  ): Promise<Ran> {
    await mkdir(join(root, name), { recursive: true });
    await writeFile(
      join(root, name, 'langgraph.json'),
      JSON.stringify({ dependencies: ['.'], graphs: { counter: './counter.py:graph' }, env }),
    );
    return cliIn(name)(
      `langgraph deploy --image-uri ${imageUri ?? image(realNode, 'langgraph-server')} --listener-id "$LISTENER_ID" --k8s-namespace "$NAMESPACE" --name ${name} --no-input${wait ? '' : ' --no-wait'}`,
    );
  }

  /** Deletes a deployment through the CLI, so that its pods leave the node's cpu to the next. */
  async function remove(name: string): Promise<void> {
    const deleted = await cliIn(name)(`langgraph deploy delete ${idOf(name)} --force`);
    expect(deleted.code, deleted.stderr).toBe(0);
    await eventually(
      'its pods gone',
      async () =>
        (
          await world.kube.core.listNamespacedPod({
            namespace: ns,
            labelSelector: `${LABEL_DEPLOYMENT_ID}=${idOf(name) || 'gone'}`,
          })
        ).items.length === 0
          ? true
          : undefined,
      120_000,
    );
  }

  const idOf = (name: string) =>
    world.emulator.state().deployments.find((d) => d.deployment.name === name)?.deployment.id ?? '';
  /** What the control plane holds of the deployment's logs (the emulator's store). */
  const stored = (name: string) =>
    (world.emulator.state().deployments.find((d) => d.deployment.name === name)?.deploy_logs ?? [])
      .map((entry) => entry.message)
      .join('\n');
  const logs = (name: string) => cliIn(name)(`langgraph deploy logs --deployment-id ${idOf(name)} --limit 5`);

  beforeAll(async () => {
    bin = await installLanggraphCli();
    world = await startWorld(inject('kubeconfigPath'), {
      namespaces: 1,
      apiKey: API_KEY,
      namespaceAnnotations: REAL_NODE_NAMESPACE_ANNOTATIONS,
    });
    [ns = ''] = world.namespaces;
    const stores = realNodeRender(realNode);
    agent = await startAgent(world, {
      allowedNamespaces: world.namespaces,
      render: {
        ...stores,
        database: { ...stores.database, provision: 'always' },
        kvstore: { ...stores.kvstore, provision: 'always' },
      },
      // A crash loop fails the revision after this long (the CLI's wait ends there).
      reconcile: { failureGraceMs: 15_000 },
    });
    root = await mkdtemp(join(tmpdir(), 'k8s-listener-failure-evidence-'));
  }, 600_000);
  afterAll(async () => {
    await agent?.stop();
    await world?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('a server that prints a secret value and its DATABASE_URI at start: both masked in what the control plane holds', async () => {
    const deployed = await deploy('prints-secrets', {
      API_TOKEN: SECRET,
      TEST_PRINT_ENV: 'API_TOKEN DATABASE_URI',
      TEST_EXIT_CODE: '3',
    });
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}`).toBe(1);
    const id = idOf('prints-secrets');
    const secrets = await world.kube.core.listNamespacedSecret({
      namespace: ns,
      labelSelector: `${LABEL_DEPLOYMENT_ID}=${id}`,
    });
    const password = Buffer.from(
      secrets.items.find((s) => s.metadata?.name?.endsWith('-db-credentials'))?.data?.password ?? '',
      'base64',
    ).toString();
    expect(password.length).toBeGreaterThan(8);
    const held = stored('prints-secrets');
    expect(held).toContain('API_TOKEN=[secret]');
    expect(held).toMatch(/DATABASE_URI=postgresql:\/\/app:\[secret\]@\S+\/app/);
    expect(held).toContain('last exit: Error, exit code 3');
    for (const value of [SECRET, password, Buffer.from(SECRET).toString('base64')])
      expect(held).not.toContain(value);
    const shown = await logs('prints-secrets');
    expect(shown.stdout).toContain('API_TOKEN=[secret]');
    expect(shown.stdout).not.toContain(SECRET);
    expect(shown.stdout).not.toContain(password);
    await remove('prints-secrets');
  }, 300_000);

  it('a server that exceeds its memory limit: OOMKilled, and the limit it hit', async () => {
    const deployed = await deploy('out-of-memory', { TEST_ALLOCATE_MB: '2048' });
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}`).toBe(1);
    const shown = await logs('out-of-memory');
    expect(shown.stdout).toMatch(/container app: last exit: OOMKilled, exit code 137, memory limit \d+Mi/);
    await remove('out-of-memory');
  }, 300_000);
});
