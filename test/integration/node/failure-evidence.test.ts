// A failing LangGraph server as its tenant sees it, through the official CLI, on the real node:
// `langgraph deploy` ends DEPLOY_FAILED and `langgraph deploy logs` shows the words of whoever saw
// it fail — the exception of a graph that fails at import and its failing readiness probe (and the
// operator's `status DEPLOYMENT`), an OOMKill and the limit it hit, the registry's words for a
// digest it does not have, the scheduler's for a revision no node can take — and no secret: a
// server that prints one of its secret values and its DATABASE_URI at start has both masked in
// what the control plane holds. The failures are chosen by env in the one LangGraph image
// (test/cluster/node/langgraph/entrypoint.sh, counter.py; LANGSERVE_GRAPHS), given as the CLI
// gives env: langgraph.json's `env`, sent as the deployment's secrets.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { stringify } from 'yaml';
import { runStatusCommand } from '../../../src/cli/status.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import type { RenderConfigInput } from '../../../src/render/index.ts';
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
import { textSink } from '../../support/textSink.ts';

const API_KEY = 'failure-evidence-test-key';
const SECRET = 'tenant-secret-5d1e9c0b7a';
/** A crash loop fails the revision after this long: within the kubelet's first back-off (10 s). */
const FAILURE_GRACE_MS = 8_000;
const node = realNodeFor('node/failure-evidence');

describe.skipIf(!node)('a failing LangGraph server, as its tenant sees it through the LangGraph CLI', () => {
  const realNode = node as RealNodeImages;
  let bin: string;
  let world: World;
  let agent: Agent;
  let root: string;
  let ns: string;
  /** The agent's render configuration, which `status` is given too. */
  let render: RenderConfigInput;

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
    // Deleted whatever the test's end, so that its pods leave the node's cpu to the next test.
    onTestFinished(() => remove(name));
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
  /** `k8s-listener status DEPLOYMENT`, as the operator runs it with a configuration file. */
  async function status(name: string): Promise<Ran> {
    const config = join(root, 'agent-config.yaml');
    await writeFile(
      config,
      stringify({
        listenerId: world.listenerId,
        controlPlane: { baseUrl: world.emulator.url, apiKey: API_KEY },
        kubeconfig: world.kubeconfigPath,
        namespaces: [ns],
        render,
        reconcile: { failureGraceMs: FAILURE_GRACE_MS },
      }),
    );
    const out = textSink();
    const err = textSink();
    const code = await runStatusCommand([name, '--config', config], {
      stdout: out.stream,
      stderr: err.stream,
    });
    return { code, stdout: out.text(), stderr: err.text() };
  }
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
    render = {
      ...stores,
      database: { ...stores.database, provision: 'always' },
      kvstore: { ...stores.kvstore, provision: 'always' },
      // A platform without a startup probe, its readiness probe every 2 s, whose liveness probe
      // restarts a server that does not answer within some 20 s: a server that never answers
      // fails its readiness probe (behind a startup probe, the kubelet runs that one first and
      // tells its failure instead), and one that hangs is restarted into a back-off in a test's
      // time (the defaults give a first start five minutes).
      app: {
        // No run grace: a hung server the liveness probe restarts is killed within 30 s (with
        // the default 180 s, a hang held a restart minutes and the CLI's wait ran out).
        runGraceSeconds: 0,
        startupProbe: null,
        readinessProbe: { httpGet: { path: '/ok', port: 'http' }, periodSeconds: 2, timeoutSeconds: 1 },
        livenessProbe: {
          httpGet: { path: '/ok', port: 'http' },
          initialDelaySeconds: 10,
          periodSeconds: 5,
          timeoutSeconds: 1,
          failureThreshold: 2,
        },
      },
    };
    agent = await startAgent(world, {
      allowedNamespaces: world.namespaces,
      render,
      reconcile: { failureGraceMs: FAILURE_GRACE_MS },
    });
    root = await mkdtemp(join(tmpdir(), 'k8s-listener-failure-evidence-'));
  }, 600_000);
  afterAll(async () => {
    await agent?.stop();
    await world?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  // The graph's module imports what the image does not have: langgraph-api 0.11.1 logs the
  // traceback and exits 3 ("Application startup failed") — or, some starts, hangs there until
  // the liveness probe restarts it — and its restarts become a back-off.
  // LANGSERVE_GRAPHS (what `langgraph build` makes of langgraph.json's `graphs`) names a module
  // not in the image; the image's own switch (TEST_FAIL_AT_IMPORT) raises its value, which, sent
  // as a secret, is masked in the evidence.
  it('a graph that fails at import: DEPLOY_FAILED; deploy logs shows the exception’s last line and the failing readiness probe', async () => {
    const deployed = await deploy('import-fails', {
      LANGSERVE_GRAPHS: JSON.stringify({ counter: 'my_agent.graph:graph' }),
    });
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}\n${stored('import-fails')}`).toBe(1);
    const shown = await logs('import-fails');
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout, stored('import-fails')).toMatch(
      /\[ERROR\] DEPLOY_FAILED: pod \S+ \(container app\) is in CrashLoopBackOff/,
    );
    // The exception's last line, from the log of the previous instance: one that exited logged
    // `…GraphLoadError: Failed to load graph 'counter' from my_agent.graph: No module named …`,
    // one that hung `ModuleNotFoundError("No module named 'my_agent'")`.
    expect(shown.stdout).toMatch(/^ {2}\| .*No module named 'my_agent'/m);
    // The kubelet's own words of the probe that never passed.
    expect(shown.stdout).toMatch(/event Unhealthy: Readiness probe failed: .*connect: connection refused/);
    // The operator's view: `status DEPLOYMENT` lists the RolloutFailed Event, under the failure's
    // message as much evidence as an Event's 1 KiB holds (the log's lines go first: the operator
    // has `kubectl logs --previous`), the last exit and the probe's words among it.
    const operator = await status('import-fails');
    // 1: a deployment DEPLOY_FAILED.
    expect(operator.code, operator.stderr).toBe(1);
    expect(operator.stdout).toMatch(
      /Warning +RolloutFailed +Deployment\/import-fails +revision .*last exit: Error, exit code 3;.*event Unhealthy: Readiness probe failed: /,
    );
  }, 300_000);

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
  }, 300_000);

  it('a server that exceeds its memory limit: OOMKilled, and the limit it hit', async () => {
    const deployed = await deploy('out-of-memory', { TEST_ALLOCATE_MB: '2048' });
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}`).toBe(1);
    const shown = await logs('out-of-memory');
    expect(shown.stdout).toMatch(/container app: last exit: OOMKilled, exit code 137, memory limit \d+Mi/);
  }, 300_000);

  it('a digest the registry does not have: DEPLOY_FAILED, and the pull error in the registry’s words', async () => {
    const missing = `${realNode.registry}/k8s-listener-test/langgraph-server@sha256:${'0'.repeat(64)}`;
    const deployed = await deploy('no-such-digest', {}, missing);
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}\n${stored('no-such-digest')}`).toBe(1);
    const shown = await logs('no-such-digest');
    expect(shown.stdout, stored('no-such-digest')).toMatch(
      /\[ERROR\] DEPLOY_FAILED: pod \S+ \(container \S+\) is in (ImagePullBackOff|ErrImagePull)/,
    );
    // The registry's words end a line cut in its middle; the kubelet's bare `Error: ErrImagePull`
    // Events, which would crowd them out of the latest three, are left out.
    expect(shown.stdout).toMatch(/^pod \S+ event Failed: Failed to pull image "[^\n]*: not found$/m);
    expect(shown.stdout).not.toMatch(/event Failed: Error: /);
  }, 300_000);

  it('a revision no node can take: DEPLOY_FAILED, and the scheduler’s message', async () => {
    const deployed = await deploy('too-big', {});
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}\n${stored('too-big')}`).toBe(0);
    // More cpu than the node has, through the API (the CLI sends no resources); the next revision
    // is rendered with it.
    await world.client.patchDeployment(idOf('too-big'), {
      source_config: { resource_spec: { cpu: 1000, memory_mb: 512 } },
    });
    const failed = await cliIn('too-big')(
      `langgraph deploy --deployment-id ${idOf('too-big')} --image-uri ${image(realNode, 'langgraph-server-2')} --no-input`,
    );
    expect(failed.code, `${failed.stdout}\n${failed.stderr}\n${stored('too-big')}`).toBe(1);
    const shown = await logs('too-big');
    expect(shown.stdout, stored('too-big')).toMatch(/\[ERROR\] DEPLOY_FAILED: pod \S+ is in Unschedulable/);
    expect(shown.stdout).toMatch(/^pod \S+: Unschedulable: 0\/\d+ nodes are available: .*Insufficient cpu/m);
  }, 300_000);
});
