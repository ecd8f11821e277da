// The status path's memory: converged states by their input, whether they still hold (the owned
// objects' spec views, the referenced platform objects' owners), and the digests of the render's
// inputs.
import { describe, expect, it } from 'vitest';
import type { Deployment, Listener, Revision } from '../../../../src/controlplane/schemas/index.ts';
import type { LiveKubeObject, ObjectRef } from '../../../../src/kube/index.ts';
import {
  AGENT_NAME,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../../../src/objects/ownership.ts';
import type { PresentEntry } from '../../../../src/reconcile/loop/desiredState.ts';
import { TerminalError } from '../../../../src/reconcile/outcome.ts';
import type { ConvergedState } from '../../../../src/reconcile/steps/convergedState.ts';
import { entryId, type InventoryEntry } from '../../../../src/reconcile/steps/inventory.ts';
import type { JudgedReference } from '../../../../src/reconcile/steps/referenceGuard.ts';
import { StatusPath, type StatusPathOptions } from '../../../../src/reconcile/steps/statusPath.ts';
import { ReconcileReason } from '../../../../src/report/reconcileReason.ts';
import { listener, minimalDeployment } from '../../../support/renderFixtures.ts';

const DEPLOYMENT = minimalDeployment.id;
const NAMESPACE = 'apps';

const liveObject = (
  kind: string,
  name: string,
  uid: string,
  labels: Record<string, string> = {},
): LiveKubeObject =>
  ({
    apiVersion: 'v1',
    kind,
    metadata: { name, namespace: NAMESPACE, uid, resourceVersion: '1', labels, annotations: {} },
  }) as LiveKubeObject;

const serviceEntry: InventoryEntry = { apiVersion: 'v1', kind: 'Service', namespace: NAMESPACE, name: 'web' };
const service = liveObject('Service', 'web', 'svc-1', { [LABEL_DEPLOYMENT_ID]: DEPLOYMENT });
const owned = new Map([[entryId(serviceEntry), service]]);

/** A platform Secret the pod templates name, as judged at the full reconcile. */
const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: NAMESPACE, name: 'tls' };
const judged: JudgedReference = {
  ref: secretRef,
  uid: 'tls-1',
  paths: ['Deployment/web spec.volumes[0].secret.secretName'],
};
const platformSecret = liveObject('Secret', 'tls', 'tls-1');

/** A status path whose referenced objects are looked up in `cache` (or read, with `cache: undefined`). */
function statusPath(options: Partial<StatusPathOptions> & { refs?: Map<string, LiveKubeObject> } = {}) {
  const refs = options.refs ?? new Map([[secretRef.name, platformSecret]]);
  const reads: ObjectRef[] = [];
  const lookup = (ref: ObjectRef) => refs.get(ref.name);
  const path = new StatusPath({
    listener: () => listener,
    ownedAnnotations: () => false,
    cached: lookup,
    read: async (ref) => {
      reads.push(ref);
      return lookup(ref);
    },
    ...options,
  });
  const state = (over: Partial<ConvergedState> = {}): ConvergedState => ({
    input: 'input-1',
    owned: path.ownedDigest([serviceEntry], owned),
    namespace: NAMESPACE,
    revisionId: 'r1',
    entries: [serviceEntry],
    notes: [],
    references: [judged],
    ...over,
  });
  return { path, state, reads };
}

const revision = (id: string): Revision => ({
  id,
  created_at: '2026-11-01T00:00:00Z',
  updated_at: '2026-11-01T00:00:00Z',
  status: 'AWAITING_DEPLOY',
  source: 'external_container',
  source_revision_config: { image_uri: `img:${id}` },
});
const entryOf = (deployment: Deployment, target?: Revision): PresentEntry => ({
  kind: 'present',
  deployment,
  target: { revision: target, settled: undefined },
  fingerprint: 'f1',
});

describe('StatusPath converged states', () => {
  it('returns the state converged from this very input', () => {
    const { path, state } = statusPath();
    path.remember(DEPLOYMENT, state());
    expect(path.converged(DEPLOYMENT, 'input-1')?.revisionId).toBe('r1');
  });

  it('returns none for another input', () => {
    const { path, state } = statusPath();
    path.remember(DEPLOYMENT, state());
    expect(path.converged(DEPLOYMENT, 'input-2')).toBeUndefined();
  });

  it('returns none once forgotten', () => {
    const { path, state } = statusPath();
    path.remember(DEPLOYMENT, state());
    path.forget(DEPLOYMENT);
    expect(path.converged(DEPLOYMENT, 'input-1')).toBeUndefined();
  });
});

describe('StatusPath.holds', () => {
  it('holds while the owned objects and the referenced ones are as left', async () => {
    const { path, state } = statusPath();
    expect(await path.holds(DEPLOYMENT, state(), owned, undefined)).toBe(true);
  });

  it('does not hold once an owned object is another (deleted and made anew)', async () => {
    const { path, state } = statusPath();
    const replaced = new Map([
      [entryId(serviceEntry), { ...service, metadata: { ...service.metadata, uid: 'svc-2' } }],
    ]);
    expect(await path.holds(DEPLOYMENT, state(), replaced, undefined)).toBe(false);
  });

  it('does not hold once an owned object is gone', async () => {
    const { path, state } = statusPath();
    expect(await path.holds(DEPLOYMENT, state(), new Map(), undefined)).toBe(false);
  });

  it('looks a referenced object up in the watch cache, with no request', async () => {
    const { path, state, reads } = statusPath();
    await path.holds(DEPLOYMENT, state(), owned, undefined);
    expect(reads).toEqual([]);
  });

  it('reads a referenced object without a watch cache', async () => {
    const { path, state, reads } = statusPath({ cached: undefined });
    await path.holds(DEPLOYMENT, state(), owned, undefined);
    expect(reads).toEqual([secretRef]);
  });

  it('holds when a referenced platform object is deleted (its pods wait for it)', async () => {
    const { path, state } = statusPath({ refs: new Map() });
    expect(await path.holds(DEPLOYMENT, state(), owned, undefined)).toBe(true);
  });

  it('does not hold when another platform object took the name (judged again)', async () => {
    const { path, state } = statusPath({
      refs: new Map([[secretRef.name, liveObject('Secret', 'tls', 'tls-2')]]),
    });
    expect(await path.holds(DEPLOYMENT, state(), owned, undefined)).toBe(false);
  });

  describe('a referenced object taken by another owner', () => {
    const taken = liveObject('Secret', 'tls', 'tls-2', {
      [LABEL_MANAGED_BY]: AGENT_NAME,
      [LABEL_LISTENER_ID]: listener.id,
      [LABEL_DEPLOYMENT_ID]: 'another-deployment',
    });
    const refs = new Map([[secretRef.name, taken]]);
    const refusal = async () => {
      const { path, state } = statusPath({ refs });
      path.remember(DEPLOYMENT, state());
      const error = await path.holds(DEPLOYMENT, state(), owned, undefined).catch((e: unknown) => e);
      return { path, error };
    };

    it('is refused as a ForeignReference', async () => {
      const { error } = await refusal();
      expect(error).toBeInstanceOf(TerminalError);
      expect((error as TerminalError).reason).toBe(ReconcileReason.ForeignReference);
    });

    it('names the field that names it and whose it is', async () => {
      const { error } = await refusal();
      expect((error as TerminalError).message).toBe(
        'Deployment/web spec.volumes[0].secret.secretName names Secret/tls, which belongs to another deployment',
      );
    });

    it('carries the object refused, for the workloads to be taken off it', async () => {
      const { error } = await refusal();
      expect((error as TerminalError).refused).toEqual([secretRef]);
    });

    it('forgets the converged state', async () => {
      const { path } = await refusal();
      expect(path.converged(DEPLOYMENT, 'input-1')).toBeUndefined();
    });
  });
});

describe('StatusPath digests', () => {
  it('gives the same input digest for the same input', () => {
    const { path } = statusPath();
    const entry = entryOf(minimalDeployment, revision('r1'));
    expect(path.inputDigest(entry, 0)).toBe(path.inputDigest({ ...entry }, 0));
  });

  it('moves the input digest with the served namespaces', () => {
    const { path } = statusPath();
    const entry = entryOf(minimalDeployment, revision('r1'));
    expect(path.inputDigest(entry, 1)).not.toBe(path.inputDigest(entry, 0));
  });

  it('moves the input digest with the listener', () => {
    let current: Listener = listener;
    const { path } = statusPath({ listener: () => current });
    const entry = entryOf(minimalDeployment, revision('r1'));
    const before = path.inputDigest(entry, 0);
    current = { ...listener, compute_config: { k8s_namespaces: ['apps'] } };
    expect(path.inputDigest(entry, 0)).not.toBe(before);
  });

  it('moves the input hash with the target revision of the same deployment object', () => {
    const { path } = statusPath();
    const before = path.inputHash(entryOf(minimalDeployment, revision('r1')));
    expect(path.inputHash(entryOf(minimalDeployment, revision('r2')))).not.toBe(before);
  });

  it('moves the input hash with the deployment', () => {
    const { path } = statusPath();
    const before = path.inputHash(entryOf(minimalDeployment, revision('r1')));
    const renamed = { ...minimalDeployment, name: 'hello-2' };
    expect(path.inputHash(entryOf(renamed, revision('r1')))).not.toBe(before);
  });

  it('keys its digests with the digest key', () => {
    const entry = entryOf(minimalDeployment, revision('r1'));
    const plain = statusPath().path.inputHash(entry);
    expect(statusPath({ digestKey: new Uint8Array(32).fill(7) }).path.inputHash(entry)).not.toBe(plain);
  });
});
