// `npm run demo`: the agent end to end on the embedded default. A local Kubernetes control plane,
// the control-plane emulator seeded with a listener and three deployments plus one deliberately
// invalid deployment, and the agent itself, with a live table of the rollouts. Where the machine
// can run one (test/cluster/realNodeLauncher.ts), a real node joins, and the deployments of the first
// namespace run there and answer — chat-api is a real LangGraph server with its PostgreSQL and
// Redis, and the demo prints the `langgraph deploy` of another, and a `curl` that runs each one's
// graph; the rest run on kwok nodes, where nothing runs. Runs until Ctrl-C;
// `--exit-when-converged` prints plain lines and exits 0 once every valid deployment is DEPLOYED
// and the invalid one is reported DEPLOY_FAILED (1 on timeout).
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { stringify } from 'yaml';
import { createLogger } from '../../src/cli/logger.ts';
import { startProbeServer } from '../../src/cli/probeServer.ts';
import { collectStatusRows, type StatusSources } from '../../src/cli/statusObserver.ts';
import { loadAgentConfig } from '../../src/config/agentConfig.ts';
import { ControlPlaneClient } from '../../src/controlplane/client.ts';
import { startEmulator } from '../../src/emulator/server.ts';
import { EmulatorState } from '../../src/emulator/state.ts';
import { KubeClient } from '../../src/kube/kubeClient.ts';
import { Agent } from '../../src/manager/agent.ts';
import { loadDigestKey } from '../../src/manager/digestKey.ts';
import { LABEL_COMPONENT, LABEL_DEPLOYMENT_ID } from '../../src/objects/ownership.ts';
import {
  formatReplicas,
  formatStatusTable,
  type StatusRow,
  shortId,
} from '../../src/report/deploymentStatusRow.ts';
import { createMetrics } from '../../src/report/metrics.ts';
import { adminKube } from '../support/adminKube.ts';
import { LANGGRAPH_DEPLOYMENT, seedForRealNode } from './demoSeed.ts';
import {
  ClusterStartError,
  ensureClusterBinaries,
  ensureNodeBinaries,
  startLocalCluster,
} from './localCluster.ts';
import {
  image,
  REAL_NODE_NAMESPACE_ANNOTATIONS,
  realNodeMissing,
  realNodeRender,
} from './realNodeLauncher.ts';

const { values } = parseArgs({
  options: {
    'exit-when-converged': { type: 'boolean', default: false },
    /** Seconds to wait for convergence with --exit-when-converged. */
    timeout: { type: 'string', default: '300' },
    'log-level': { type: 'string', default: 'info' },
  },
});
const ciMode = values['exit-when-converged'];
// In place only on a terminal, and not in the CI form: plain lines there.
const live = process.stdout.isTTY === true && !ciMode;
const timeoutMs = Number(values.timeout) * 1000;
if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new Error('--timeout must be a number of seconds');

const say = (line: string) => process.stdout.write(`[demo] ${line}\n`);

/**
 * The Secrets the seed's deployments reference (in their namespaces), and `regcred`, the pull
 * Secret of docs/langgraph-cli.md's commands, in the namespace the demo prints for them. The
 * values are placeholders (the node's registry asks for no credentials).
 */
function platformSecrets(cliNamespace: string) {
  const pull = {
    type: 'kubernetes.io/dockerconfigjson',
    stringData: { '.dockerconfigjson': '{"auths":{}}' },
  };
  return [
    { namespace: 'apps', metadata: { name: 'mail' }, stringData: { password: 'demo' } },
    { namespace: 'apps-staging', metadata: { name: 'search' }, stringData: { token: 'demo' } },
    { namespace: 'apps-staging', metadata: { name: 'agent-certs' }, stringData: { 'tls.crt': '' } },
    { namespace: 'apps-staging', metadata: { name: 'registry-credentials' }, ...pull },
    { namespace: cliNamespace, metadata: { name: 'regcred' }, ...pull },
  ];
}

const seedPath = new URL('../../src/emulator/fixtures/seed.json', import.meta.url).pathname;
const seed = EmulatorState.parse(JSON.parse(await readFile(seedPath, 'utf8')));
const listener = seed.listeners[0];
if (!listener) throw new Error('the seed has no listener');
const namespaces = listener.compute_config?.k8s_namespaces ?? [];
const invalidNamespace = namespaces.at(-1) ?? 'default';

/** What makes the invalid deployment invalid: a cpu limit below its request, a common slip. */
const INVALID_DEPLOYMENT = {
  name: 'broken-limits',
  source: 'external_container',
  source_config: {
    listener_id: listener.id,
    listener_config: { k8s_namespace: invalidNamespace },
    deployment_type: 'dev',
    resource_spec: { min_scale: 1, max_scale: 1, cpu: 1, cpu_limit: 0.25, memory_mb: 128 },
  },
  source_revision_config: { image_uri: 'nginx:1.27' },
} as const;

/** A listener of LangGraph servers' render: their PostgreSQL and Redis provisioned for every deployment. */
function storesForEvery(render: ReturnType<typeof realNodeRender>) {
  return {
    ...render,
    database: { ...render.database, provision: 'always' },
    kvstore: { ...render.kvstore, provision: 'always' },
  } as const;
}

/** The input of a run of the LangGraph server's graph (test/cluster/node/langgraph): it counts. */
const RUN_BODY = JSON.stringify({ assistant_id: 'counter', input: {} });

const dir = await mkdtemp(join(tmpdir(), 'k8s-listener-demo-'));
const logPath = join(dir, 'agent.log');
const configPath = join(dir, 'config.yaml');
let keepDir = false;
// Whatever ends the process (Ctrl-C, SIGTERM, convergence, a failure): the cursor comes back and the
// demo's files go; the local cluster's own exit hook stops its processes and removes its files.
process.once('exit', () => {
  if (live) process.stdout.write('\x1b[?25h');
  if (!keepDir) rmSync(dir, { recursive: true, force: true });
});
const onSignal = (signal: NodeJS.Signals) => {
  if (live) process.stdout.write('\n');
  say(`${signal}: stopping the agent, the emulator and the cluster`);
  process.exit(0);
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
// The terminal closed: the same teardown.
process.once('SIGHUP', onSignal);

say('building or reusing the Kubernetes binaries (the first build takes several minutes)');
const binDir = await ensureClusterBinaries();
const nodeRefusal =
  process.env.K8S_LISTENER_REAL_NODE === '0' ? 'K8S_LISTENER_REAL_NODE=0' : await realNodeMissing();
if (!nodeRefusal)
  say('building or reusing the real node (kubelet, containerd, runc, CNI plugins, CoreDNS, registry)');
const realNodeBinDir = nodeRefusal ? undefined : await ensureNodeBinaries();
const cluster = await startLocalCluster({ binDir, realNodeBinDir, log: say }).catch(
  async (error: unknown) => {
    // Its ports are chosen free, then bound by other processes a moment later: another program
    // (another demo, a test suite) can take one in between. One more try with fresh ports.
    if (!(error instanceof ClusterStartError)) throw error;
    say(`the local cluster did not start (${error.message.split('\n')[0]}); trying once more`);
    return startLocalCluster({ binDir, realNodeBinDir, log: say });
  },
);
const node = cluster.realNode;
// The first namespace only: the seed's apps-staging deployment asks for more CPU than one
// machine's node has, and the invalid deployment never gets as far as a pod.
const realNamespace = node ? namespaces[0] : undefined;
if (node && realNamespace) {
  const others = namespaces.filter((name) => name !== realNamespace);
  say(
    `real node: the deployments in ${realNamespace} run on it: ${LANGGRAPH_DEPLOYMENT} the node registry's LangGraph server with its PostgreSQL and Redis, the others its probe app; ${others.join(', ')} on kwok nodes, where nothing runs`,
  );
} else {
  say(
    `real node: none (${nodeRefusal ?? cluster.realNodeMissing}); the deployments run on kwok nodes, where nothing runs`,
  );
}
const emulator = await startEmulator({
  port: 0,
  seed: node
    ? seedForRealNode(seed, {
        probeApp: image(node, 'probe-app'),
        langgraphServer: image(node, 'langgraph-server'),
      })
    : seed,
});
let agent: Agent | undefined;
let probes: Awaited<ReturnType<typeof startProbeServer>> | undefined;

/** On a failure: where the agent's log is kept, and its last lines (a CI log is all one may see). */
async function sayLogTail(): Promise<void> {
  keepDir = true;
  say(`agent log kept: ${logPath}; its last lines:`);
  const text = await readFile(logPath, 'utf8').catch(() => '');
  for (const line of text.trimEnd().split('\n').slice(-30)) if (line) say(`  ${line}`);
}

async function stopAll(): Promise<void> {
  await agent?.stop();
  await probes?.close();
  await emulator.close();
  await cluster.stop();
}

try {
  // The invalid deployment goes in through the control plane's API, as a user would create it.
  const created = await fetch(`${emulator.url}/v2/deployments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(INVALID_DEPLOYMENT),
  });
  if (created.status !== 201) throw new Error(`creating ${INVALID_DEPLOYMENT.name}: HTTP ${created.status}`);
  const invalidId = ((await created.json()) as { id: string }).id;

  // What a platform team prepares before installing the agent: its namespaces, the service
  // account one seeded deployment names, and the Secrets and ConfigMap they name (the agent
  // applies nothing that names one which does not exist).
  const kube = adminKube(cluster.kubeconfigPath);
  for (const name of namespaces) {
    const annotations = name === realNamespace ? { annotations: { ...REAL_NODE_NAMESPACE_ANNOTATIONS } } : {};
    await kube.core.createNamespace({ body: { metadata: { name, ...annotations } } });
    await kube.core.createNamespacedServiceAccount({
      namespace: name,
      body: { metadata: { name: 'agent-platform' } },
    });
  }
  for (const { namespace, ...body } of platformSecrets(namespaces[0] ?? 'default'))
    await kube.core.createNamespacedSecret({ namespace, body });
  await kube.core.createNamespacedConfigMap({
    namespace: 'apps-staging',
    body: { metadata: { name: 'agent-settings' }, data: { 'settings.yaml': 'mode: demo\n' } },
  });

  // One configuration file for the agent here and for the commands printed below.
  await writeFile(
    configPath,
    stringify({
      listenerId: listener.id,
      controlPlane: { baseUrl: emulator.url },
      kubeconfig: cluster.kubeconfigPath,
      agentNamespace: 'default',
      namespaces,
      identity: 'demo-agent',
      probes: { host: '127.0.0.1', port: 0 },
      log: { level: values['log-level'] },
      reconcile: { pollIntervalMs: 2_000, rolloutRecheckMs: 1_000 },
      // agent-platform runs as the ServiceAccount made for it above; on the real node, the
      // database and Redis run from its registry's images, as those images' own users, and every
      // deployment gets both (a LangGraph server does not start without them, and the CLI asks
      // for none: docs/langgraph-cli.md).
      render: {
        policy: { serviceAccounts: ['agent-*'] },
        ...(node ? storesForEvery(realNodeRender(node)) : {}),
      },
    }),
  );
  const config = await loadAgentConfig({ file: configPath, env: {} });
  const logger = createLogger(config.log.level, pino.destination({ dest: logPath, sync: true }));
  const metrics = createMetrics();
  agent = new Agent({
    listenerId: config.listenerId,
    controlPlane: { baseUrl: config.controlPlane.baseUrl, timeoutMs: config.controlPlane.timeoutMs },
    kubeconfigPath: config.kubeconfig,
    allowedNamespaces: config.namespaces,
    identity: config.identity,
    agentNamespace: config.agentNamespace,
    render: config.render,
    reconcile: config.reconcile,
    metrics,
    logger,
  });
  const running = agent;
  probes = await startProbeServer({
    host: config.probes.host,
    port: config.probes.port,
    registry: metrics.registry,
    isLive: () => running.isLive(),
    isReady: () => running.isReady(),
    logger,
  });
  await agent.start();

  const command = (name: string) => `npm run --silent agent -- ${name} --config ${configPath}`;
  say(`control-plane emulator: ${emulator.url}   (try: curl ${emulator.url}/v2/deployments)`);
  say(`agent metrics:          ${probes.url}/metrics`);
  say(`agent log:              ${logPath}`);
  say(`cluster:                export KUBECONFIG=${cluster.kubeconfigPath}`);
  say(
    `kubectl:                ${binDir}/kubectl get deploy,sts,svc -A -l k8s-listener.io/listener-id=${listener.id}`,
  );
  say(`invalid on purpose:     ${INVALID_DEPLOYMENT.name} (cpu limit below its request)`);
  say('try, while the demo runs (from this directory):');
  for (const name of ['status', 'diff', 'check']) say(`  ${command(name)}`);
  // The real control plane's own client (docs/langgraph-cli.md); the emulator takes any API key.
  // Without LANGGRAPH_CLI_NO_ANALYTICS=1 each `deploy` command posts to the CLI's analytics host,
  // with no timeout, and waits for that post before it exits: offline, it can hang there.
  say('deploy with the LangGraph CLI (docs/langgraph-cli.md), in a directory with a langgraph.json:');
  say(
    `  export LANGGRAPH_HOST_URL=${emulator.url} LANGGRAPH_HOST_API_KEY=demo LANGGRAPH_CLI_NO_ANALYTICS=1 LISTENER_ID=${listener.id} NAMESPACE=${namespaces[0] ?? ''}`,
  );
  if (node) {
    // The project of the node's LangGraph server, whose image holds its graph: the CLI reads the
    // directory's langgraph.json even when it deploys an image.
    const project = join(dir, 'my-agent');
    await mkdir(project);
    await writeFile(
      join(project, 'langgraph.json'),
      `${JSON.stringify({ dependencies: ['.'], graphs: { counter: './counter.py:graph' } }, null, 2)}\n`,
    );
    say(
      `  cd ${project} && langgraph deploy --image-uri ${image(node, 'langgraph-server')} --listener-id "$LISTENER_ID" --k8s-namespace "$NAMESPACE" --name my-agent --no-input`,
    );
    say('  (it runs on the real node; once DEPLOYED, the demo prints a curl that runs its graph)');
  }
  // The environment wins over a configuration file: say so when this shell would redirect them.
  const overriding = Object.keys(process.env).filter((name) => name.startsWith('K8S_LISTENER_'));
  if (overriding.length > 0)
    say(`  (unset ${overriding.join(', ')} first: the environment overrides --config)`);
  say(ciMode ? 'waiting for convergence' : 'Ctrl-C stops the agent, the emulator and the cluster');

  // The table is what `k8s-listener status` shows, read the same way (control plane and cluster).
  const silent = pino({ level: 'silent' });
  const client = new ControlPlaneClient({ baseUrl: emulator.url, logger: silent });
  const kubeClient = await KubeClient.fromKubeconfig(cluster.kubeconfigPath, { logger: silent });
  let digestKey: Uint8Array | undefined;
  const sources: StatusSources = {
    controlPlane: client,
    kube: kubeClient,
    listenerId: config.listenerId,
    allowedNamespaces: config.namespaces,
    agentNamespace: config.agentNamespace,
    renderConfig: config.render,
    failureGraceMs: config.reconcile.failureGraceMs,
  };
  const finish = async (code: number): Promise<never> => {
    await client.close();
    await kubeClient.close();
    await stopAll();
    process.exit(code);
  };
  const settled = (row: StatusRow): boolean =>
    row.id === invalidId
      ? row.revisionStatus === 'DEPLOY_FAILED' && row.state === 'DEPLOY_FAILED'
      : row.revisionStatus === 'DEPLOYED' && row.state === 'DEPLOYED';
  const deadline = Date.now() + timeoutMs;
  const printed = new Map<string, string>();
  /** Per deployment on the real node, once DEPLOYED: the command that shows it answering. */
  const serving = new Map<string, string>();
  const servingCommand = async (row: StatusRow): Promise<string | undefined> => {
    const services = await kube.core.listNamespacedService({
      namespace: row.namespace ?? '',
      labelSelector: `${LABEL_DEPLOYMENT_ID}=${row.id}`,
    });
    const component = (name: string) =>
      services.items.find((service) => service.metadata?.labels?.[LABEL_COMPONENT] === name);
    const ip = component('main')?.spec?.clusterIP;
    if (!ip) return undefined;
    // Printed once the Service answers: DEPLOYED (the pods ready) can come before the node's
    // proxy routes the Service to them, and a printed command must work when it is run.
    const answers = await fetch(`http://${ip}/ok`, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (!answers) return undefined;
    // A LangGraph server (it answers /info; the probe app does not): a run of its graph, answered
    // with the run's result.
    const langgraph = await fetch(`http://${ip}/info`, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (langgraph)
      return `curl -s http://${ip}/runs/wait -H 'content-type: application/json' -d '${RUN_BODY}'`;
    // With a database, the probe app's /stores opens the stores with the rendered credentials.
    return `curl -s http://${ip}${component('database') ? '/stores' : '/ok'}`;
  };
  let drawnLines = 0;
  if (live) process.stdout.write('\x1b[?25l');
  for (;;) {
    let rows: StatusRow[] = [];
    try {
      // The agent's leader makes the digest key as it starts: read it once it is there, so the
      // table compares the agent's own digests.
      digestKey ??= await loadDigestKey(kubeClient, config.agentNamespace, { create: false });
      rows = await collectStatusRows({ ...sources, digestKey });
    } catch (error) {
      // A slow answer while the cluster is busy is not the end of the demo; the next round retries.
      if (!live)
        say(`reading the status failed, retrying: ${error instanceof Error ? error.message : String(error)}`);
    }
    for (const row of rows) {
      if (
        !realNamespace ||
        row.namespace !== realNamespace ||
        row.state !== 'DEPLOYED' ||
        serving.has(row.id)
      )
        continue;
      const command = await servingCommand(row).catch(() => undefined);
      if (!command) continue;
      serving.set(row.id, `${row.name}: ${command}`);
      if (!live) say(`serving on the real node: ${row.name}: ${command}`);
    }
    if (live && rows.length > 0) {
      const now = new Date();
      const answering = [...serving.values()].map((line) => `serving on the real node: ${line}`);
      const text = `\n${now.toISOString().slice(11, 19)}  listener ${listener.id}\n${formatStatusTable(rows, now.getTime())}${answering.map((line) => `\n${line}`).join('')}`;
      // A wrapped line would take two rows and throw the redraw off: cut each to the width.
      const width = Math.max(20, (process.stdout.columns || 120) - 1);
      const table = text
        .split('\n')
        .map((line) => (line.length > width ? `${line.slice(0, width - 1)}…` : line))
        .join('\n');
      // Back to the table's first line, clear to the end of the screen, draw it again.
      process.stdout.write(`${drawnLines > 0 ? `\x1b[${drawnLines}F\x1b[J` : ''}${table}`);
      drawnLines = table.split('\n').length - 1;
    } else if (!live) {
      for (const row of rows) {
        const revision = row.revisionId ? shortId(row.revisionId) : '-';
        const line = `${row.name} (${row.namespace ?? '-'}): revision ${revision}, ${row.state}, replicas ${formatReplicas(row.workloads)}: ${row.message}`;
        if (printed.get(row.id) !== line) say(line);
        printed.set(row.id, line);
      }
    }
    if (ciMode && rows.length > 0 && rows.every(settled)) {
      say(`converged: every valid deployment is DEPLOYED, ${INVALID_DEPLOYMENT.name} is DEPLOY_FAILED`);
      await finish(0);
    }
    if (ciMode && Date.now() > deadline) {
      const pending = rows
        .filter((row) => !settled(row))
        .map((row) => `${row.name} ${row.state} (reported: ${row.revisionStatus ?? 'nothing'})`);
      say(`not converged after ${values.timeout} s: ${pending.join(', ') || 'no status read'}`);
      await sayLogTail();
      await finish(1);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
} catch (error) {
  say(`failed: ${error instanceof Error ? error.message : String(error)}`);
  await sayLogTail();
  await stopAll().catch(() => undefined);
  process.exit(1);
}
