// Where a deploy's time goes, for bench:node: the instants of a deployment's way from the control
// plane to its first answered run, each read where it happens — the emulator's own calls (the
// deployment created, the agent's listing that first shows it, the agent's status reports with the
// time the agent observed each) and the pods as the API server shows them, looked at every 250 ms
// (their conditions and container states carry whole seconds only), the image pull from the
// kubelet's Pulled event. Then the phases between them, in the order they follow one another.
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import type { RunningEmulator } from '../src/emulator/server.ts';
import { LABEL_COMPONENT, LABEL_DEPLOYMENT_ID } from '../src/objects/ownership.ts';
import { sleep } from '../src/sleep.ts';
import type { AdminKube } from '../test/support/adminKube.ts';

/** What the control plane saw of one deployment, in epoch milliseconds. */
interface ControlPlaneMarks {
  created?: number;
  /** The agent's first listing that showed it (a listing by name is the CLI's). */
  seen?: number;
  /** observed_at of the agent's first report of each revision status, and when it arrived. */
  reports: Map<string, { observedAt: number; receivedAt: number }>;
}

/** Records, from inside the emulator, the control plane's instants of every deployment. */
export function watchControlPlane(emulator: RunningEmulator): (deploymentId: string) => ControlPlaneMarks {
  const marks = new Map<string, ControlPlaneMarks>();
  const of = (id: string) => {
    let m = marks.get(id);
    if (!m) {
      m = { reports: new Map() };
      marks.set(id, m);
    }
    return m;
  };
  const store = emulator.store;
  const create = store.createDeployment.bind(store);
  store.createDeployment = (...args) => {
    const made = create(...args);
    of(made.id).created = Date.now();
    return made;
  };
  const list = store.listDeployments.bind(store);
  store.listDeployments = (query) => {
    const listed = list(query);
    if (query.name === undefined) for (const d of listed) of(d.id).seen ??= Date.now();
    return listed;
  };
  const report = store.applyStatusReports.bind(store);
  store.applyStatusReports = (listenerId, reports) => {
    for (const r of reports) {
      const m = of(r.deployment_id);
      const status = r.revision_status;
      if (status && !m.reports.has(status))
        m.reports.set(status, { observedAt: Date.parse(r.observed_at), receivedAt: Date.now() });
    }
    return report(listenerId, reports);
  };
  return of;
}

/** One pod's instants as first looked at, in epoch milliseconds. */
export interface PodMarks {
  readonly name: string;
  readonly component: string;
  readonly deploymentId: string;
  readonly image: string;
  created?: number;
  scheduled?: number;
  /** The first of its containers (init or not) running. */
  firstContainer?: number;
  /** Its main (first) container running for good: the last start it made. */
  serverStarted?: number | undefined;
  initialized?: number;
  ready?: number;
  restarts: number;
  /** Why a container of it last ended, e.g. `Error (exit 1)`. */
  lastTermination?: string;
}

/** Looks at a namespace's pods every 250 ms until stopped. */
export class PodTimeline {
  readonly pods = new Map<string, PodMarks>();
  #stopped = false;
  readonly #done: Promise<void>;
  readonly #kube: AdminKube;
  readonly #namespace: string;

  constructor(kube: AdminKube, namespace: string) {
    this.#kube = kube;
    this.#namespace = namespace;
    this.#done = this.#loop();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#done;
  }

  async #loop(): Promise<void> {
    while (!this.#stopped) {
      try {
        const listed = await this.#kube.core.listNamespacedPod({ namespace: this.#namespace });
        const now = Date.now();
        for (const pod of listed.items) this.#look(pod, now);
      } catch {
        // A missed look is a later mark, not a failure.
      }
      await sleep(250);
    }
  }

  #look(pod: V1Pod, now: number): void {
    const name = pod.metadata?.name ?? '';
    let m = this.pods.get(name);
    if (!m) {
      m = {
        name,
        component: pod.metadata?.labels?.[LABEL_COMPONENT] ?? '',
        deploymentId: pod.metadata?.labels?.[LABEL_DEPLOYMENT_ID] ?? '',
        image: pod.spec?.containers[0]?.image ?? '',
        created: now,
        restarts: 0,
      };
      this.pods.set(name, m);
    }
    const condition = (type: string) =>
      pod.status?.conditions?.some((c) => c.type === type && c.status === 'True');
    if (condition('PodScheduled')) m.scheduled ??= now;
    if (condition('Initialized')) m.initialized ??= now;
    if (condition('Ready')) m.ready ??= now;
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    if (statuses.some((s) => s.state?.running || s.state?.terminated)) m.firstContainer ??= now;
    const main = pod.status?.containerStatuses?.[0];
    if (main) {
      if (main.restartCount !== m.restarts) m.serverStarted = undefined;
      m.restarts = main.restartCount;
      if (main.state?.running) m.serverStarted ??= now;
      const ended = main.lastState?.terminated;
      if (ended) m.lastTermination = `${ended.reason ?? 'ended'} (exit ${ended.exitCode})`;
    }
  }

  /** The pods of one deployment's component, first made first. */
  of(deploymentId: string, component: string): PodMarks[] {
    return [...this.pods.values()].filter(
      (p) => p.component === component && p.deploymentId === deploymentId,
    );
  }
}

/** Seconds a kubelet's Pulled event says the image took: 0 when it was already present. */
export function pullSeconds(events: readonly CoreV1Event[], pod: string): number | undefined {
  const pulled = events.find((e) => e.involvedObject.name === pod && e.reason === 'Pulled');
  if (!pulled) return undefined;
  const took = / in ([\d.]+)(ms|s) /.exec(pulled.message ?? '');
  if (!took) return 0;
  return took[2] === 'ms' ? Number(took[1]) / 1000 : Number(took[1]);
}

/** The phases of one deploy, in seconds, in the order they follow one another. */
export interface DeployPhases {
  /** `langgraph deploy` started → the agent's listing first showed the deployment. */
  controlPlaneToPoll: number;
  /** That listing → the agent's DEPLOYING report observed: rendered, applied, its status read. */
  agentRenderApply: number;
  /** The server pod first seen → scheduled (the controllers made it after the agent's write). */
  scheduling: number;
  /** Scheduled → its first container running: the sandbox and the image (pull: `imagePull`). */
  podStart: number;
  /** Of that: what the kubelet's Pulled event says the image took (0: already present). */
  imagePull: number;
  /** Applied → PostgreSQL and Redis both ready (runs beside the server pod's start). */
  storesReadyAfterApply: number;
  /** The server pod's first container running → its server's last start (waiting for the stores,
   * or exiting for want of them and backing off). */
  serverWaitedForStores: number;
  /** The server's last start → its pod ready. */
  serverReady: number;
  /** Pod ready → the first run answered through the Service. */
  firstRun: number;
  /** Pod ready → the agent's DEPLOYED report observed, and received by the control plane. */
  deployedObservedAfterReady: number;
  deployedReceivedAfterReady: number;
  /** Restarts of the server container before it stayed up, and why the last one ended. */
  serverRestarts: number;
  lastTermination?: string;
}

const s = (ms: number) => Number((ms / 1000).toFixed(2));

/** The phases of a deploy from its marks; undefined fields where a mark is missing read as NaN. */
export function deployPhases(input: {
  started: number;
  answered: number;
  controlPlane: ControlPlaneMarks;
  server: PodMarks;
  stores: readonly PodMarks[];
  imagePull: number | undefined;
}): DeployPhases {
  const { started, answered, controlPlane, server, stores } = input;
  const nan = Number.NaN;
  const seen = controlPlane.seen ?? nan;
  const applied = controlPlane.reports.get('DEPLOYING')?.observedAt ?? nan;
  const deployed = controlPlane.reports.get('DEPLOYED');
  const storesReady = Math.max(...stores.map((p) => p.ready ?? nan));
  const firstContainer = server.firstContainer ?? nan;
  const serverStarted = server.serverStarted ?? nan;
  const ready = server.ready ?? nan;
  return {
    controlPlaneToPoll: s(seen - started),
    agentRenderApply: s(applied - seen),
    scheduling: s((server.scheduled ?? nan) - (server.created ?? nan)),
    podStart: s(firstContainer - (server.scheduled ?? nan)),
    imagePull: input.imagePull ?? nan,
    storesReadyAfterApply: s(storesReady - applied),
    serverWaitedForStores: s(serverStarted - firstContainer),
    serverReady: s(ready - serverStarted),
    firstRun: s(answered - ready),
    deployedObservedAfterReady: s((deployed?.observedAt ?? nan) - ready),
    deployedReceivedAfterReady: s((deployed?.receivedAt ?? nan) - ready),
    serverRestarts: server.restarts,
    ...(server.lastTermination ? { lastTermination: server.lastTermination } : {}),
  };
}

/** Each numeric phase's median over the runs. */
export function medianPhases(
  runs: readonly DeployPhases[],
  median: (values: readonly number[]) => number,
): Record<string, number> {
  const keys = Object.keys(runs[0] ?? {}).filter(
    (k) => typeof runs[0]?.[k as keyof DeployPhases] === 'number',
  );
  return Object.fromEntries(
    keys.map((k) => [k, Number(median(runs.map((r) => r[k as keyof DeployPhases] as number)).toFixed(2))]),
  );
}
