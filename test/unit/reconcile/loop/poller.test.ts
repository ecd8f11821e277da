// The poller against the emulator: a complete listing each poll, revisions read only for what
// changed, and what the last poll parsed taken again, unparsed, for what did not change.
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ControlPlaneClient,
  type DeploymentFilter,
  type ListingOptions,
} from '../../../../src/controlplane/client.ts';
import type { Deployment } from '../../../../src/controlplane/schemas/index.ts';
import { DesiredState } from '../../../../src/reconcile/loop/desiredState.ts';
import { Poller } from '../../../../src/reconcile/loop/poller.ts';
import { ReconcileConfig } from '../../../../src/reconcile/policy/reconcileConfig.ts';
import { ControlPlaneReporter } from '../../../../src/report/controlPlaneReporter.ts';
import { createMetrics } from '../../../../src/report/metrics.ts';
import {
  type Harness,
  SEED_DEPLOYMENTS,
  SEED_LISTENER_ID,
  startHarness,
} from '../../../support/emulatorHarness.ts';

/** The client, counting the listed deployments it took again rather than parsed. */
class CountingClient extends ControlPlaneClient {
  reused = 0;
  parsed = 0;
  revisionReads = 0;

  override listAllRevisions(...args: Parameters<ControlPlaneClient['listAllRevisions']>) {
    this.revisionReads++;
    return super.listAllRevisions(...args);
  }

  override listAllDeployments(filter: DeploymentFilter, options: ListingOptions<Deployment> = {}) {
    return super.listAllDeployments(filter, {
      ...options,
      reuse: (raw) => {
        const held = options.reuse?.(raw);
        if (held) this.reused++;
        else this.parsed++;
        return held;
      },
    });
  }
}

let harness: Harness;
let client: CountingClient;
let desired: DesiredState;
let enqueued: string[];
let priorities: string[];
let poller: Poller;
let reporter: ControlPlaneReporter;

beforeEach(async () => {
  harness = await startHarness();
  const logger = pino({ level: 'silent' });
  client = new CountingClient({ baseUrl: harness.emulator.url, logger });
  desired = new DesiredState();
  enqueued = [];
  priorities = [];
  const metrics = createMetrics({ defaultMetrics: false });
  reporter = new ControlPlaneReporter({ sink: client, listenerId: SEED_LISTENER_ID, logger, metrics });
  poller = new Poller({
    client,
    listenerId: SEED_LISTENER_ID,
    desired,
    knownIds: () => [],
    enqueue: (id, priority) => {
      enqueued.push(id);
      priorities.push(priority);
    },
    reporter,
    metrics,
    logger,
    config: ReconcileConfig.parse({}),
  });
});

afterEach(async () => {
  await client.close();
  await harness.close();
});

const presentImage = (id: string) => {
  const entry = desired.get(id);
  return entry?.kind === 'present' ? entry.deployment.source_revision_config.image_uri : undefined;
};

describe('Poller', () => {
  it('queues every listed deployment at low priority on the first listing (bulk work)', async () => {
    expect(await poller.pollOnce()).toBe(true);
    expect(enqueued).toEqual(expect.arrayContaining(Object.values(SEED_DEPLOYMENTS)));
    expect(new Set(priorities)).toEqual(new Set(['low']));
    expect(client.reused).toBe(0);
  });

  it('takes an unchanged deployment as the last poll parsed it, and wakes nothing', async () => {
    expect(await poller.pollOnce()).toBe(true);
    const listed = client.parsed;
    const first = enqueued.length;
    enqueued = [];
    expect(await poller.pollOnce()).toBe(true);
    expect(client.parsed).toBe(listed);
    expect(client.reused).toBe(first);
    expect(enqueued).toEqual([]);
  });

  it('parses a changed deployment, reads its revisions and wakes it at normal priority', async () => {
    expect(await poller.pollOnce()).toBe(true);
    const listed = client.parsed;
    enqueued = [];
    // A new image (its update time moves).
    await harness.client.patchDeployment(SEED_DEPLOYMENTS.helloWeb, {
      source_revision_config: { image_uri: 'nginx:1.28' },
    });
    expect(await poller.pollOnce()).toBe(true);
    expect(enqueued).toEqual([SEED_DEPLOYMENTS.helloWeb]);
    expect(priorities.at(-1)).toBe('normal');
    expect(client.parsed).toBe(listed + 1);
    expect(presentImage(SEED_DEPLOYMENTS.helloWeb)).toBe('nginx:1.28');
  });

  it("takes the agent's own status report back without reading revisions or waking the deployment", async () => {
    expect(await poller.pollOnce()).toBe(true);
    const id = SEED_DEPLOYMENTS.helloWeb;
    const entry = desired.get(id);
    if (entry?.kind !== 'present') throw new Error('helloWeb not present');
    const revisionId = entry.target.revision?.id ?? null;
    const reads = client.revisionReads;
    const report = (
      revision_status: 'DEPLOYING' | 'DEPLOYED' | 'DEPLOY_FAILED',
      deployment_status: 'READY' | 'UNKNOWN' | null,
    ) => {
      reporter.record({ deployment_id: id, revision_id: revisionId, revision_status, deployment_status });
      return reporter.flush();
    };

    // DEPLOYED, as the agent reported it: the control plane's status, active revision and update
    // time move; held as listed (the poll after takes it unparsed), nothing read or woken.
    await report('DEPLOYED', 'READY');
    enqueued = [];
    expect(await poller.pollOnce()).toBe(true);
    expect(client.revisionReads).toBe(reads);
    expect(enqueued).toEqual([]);
    const held = desired.get(id);
    expect(held?.kind === 'present' && held.deployment.status).toBe('READY');
    const parsed = client.parsed;
    expect(await poller.pollOnce()).toBe(true);
    expect(client.parsed).toBe(parsed);

    // A report and a user's change between two polls: the change is read.
    await report('DEPLOYING', 'READY');
    await harness.client.patchDeployment(id, { source_revision_config: { image_uri: 'nginx:1.29' } });
    expect(await poller.pollOnce()).toBe(true);
    expect(client.revisionReads).toBe(reads + 1);
    expect(enqueued).toEqual([id]);

    // A failure the agent reported is read back: the revision's verdict stops further tries.
    const failing = desired.get(id);
    if (failing?.kind !== 'present') throw new Error('helloWeb not present');
    reporter.record({
      deployment_id: id,
      revision_id: failing.target.revision?.id ?? null,
      revision_status: 'DEPLOY_FAILED',
      deployment_status: 'READY',
    });
    await reporter.flush();
    enqueued = [];
    expect(await poller.pollOnce()).toBe(true);
    expect(client.revisionReads).toBe(reads + 2);
    const settled = desired.get(id);
    expect(settled?.kind === 'present' && settled.target.settled).toBe('DEPLOY_FAILED');
  });

  it('takes back a report without a deployment status (DEPLOYING) too, and reads a status someone else set', async () => {
    expect(await poller.pollOnce()).toBe(true);
    const id = SEED_DEPLOYMENTS.helloWeb;
    const entry = desired.get(id);
    if (entry?.kind !== 'present') throw new Error('helloWeb not present');
    const statusBefore = entry.deployment.status;
    const reads = client.revisionReads;

    // Every rollout's first report: the revision DEPLOYING, no deployment status. The listing's
    // update time moves, its status stays: held as listed, nothing read or woken.
    reporter.record({
      deployment_id: id,
      revision_id: entry.target.revision?.id ?? null,
      revision_status: 'DEPLOYING',
      deployment_status: null,
    });
    await reporter.flush();
    enqueued = [];
    expect(await poller.pollOnce()).toBe(true);
    expect(client.revisionReads).toBe(reads);
    expect(enqueued).toEqual([]);
    const held = desired.get(id);
    expect(held?.kind === 'present' && held.deployment.updated_at).not.toBe(entry.deployment.updated_at);
    expect(held?.kind === 'present' && held.deployment.status).toBe(statusBefore);

    // A deployment status the agent did not report (another writer's) while its DEPLOYING
    // stands: read, and woken.
    const foreign = statusBefore === 'UNKNOWN' ? 'READY' : 'UNKNOWN';
    await client.postStatusReports(SEED_LISTENER_ID, {
      reports: [{ deployment_id: id, deployment_status: foreign, observed_at: new Date().toISOString() }],
    });
    expect(await poller.pollOnce()).toBe(true);
    expect(client.revisionReads).toBe(reads + 1);
    expect(enqueued).toEqual([id]);
  });

  it('takes back the reports sent before the listing, though a newer status is recorded and not yet sent', async () => {
    expect(await poller.pollOnce()).toBe(true);
    const id = SEED_DEPLOYMENTS.helloWeb;
    const entry = desired.get(id);
    if (entry?.kind !== 'present') throw new Error('helloWeb not present');
    const revisionId = entry.target.revision?.id ?? null;
    const reads = client.revisionReads;

    // A rollout's first report is sent; the rollout completes before the next poll, its report
    // recorded and sent only after that poll's listing. The listing shows the first report: no
    // change (each rollout's second revision read and reconcile, before).
    reporter.record({
      deployment_id: id,
      revision_id: revisionId,
      revision_status: 'DEPLOYING',
      deployment_status: null,
    });
    await reporter.flush();
    reporter.record({
      deployment_id: id,
      revision_id: revisionId,
      revision_status: 'DEPLOYED',
      deployment_status: 'READY',
    });
    enqueued = [];
    expect(await poller.pollOnce()).toBe(true);
    expect(client.revisionReads).toBe(reads);
    expect(enqueued).toEqual([]);
    // The DEPLOYED report went at the end of that poll: the next listing shows it, no change either.
    expect(await poller.pollOnce()).toBe(true);
    expect(client.revisionReads).toBe(reads);
    expect(enqueued).toEqual([]);
    const held = desired.get(id);
    expect(held?.kind === 'present' && held.deployment.status).toBe('READY');

    // An update time that moves with no report of the agent's is someone else's change: read.
    await harness.client.patchDeployment(id, { source_revision_config: { image_uri: 'nginx:1.30' } });
    expect(await poller.pollOnce()).toBe(true);
    expect(client.revisionReads).toBe(reads + 1);
    expect(enqueued).toEqual([id]);
  });
});
