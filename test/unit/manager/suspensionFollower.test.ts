// The leader follows what operators suspend: the first read before any reconcile (retried), then
// at each poll each change told where `status` finds it, its deployment reconciled, and the
// generation acknowledged; a failed read keeps what was read before (nothing resumed by error).
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { EventDetails, EventSubject, LiveKubeObject, ObjectRef } from '../../../src/kube/index.ts';
import { SuspensionFollower } from '../../../src/manager/suspensionFollower.ts';
import {
  ANNOTATION_SUSPENSIONS_GENERATION,
  listenerKey,
  observedAnnotation,
  SUSPENSIONS_CONFIGMAP,
} from '../../../src/reconcile/policy/suspensions.ts';
import { inventoryName, type PlacedInventory } from '../../../src/reconcile/steps/inventoryStore.ts';
import { createMetrics } from '../../../src/report/metrics.ts';
import { suspensionsConfigMap } from '../../support/suspensionsConfigMap.ts';

const LISTENER = '0b4f1c1e-0000-4000-8000-0000000000ff';
const A = '0b4f1c1e-0000-4000-8000-00000000000a';
const B = '0b4f1c1e-0000-4000-8000-00000000000b';
const entry = (reason: string) => JSON.stringify({ reason, by: 'alice', at: '2026-11-25T08:00:00Z' });

function configMap(data: Record<string, string>, generation: number, acknowledged = 0): LiveKubeObject {
  return suspensionsConfigMap(data, {
    [ANNOTATION_SUSPENSIONS_GENERATION]: String(generation),
    [observedAnnotation(LISTENER)]: String(acknowledged),
  });
}

/** A follower over a ConfigMap the test sets (or an error it throws), recording what it does. */
function follower(placed: Record<string, string> = {}) {
  const state: { configMap: LiveKubeObject | undefined | Error } = { configMap: undefined };
  const reads: ObjectRef[] = [];
  const patches: { ref: ObjectRef; patch: unknown }[] = [];
  const events: { subject: EventSubject; details: EventDetails }[] = [];
  const woken: string[] = [];
  const metrics = createMetrics({ defaultMetrics: false });
  const kube = {
    get: async (ref: ObjectRef) => {
      reads.push(ref);
      if (state.configMap instanceof Error) throw state.configMap;
      return state.configMap;
    },
    mergePatch: async (ref: ObjectRef, patch: unknown) => {
      patches.push({ ref, patch });
      return state.configMap as LiveKubeObject;
    },
  };
  const subject = new SuspensionFollower({
    kube,
    agentNamespace: 'agent',
    listenerId: LISTENER,
    desired: { ids: () => [A, B] },
    inventories: {
      deploymentIds: () => Object.keys(placed),
      get: (id: string): readonly PlacedInventory[] => {
        const namespace = placed[id];
        return namespace ? [{ namespace, inventory: {} as PlacedInventory['inventory'] }] : [];
      },
    },
    events: {
      record: async (subject: EventSubject | LiveKubeObject, details: EventDetails) => {
        events.push({ subject: subject as EventSubject, details });
      },
    },
    wake: (id) => woken.push(id),
    metrics,
    logger: pino({ level: 'silent' }),
  });
  const gauge = async (name: string) =>
    (await metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value;
  return { subject, state, reads, patches, events, woken, gauge };
}

const signal = new AbortController().signal;

describe('SuspensionFollower', () => {
  it('loads the suspensions from the agent namespace before any reconcile and counts them', async () => {
    const f = follower();
    f.state.configMap = configMap({ [A]: entry('incident 7') }, 1);
    expect(await f.subject.load(signal)).toBe(true);
    expect(f.reads).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'agent', name: SUSPENSIONS_CONFIGMAP },
    ]);
    expect(f.subject.of(A)).toMatchObject({ reason: 'incident 7', scope: 'deployment' });
    expect(f.subject.of(B)).toBeUndefined();
    expect(await f.gauge('k8s_listener_suspended_deployments')).toBe(1);
    expect(await f.gauge('k8s_listener_listener_suspended')).toBe(0);
  });

  it('tells a change where status finds it, reconciles its deployment and acknowledges the generation', async () => {
    const f = follower({ [A]: 'apps' });
    f.state.configMap = configMap({}, 1, 1);
    await f.subject.load(signal);
    f.state.configMap = configMap({ [A]: entry('by hand'), [B]: entry('also') }, 2, 1);
    await f.subject.follow(signal);
    expect(f.woken.sort()).toEqual([A, B].sort());
    // A's Event on its inventory ConfigMap; B has none here, so its Event goes on the suspensions'.
    expect(f.events.map((e) => [e.subject.namespace, e.subject.name, e.details.reason])).toEqual([
      ['apps', inventoryName(A), 'Suspended'],
      ['agent', SUSPENSIONS_CONFIGMAP, 'Suspended'],
    ]);
    expect(f.patches).toEqual([
      {
        ref: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'agent', name: SUSPENSIONS_CONFIGMAP },
        patch: { metadata: { annotations: { [observedAnnotation(LISTENER)]: '2' } } },
      },
    ]);
    expect(await f.gauge('k8s_listener_suspended_deployments')).toBe(2);
  });

  it('tells the whole listener once, on the suspensions ConfigMap', async () => {
    const f = follower();
    f.state.configMap = configMap({}, 1, 1);
    await f.subject.load(signal);
    f.state.configMap = configMap({ [listenerKey(LISTENER)]: entry('freeze') }, 2, 1);
    await f.subject.follow(signal);
    expect(f.events.map((e) => [e.subject.name, e.details.reason, e.details.note])).toEqual([
      [SUSPENSIONS_CONFIGMAP, 'Suspended', expect.stringContaining(`listener ${LISTENER}:`)],
    ]);
    expect(f.subject.of(B)).toMatchObject({ scope: 'listener' });
    expect(await f.gauge('k8s_listener_listener_suspended')).toBe(1);
  });

  it('keeps the last read when a read fails: nothing is resumed by error', async () => {
    const f = follower();
    f.state.configMap = configMap({ [A]: entry('incident') }, 1, 1);
    await f.subject.load(signal);
    f.state.configMap = new Error('connection refused');
    await f.subject.follow(signal);
    expect(f.subject.of(A)).toMatchObject({ reason: 'incident' });
    expect(f.woken).toEqual([]);
    expect(f.patches).toEqual([]);
  });

  it('does not acknowledge a generation already acknowledged', async () => {
    const f = follower();
    f.state.configMap = configMap({ [A]: entry('incident') }, 3, 3);
    await f.subject.load(signal);
    await f.subject.follow(signal);
    expect(f.patches).toEqual([]);
    expect(f.events).toEqual([]);
  });
});
