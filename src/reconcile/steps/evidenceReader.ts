// Reads the evidence of a failing deployment: its own pods (by its labels, never another's), the
// warning Events of those pods, the tail of each crashed container's previous log, and the values
// of its own Secrets (to mask them). Rate-limited per deployment: at most once per
// `report.evidenceIntervalMs`, and then only when a pod changed, so a crash loop costs a few
// requests per back-off; but read at once when the rollout fails, so that the failure's report
// carries the evidence of that moment, not of a stall before it (a database pod waiting for its
// volume). The extraction itself is pure (src/report/failureEvidence.ts).
import type { Listener } from '../../controlplane/schemas/index.ts';
import type { KubeClient, LiveKubeObject } from '../../kube/index.ts';
import { ANNOTATION_GENERATED_KEYS, deploymentSelector } from '../../objects/ownership.ts';
import { EvidencePod, podEvidence } from '../../report/failureEvidence.ts';
import { podsOfRevision } from '../../report/podProblems.ts';
import type { ReportConfig } from '../../report/reportConfig.ts';
import { secretMask } from '../../report/secretMask.ts';

/** Bytes of a container's log read at most (the server's limitBytes, and what is read of it). */
export const LOG_LIMIT_BYTES = 2048;
/** Reads of one container's log at most, each for half the lines of the one before. */
const MAX_LOG_READS = 4;
/** Pods whose evidence is told: the failing ones first. */
const MAX_PODS = 2;

export type EvidenceKube = Pick<KubeClient, 'get' | 'list' | 'podLog'>;

export interface EvidenceReaderOptions {
  readonly kube: EvidenceKube;
  readonly listener: () => Listener;
  readonly config: ReportConfig;
  readonly now?: () => number;
}

interface Gathered {
  readonly at: number;
  readonly key: string;
  /** Read for a failed rollout: one that fails later is read again at once. */
  readonly failed: boolean;
  readonly lines: readonly string[];
  /** A container ran, never ready, when read: its log may say more at the next interval. */
  readonly growing: boolean;
}

export class EvidenceReader {
  readonly #o: EvidenceReaderOptions;
  readonly #last = new Map<string, Gathered>();

  constructor(options: EvidenceReaderOptions) {
    this.#o = options;
  }

  forget(deploymentId: string): void {
    this.#last.delete(deploymentId);
  }

  /** How many deployments hold evidence (bounded by those failing). */
  get size(): number {
    return this.#last.size;
  }

  /**
   * The evidence lines of a deployment's failing or stalled pods of `revisionId`. `secretNames`:
   * the deployment's own Secrets, whose values are masked. `failed`: the rollout failed.
   */
  async evidence(
    deployment: {
      readonly id: string;
      readonly revisionId: string | undefined;
      readonly namespace: string;
      readonly failed: boolean;
    },
    secretNames: readonly string[],
    signal?: AbortSignal,
  ): Promise<readonly string[]> {
    const now = (this.#o.now ?? Date.now)();
    const { failed: rolloutFailed } = deployment;
    const kept = this.#last.get(deployment.id);
    const last = kept?.failed === rolloutFailed ? kept : undefined;
    if (last && now - last.at < this.#o.config.evidenceIntervalMs) return last.lines;
    const { kube } = this.#o;
    const pods = podsOfRevision(
      await kube.list('Pod', {
        namespace: deployment.namespace,
        labelSelector: deploymentSelector(this.#o.listener().id, deployment.id),
        signal,
      }),
      deployment.revisionId,
    );
    const failing = pods
      .map((pod) => ({ pod, rank: failingRank(pod) }))
      .filter((p) => p.rank > 0)
      .sort((a, b) => b.rank - a.rank)
      .slice(0, MAX_PODS)
      .map((p) => p.pod);
    const key = JSON.stringify(failing.map(changeKey));
    if (last && last.key === key && !last.growing) {
      this.#last.set(deployment.id, { ...last, at: now });
      return last.lines;
    }
    const mask = secretMask(await this.#secretValues(deployment.namespace, secretNames, signal));
    const lines: string[] = [];
    for (const pod of failing) {
      const events = await kube.list(
        { apiVersion: 'events.k8s.io/v1', kind: 'Event' },
        {
          namespace: deployment.namespace,
          fieldSelector: `regarding.uid=${pod.metadata.uid ?? ''},type=Warning`,
          signal,
        },
      );
      const logs = new Map<string, string>();
      const truncated = new Set<string>();
      if (this.#o.config.containerLogLines > 0) {
        for (const { container, previous } of endedContainers(pod)) {
          const read = await this.#logTail(
            deployment.namespace,
            pod.metadata.name,
            container,
            previous,
            signal,
          );
          if (read === undefined) continue;
          logs.set(container, read.text);
          if (read.truncated) truncated.add(container);
        }
      }
      lines.push(
        ...podEvidence({ pod, events, logs }, mask, {
          logLines: this.#o.config.containerLogLines,
          logTruncated: (container) => truncated.has(container),
        }),
      );
    }
    const growing = failing.some((pod) => endedContainers(pod).some((c) => c.running));
    this.#last.set(deployment.id, { at: now, key, failed: rolloutFailed, lines, growing });
    return lines;
  }

  /**
   * The last lines of a container's log within LOG_LIMIT_BYTES. The server's `limitBytes` keeps the
   * first bytes of the tail, so a tail too long for it would lose its last lines — the ones that say
   * why (the exception after its traceback): it is asked again for half as many lines, a few times.
   */
  async #logTail(
    namespace: string,
    pod: string,
    container: string,
    previous: boolean,
    signal?: AbortSignal,
  ): Promise<{ text: string; truncated: boolean } | undefined> {
    let tailLines = this.#o.config.containerLogLines;
    for (let attempt = 0; ; attempt++) {
      const text = await this.#o.kube.podLog(
        { namespace, name: pod },
        { container, previous, tailLines, limitBytes: LOG_LIMIT_BYTES },
        { signal },
      );
      if (text === undefined) return undefined;
      const truncated = Buffer.byteLength(text) >= LOG_LIMIT_BYTES;
      if (!truncated || tailLines === 1 || attempt === MAX_LOG_READS - 1) return { text, truncated };
      tailLines = Math.ceil(tailLines / 2);
    }
  }

  /** Every value of the deployment's own Secrets (its secrets, its generated credentials). */
  async #secretValues(namespace: string, names: readonly string[], signal?: AbortSignal): Promise<string[]> {
    const values: string[] = [];
    for (const name of names) {
      const secret = await this.#o.kube.get(
        { apiVersion: 'v1', kind: 'Secret', namespace, name },
        { signal },
      );
      const data = (secret as { data?: unknown } | undefined)?.data;
      if (data === null || typeof data !== 'object') continue;
      // Of generated credentials, the generated keys alone: the user and database names are no
      // secret, and masking them (`app`) would mask every word they are part of.
      const generated = secret?.metadata.annotations[ANNOTATION_GENERATED_KEYS]?.split(',');
      for (const [key, value] of Object.entries(data))
        if (typeof value === 'string' && (generated === undefined || generated.includes(key)))
          values.push(Buffer.from(value, 'base64').toString('utf8'));
    }
    return values;
  }
}

/** How much a pod says of a failure: 2 a container waiting or ended, 1 not ready or unscheduled, 0 none. */
function failingRank(pod: LiveKubeObject): number {
  const parsed = EvidencePod.safeParse(pod);
  if (!parsed.success) return 0;
  const status = parsed.data.status;
  const containers = [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])];
  const broken = containers.some(
    (c) =>
      (c.state?.waiting?.reason !== undefined &&
        !['ContainerCreating', 'PodInitializing'].includes(c.state.waiting.reason)) ||
      c.lastState?.terminated !== undefined ||
      (c.state?.terminated?.exitCode !== undefined && c.state.terminated.exitCode !== 0),
  );
  if (broken) return 2;
  const unscheduled = status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False');
  const notReady = containers.some((c) => c.ready === false);
  return unscheduled || notReady ? 1 : 0;
}

/**
 * What changes when a pod has something new to tell: a restart, another reason, the scheduler's
 * message. Not readiness, which a crash loop flips twice per back-off.
 */
function changeKey(pod: LiveKubeObject): unknown {
  const parsed = EvidencePod.safeParse(pod);
  const status = parsed.success ? parsed.data.status : undefined;
  const containers = [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])];
  return [
    pod.metadata.uid,
    status?.conditions?.filter((c) => c.type === 'PodScheduled').map((c) => [c.status, c.message]),
    containers.map((c) => [
      c.name,
      c.restartCount,
      c.state?.waiting?.reason,
      c.lastState?.terminated?.reason,
    ]),
  ];
}

/**
 * The containers with a log worth reading: the previous instance of a restarted one, one that
 * ended, or one running and never ready (a server that hangs after a failed start says why).
 */
function endedContainers(pod: LiveKubeObject): { container: string; previous: boolean; running?: true }[] {
  const parsed = EvidencePod.safeParse(pod);
  const status = parsed.success ? parsed.data.status : undefined;
  const containers = [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])];
  return containers.flatMap((c): { container: string; previous: boolean; running?: true }[] => {
    if (c.lastState?.terminated) return [{ container: c.name, previous: true }];
    if (c.state?.terminated && c.state.terminated.exitCode !== 0)
      return [{ container: c.name, previous: false }];
    if (c.state?.running !== undefined && c.ready === false)
      return [{ container: c.name, previous: false, running: true }];
    return [];
  });
}
