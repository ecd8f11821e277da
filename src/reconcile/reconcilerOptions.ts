// What a Reconciler is given: its reads and writes, the desired state and inventories, where it
// reports, its configuration, and the optional parts the agent wires in (the watch cache, the
// suspensions, the agent-change rate, the failure evidence).
import type { Logger } from 'pino';
import type { Listener } from '../controlplane/schemas/index.ts';
import type { EventRecorder } from '../kube/index.ts';
import type { ObjectCache } from '../kube/objectCache.ts';
import type { RenderConfig } from '../render/index.ts';
import type { ControlPlaneReporter } from '../report/controlPlaneReporter.ts';
import type { AgentMetrics } from '../report/metrics.ts';
import type { KubeReader, KubeWriter } from './kubeAccess.ts';
import type { DesiredState } from './loop/desiredState.ts';
import type { AgentChangeGate } from './policy/agentChangeGate.ts';
import type { ReconcileConfig } from './policy/reconcileConfig.ts';
import type { ActiveSuspension } from './policy/suspensions.ts';
import type { EvidenceReader } from './steps/evidenceReader.ts';
import type { InventoryStore } from './steps/inventoryStore.ts';

/** What the reconciler asks of the Kubernetes client: reads and writes, nothing else. */
export type ReconcilerKube = KubeReader & KubeWriter;

export interface ReconcilerOptions {
  readonly kube: ReconcilerKube;
  readonly desired: DesiredState;
  readonly inventories: InventoryStore;
  readonly reporter: Pick<ControlPlaneReporter, 'record'>;
  readonly events: Pick<EventRecorder, 'record'>;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  readonly renderConfig: RenderConfig;
  readonly config: ReconcileConfig;
  readonly listener: () => Listener;
  readonly allowedNamespaces: readonly string[] | undefined;
  /** The key of every digest render writes (manager/digestKey); undefined: plain digests. */
  readonly digestKey?: Uint8Array | undefined;
  /**
   * The owned objects (and pods) as the watches see them: reads that hit need no request, and a
   * deployment's claims and pods come from it once their watch has listed. Absent (`diff`,
   * tests), every read is a request.
   */
  readonly cache?: Pick<ObjectCache, 'get' | 'written' | 'byLabel' | 'isSynced' | 'checked' | 'isSlim'>;
  /** An operator's suspension in effect for a deployment (see suspensions.ts); absent: none. */
  readonly suspension?: ((deploymentId: string) => ActiveSuspension | undefined) | undefined;
  /**
   * The agent-change rate (agentChangeGate.ts): a change of the agent's own render of a deployment
   * (not of its revision) waits its turn. Absent: unlimited.
   */
  readonly agentChanges?: AgentChangeGate | undefined;
  /** Reads the evidence of a failing deployment's pods for its report; absent: the status alone. */
  readonly evidence?: EvidenceReader | undefined;
  /** The clock of the waits' grace (waitingSince.ts); default Date.now. */
  readonly now?: (() => number) | undefined;
}
