// The agent itself on the real node, as a platform team runs it: the image built from the
// repository's Dockerfile (test/image/build.sh), pushed to the node's registry and pulled by
// digest, installed with the chart by `helm install`; in-cluster credentials from the kubelet,
// the control plane reached over the pod network. It becomes Ready, and a deployment created in
// the control plane runs on the same node, DEPLOYED.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { exposeToPods, NODE_GATEWAY, type PodRelay } from '../../cluster/realNodeLauncher.ts';
import { createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { app, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { buildImage, containerEnv } from '../../support/containerEngine.ts';
import { eventually } from '../../support/eventually.ts';
import {
  image,
  REAL_NODE_NAMESPACE_ANNOTATIONS,
  type RealNodeImages,
  realNodeFor,
  realNodeRender,
} from '../../support/realNodeSuite.ts';

const run = promisify(execFile);
const CHART = new URL('../../../charts/k8s-listener', import.meta.url).pathname;
const RELEASE = 'agent';
const API_KEY = 'chart-agent-api-key';

const node = realNodeFor('node/chart-agent');

describe.skipIf(!node)('the agent as the chart’s pod on a real node', () => {
  const realNode = node as RealNodeImages;
  let world: World;
  let relay: PodRelay;
  let work: string;
  let releaseNs: string;

  beforeAll(async () => {
    const kubeconfigPath = inject('kubeconfigPath');
    const binDir = inject('clusterBinDir');
    const built = await buildImage('bash test/image/build.sh');
    // Pushed as the registry stores it, and named by the digest it answers with.
    work = await mkdtemp(join(tmpdir(), 'k8s-listener-chart-agent-'));
    const digestFile = join(work, 'digest');
    await run(
      'buildah',
      [
        'push',
        '--quiet',
        '--tls-verify=false',
        '--digestfile',
        digestFile,
        built.tag,
        `docker://${realNode.registry}/k8s-listener:dev`,
      ],
      { env: containerEnv() },
    );
    const digest = (await readFile(digestFile, 'utf8')).trim();

    world = await startWorld(kubeconfigPath, {
      namespaces: 1,
      apiKey: API_KEY,
      namespaceAnnotations: REAL_NODE_NAMESPACE_ANNOTATIONS,
    });
    relay = await exposeToPods(Number(new URL(world.emulator.url).port));
    releaseNs = uniqueNamespace('chart-agent');
    await createNamespace(world.kube, releaseNs, REAL_NODE_NAMESPACE_ANNOTATIONS);
    const apiserverPort = Number(new URL(world.kube.config.getCurrentCluster()?.server ?? '').port);
    const valuesPath = join(work, 'values.yaml');
    await writeFile(
      valuesPath,
      stringify({
        listenerId: world.listenerId,
        controlPlane: { url: `http://${relay.address}`, apiKey: API_KEY },
        namespaces: [...world.namespaces],
        image: { registry: realNode.registry, repository: 'k8s-listener', digest },
        replicaCount: 1,
        config: { render: realNodeRender(realNode), reconcile: { pollIntervalMs: 1_000 } },
        // The chart's own fence, enforced on the node: DNS, the API server (its endpoint, the
        // relay on the bridge) and the control plane, nothing else.
        networkPolicy: {
          enabled: true,
          apiServer: { cidrs: [`${NODE_GATEWAY}/32`], ports: [443, apiserverPort] },
          controlPlane: { cidrs: [`${NODE_GATEWAY}/32`] },
        },
      }),
    );
    await run(
      join(binDir, 'helm'),
      [
        'install',
        RELEASE,
        CHART,
        '-n',
        releaseNs,
        '-f',
        valuesPath,
        '--kubeconfig',
        kubeconfigPath,
        '--wait',
        '--timeout',
        '5m',
      ],
      {
        env: {
          ...process.env,
          HELM_CACHE_HOME: join(work, 'helm-cache'),
          HELM_CONFIG_HOME: join(work, 'helm-config'),
          HELM_DATA_HOME: join(work, 'helm-data'),
        },
      },
    );
  }, 1_200_000);

  afterAll(async () => {
    if (releaseNs) await world?.kube.core.deleteNamespace({ name: releaseNs }).catch(() => undefined);
    await relay?.close();
    await world?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('runs Ready on the real node from the image pulled by digest, and rolls a deployment out there', async () => {
    const pods = await world.kube.core.listNamespacedPod({ namespace: releaseNs });
    const agent = pods.items.find((pod) => pod.metadata?.name?.startsWith(RELEASE));
    expect(agent?.spec?.nodeName).toBe('real-node');
    expect(agent?.spec?.containers[0]?.image).toMatch(/@sha256:[0-9a-f]{64}$/);
    expect(agent?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');

    const [ns = ''] = world.namespaces;
    const created = await world.client.createDeployment(
      app(world, 'from-chart', ns, { source_revision_config: { image_uri: image(realNode, 'probe-app') } }),
    );
    await waitForRevision(world, created, 'DEPLOYED', 180_000);
    const workload = await eventually('the deployment’s pod', async () => {
      const list = await world.kube.core.listNamespacedPod({ namespace: ns });
      return list.items.find((pod) => pod.status?.phase === 'Running');
    });
    expect(workload.spec?.nodeName).toBe('real-node');
  }, 300_000);
});
