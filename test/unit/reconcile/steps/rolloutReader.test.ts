// When the rollout reader reads a stalled rollout's evidence: once a pod of the revision has run,
// not ready, for the failure grace (a failing readiness probe), not while the cluster has yet to
// create or schedule its pods, nor while its running pods are ready and others wait (a cold sync on
// a slow cluster read every deployment's evidence: a Pod list and Secret reads each interval).
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../../src/objects/kubeObject.ts';
import { LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../../../../src/objects/ownership.ts';
import { EvidenceReader } from '../../../../src/reconcile/steps/evidenceReader.ts';
import { RolloutReader } from '../../../../src/reconcile/steps/rolloutReader.ts';
import { podSummary } from '../../../../src/report/podProblems.ts';
import { ReportConfig } from '../../../../src/report/reportConfig.ts';
import { MemoryCluster } from '../../../support/memoryCluster.ts';
import { listener } from '../../../support/renderFixtures.ts';

const NAMESPACE = 'apps';
const ID = 'd1';
const labels = { [LABEL_LISTENER_ID]: listener.id, [LABEL_DEPLOYMENT_ID]: ID };

/** A Deployment whose one replica is not available yet: its rollout is in progress. */
const web: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: NAMESPACE, labels, annotations: {} },
  spec: { replicas: 1 },
};
const rolling = {
  ...web,
  metadata: { ...web.metadata, generation: 1, uid: 'u1', resourceVersion: '1' },
  status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 0, availableReplicas: 0 },
};

function pod(phase: string, name = 'web-1', ready = false): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE, labels, annotations: {} },
    spec: { containers: [{ name: 'app' }] },
    status: { phase, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

function world(cachedPods?: () => KubeObject[]) {
  const cluster = new MemoryCluster([NAMESPACE]);
  const evidence = new EvidenceReader({
    kube: { get: cluster.get, list: cluster.list, podLog: async () => undefined },
    listener: () => listener,
    config: ReportConfig.parse({ containerLogLines: 0 }),
  });
  // A grace of 0: a rollout counts as stalled as soon as its clock has started.
  // With `cachedPods`: the pods as the watch cache holds them (podSummary), the rest read.
  const cache = cachedPods && {
    get: () => undefined,
    isSynced: (kind: string) => kind === 'Pod',
    byLabel: () =>
      cachedPods().map((p) =>
        podSummary({ ...p, metadata: { ...p.metadata, uid: p.metadata.name, resourceVersion: '1' } }),
      ),
  };
  const reader = new RolloutReader({
    kube: cluster,
    cache,
    listener: () => listener,
    failureGraceMs: 0,
    evidence,
  });
  const podLists = () => cluster.calls.filter((c) => c.verb === 'list' && c.kind === 'Pod').length;
  const look = async () => {
    const before = podLists();
    const status = await reader.rollout(ID, undefined, NAMESPACE, [web], new Map([['w', rolling]]));
    // The evidence lists the pods; the reader itself does when there is no cache.
    return { status, evidenceRead: podLists() - before > (cache ? 0 : 1) };
  };
  return { cluster, look };
}

describe('RolloutReader: the evidence of a stalled rollout', () => {
  it('is not read while the revision has no pod running (pods not yet created or scheduled)', async () => {
    const { cluster, look } = world();
    expect(await look()).toMatchObject({ status: { revisionStatus: 'DEPLOYING' }, evidenceRead: false });
    await cluster.create(pod('Pending'));
    expect((await look()).evidenceRead).toBe(false);
  });

  it('is not read while the running pods are ready and others wait to be scheduled', async () => {
    const { cluster, look } = world();
    await cluster.create(pod('Running', 'web-1', true));
    await cluster.create(pod('Pending', 'web-2'));
    expect((await look()).evidenceRead).toBe(false);
    expect(await look()).toMatchObject({ status: { revisionStatus: 'DEPLOYING' }, evidenceRead: false });
  });

  it('is read once a pod of the revision has run, not ready, for the grace', async () => {
    const { cluster, look } = world();
    await cluster.create(pod('Running'));
    // The first look starts the clock; the next finds the rollout stalled.
    expect((await look()).evidenceRead).toBe(false);
    expect(await look()).toMatchObject({ status: { revisionStatus: 'DEPLOYING' }, evidenceRead: true });
  });

  it('tells ready from not ready in the summaries of pods the watch cache holds', async () => {
    let pods = [pod('Running', 'web-1', true), pod('Pending', 'web-2')];
    const { look } = world(() => pods);
    expect((await look()).evidenceRead).toBe(false);
    expect((await look()).evidenceRead).toBe(false);
    pods = [pod('Running', 'web-1', true), pod('Running', 'web-2')];
    expect((await look()).evidenceRead).toBe(false);
    expect((await look()).evidenceRead).toBe(true);
  });
});
