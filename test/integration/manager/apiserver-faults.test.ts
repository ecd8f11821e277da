// Faults of the Kubernetes control plane itself, on a cluster of the test's own (the shared one
// must not go down under other tests): the API server killed mid-sync and started again, and
// etcd compacted under the agent's watches so that the restarted API server answers 410 Gone.
// Each time the agent recovers and converges: every object once, no orphan, hand edits repaired.
import pino from 'pino';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { LABEL_COMPONENT, LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../../../src/objects/ownership.ts';
import { OBSERVED_KINDS, watchedKinds } from '../../../src/reconcile/policy/watchedKinds.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { type LocalCluster, startLocalCluster } from '../../cluster/localCluster.ts';
import { app, startAgent, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

let cluster: LocalCluster;
let world: World;
let agent: Agent;
let ns: string;
const logLines: string[] = [];

beforeAll(async () => {
  cluster = await startLocalCluster({ binDir: inject('clusterBinDir') });
  world = await startWorld(cluster.kubeconfigPath, { namespaces: 1 });
  ns = world.namespaces[0] ?? '';
  const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
  agent = await startAgent(world, { logger });
}, 180_000);
afterAll(async () => {
  await agent?.stop();
  await world?.close().catch(() => undefined);
  await cluster?.stop();
}, 60_000);

interface Entry {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
}

/** Every object of this listener in the namespace, against every inventory: each once, none extra. */
async function expectExactlyTheInventories(deployments: readonly Deployment[]): Promise<void> {
  const maps = await world.kube.core.listNamespacedConfigMap({
    namespace: ns,
    labelSelector: `${LABEL_LISTENER_ID}=${world.listenerId},${LABEL_COMPONENT}=inventory`,
  });
  const owners = maps.items.map((m) => m.metadata?.labels?.[LABEL_DEPLOYMENT_ID]).sort();
  expect(owners).toEqual(deployments.map((d) => d.id).sort());
  const recorded: Entry[] = maps.items.flatMap(
    (m) => (JSON.parse(m.data?.inventory ?? '{}') as { entries: Entry[] }).entries,
  );
  const kinds = new Map(recorded.map((e) => [`${e.apiVersion}/${e.kind}`, e]));
  const live: string[] = [];
  for (const { apiVersion, kind } of kinds.values()) {
    const list = await world.kube.objects.list(
      apiVersion,
      kind,
      ns,
      undefined,
      undefined,
      undefined,
      undefined,
      `${LABEL_LISTENER_ID}=${world.listenerId}`,
    );
    for (const item of list.items) {
      if (item.metadata?.labels?.[LABEL_COMPONENT] === 'inventory') continue;
      live.push(`${kind}/${item.metadata?.name}`);
    }
  }
  expect(live.sort()).toEqual(recorded.map((e) => `${e.kind}/${e.name}`).sort());
}

async function serviceRestoredAfterDeletion(name: string): Promise<void> {
  const before = await world.kube.core.readNamespacedService({ name, namespace: ns });
  await world.kube.core.deleteNamespacedService({ name, namespace: ns });
  // Well within the resync interval (60 s): only a working watch brings it back this fast.
  await eventually(
    `Service ${name} recreated`,
    async () => {
      const after = await world.kube.core
        .readNamespacedService({ name, namespace: ns })
        .catch(() => undefined);
      return after && after.metadata?.uid !== before.metadata?.uid ? true : undefined;
    },
    20_000,
  );
}

describe('the API server stopped mid-sync', () => {
  it('recovers its requests and watches, converges, and leaves no duplicate and no orphan', async () => {
    const deployments: Deployment[] = [];
    for (let i = 0; i < 6; i++)
      deployments.push(await world.client.createDeployment(app(world, `svc-${i}`, ns)));
    const first = deployments[0] as Deployment;
    // Mid-sync: the first objects are there, not all revisions are DEPLOYED.
    await eventually('the first object applied', async () => {
      const list = await world.kube.apps.listNamespacedDeployment({
        namespace: ns,
        labelSelector: `${LABEL_DEPLOYMENT_ID}=${first.id}`,
      });
      return list.items.length > 0 ? true : undefined;
    });
    const linesBefore = logLines.length;
    await cluster.stopApiServer();
    // A change made while the API server is away is applied once it is back.
    const patched = await world.client.patchDeployment(first.id, {
      source_revision_config: { image_uri: 'nginx:1.28' },
    });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await cluster.startApiServer();

    for (const deployment of deployments.slice(1))
      await waitForRevision(world, deployment, 'DEPLOYED', 120_000);
    await waitForRevision(world, patched, 'DEPLOYED', 120_000);
    const web = await world.kube.apps.readNamespacedDeployment({ name: 'svc-0', namespace: ns });
    expect(web.spec?.template.spec?.containers[0]?.image).toBe('nginx:1.28');
    await expectExactlyTheInventories(deployments);
    // The outage was seen: the watches broke, and came back (the restored Service below).
    const during = logLines.slice(linesBefore).map((line) => JSON.parse(line) as { msg?: string });
    expect(during.filter((l) => l.msg?.startsWith('watch')).length).toBeGreaterThan(0);
    await serviceRestoredAfterDeletion('svc-1');
  }, 240_000);
});

/**
 * Kinds the agent watches in this test (the default render configuration: no ingress class, so no
 * Ingress), and the pods of its workloads. Taken from the agent's own list, so that a kind it
 * starts to watch is counted here too.
 */
const WATCHED: readonly string[] = [...OBSERVED_KINDS, ...watchedKinds(RenderConfig.parse({}))];

/** LIST requests the agent made of one kind so far. */
function listsOf(kind: string): number {
  return agent.kube?.requestCounts({ kind }).list ?? 0;
}

/** etcd's v3 JSON gateway: a POST whose int64 fields come back as strings. */
async function etcd(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${cluster.etcdUrl}${path}`, { method: 'POST', body: JSON.stringify(body) });
  return { status: response.status, ...((await response.json()) as Record<string, unknown>) };
}

describe('etcd compacted under the running watches', () => {
  it('meets 410 Gone from the real API server, re-lists, and keeps converging', async () => {
    const deployments = (await world.client.listAllDeployments({ remote_reconciled: true })).items;
    // Writes the agent does not watch move etcd's revision past the agent's resume point.
    for (let i = 0; i < 20; i++)
      await world.kube.core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: `unwatched-${i}` }, data: { i: String(i) } },
      });
    const linesBefore = logLines.length;
    const listsBefore = new Map(WATCHED.map((k) => [k, listsOf(k)]));
    await cluster.stopApiServer();
    const key = Buffer.from('/registry/').toString('base64');
    const head = await etcd('/v3/kv/range', { key, keys_only: true, limit: 1 });
    const revision = Number((head.header as { revision: string }).revision);
    expect(revision).toBeGreaterThan(20);
    const compacted = await etcd('/v3/kv/compaction', { revision, physical: true });
    expect(compacted.status).toBe(200);
    // etcd itself now refuses every older revision.
    const old = await etcd('/v3/kv/range', { key, keys_only: true, limit: 1, revision: revision - 1 });
    expect(JSON.stringify(old)).toContain('compacted');
    await cluster.startApiServer();

    // The real API server answered 410 Gone to the resumed watches (the watcher logs it with the
    // stream's kind), and each such stream listed its kind afresh.
    const goneKinds = await eventually(
      'watches answered 410 Gone',
      async () => {
        const lines = logLines
          .slice(linesBefore)
          .map((line) => JSON.parse(line) as { msg?: string; kind?: string });
        const kinds = new Set(lines.filter((l) => l.msg?.includes('410 Gone')).map((l) => l.kind ?? ''));
        return kinds.size > 0 ? kinds : undefined;
      },
      60_000,
    );
    for (const kind of goneKinds) {
      expect(WATCHED).toContain(kind);
      const before = listsBefore.get(kind) ?? Number.POSITIVE_INFINITY;
      await eventually(`a fresh list of ${kind}`, async () => (listsOf(kind) > before ? true : undefined));
    }

    // Still converging: a hand deletion is repaired by the re-listed watch, a new deployment lands.
    await serviceRestoredAfterDeletion('svc-2');
    const late = await world.client.createDeployment(app(world, 'after-compaction', ns));
    await waitForRevision(world, late, 'DEPLOYED', 120_000);
    await expectExactlyTheInventories([...deployments, late]);
  }, 240_000);
});
