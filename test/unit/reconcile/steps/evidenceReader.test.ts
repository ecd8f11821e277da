// The evidence reader's rate limit: a crash loop is read at most once per interval, but a rollout
// that fails is read at once, so that the failure's report tells the pods as they are when it
// fails, not as they were in a stall before (a database pod waiting for its volume).
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../../src/objects/kubeObject.ts';
import { LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID } from '../../../../src/objects/ownership.ts';
import { EvidenceReader } from '../../../../src/reconcile/steps/evidenceReader.ts';
import { ReportConfig } from '../../../../src/report/reportConfig.ts';
import { MemoryCluster } from '../../../support/memoryCluster.ts';
import { listener } from '../../../support/renderFixtures.ts';

const NAMESPACE = 'apps';
const DEPLOYMENT = { id: 'd1', revisionId: undefined, namespace: NAMESPACE };

function pod(name: string, status: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NAMESPACE,
      labels: { [LABEL_LISTENER_ID]: listener.id, [LABEL_DEPLOYMENT_ID]: DEPLOYMENT.id },
      annotations: {},
    },
    spec: { containers: [{ name: 'app' }] },
    status,
  };
}

const waitingForVolume = pod('web-db-0', {
  phase: 'Pending',
  conditions: [
    {
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: 'pod has unbound immediate PersistentVolumeClaims',
    },
  ],
});
const crashing = pod('web-1', {
  containerStatuses: [
    {
      name: 'app',
      restartCount: 2,
      state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s' } },
      lastState: { terminated: { reason: 'OOMKilled', exitCode: 137 } },
    },
  ],
});

describe('EvidenceReader', () => {
  it('reads a failed rollout at once, within the interval of a stall’s reading', async () => {
    const cluster = new MemoryCluster([NAMESPACE]);
    let now = 1_000_000;
    const reader = new EvidenceReader({
      kube: { get: cluster.get, list: cluster.list, podLog: async () => undefined },
      listener: () => listener,
      config: ReportConfig.parse({ containerLogLines: 0, evidenceIntervalMs: 30_000 }),
      now: () => now,
    });
    await cluster.create(waitingForVolume);
    const stalled = await reader.evidence({ ...DEPLOYMENT, failed: false }, []);
    expect(stalled.join('\n')).toContain('unbound immediate PersistentVolumeClaims');

    // The volume bound, the server crashing: within the interval, the stall's lines are kept...
    cluster.remove({ apiVersion: 'v1', kind: 'Pod', namespace: NAMESPACE, name: 'web-db-0' });
    await cluster.create(crashing);
    now += 5_000;
    expect(await reader.evidence({ ...DEPLOYMENT, failed: false }, [])).toEqual(stalled);
    // ...until the rollout fails: its report has the pods of that moment.
    const failed = await reader.evidence({ ...DEPLOYMENT, failed: true }, []);
    expect(failed.join('\n')).not.toContain('PersistentVolumeClaims');
    expect(failed).toContain('pod web-1 container app: last exit: OOMKilled, exit code 137; restarts: 2');
    // And then the interval holds again.
    now += 5_000;
    expect(await reader.evidence({ ...DEPLOYMENT, failed: true }, [])).toBe(failed);
  });
});
