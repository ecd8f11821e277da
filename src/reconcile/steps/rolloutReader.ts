// A deployment's rollout, read: the status of its workloads, autoscaler and claims from the watch
// cache (or a read, without one), and — only while the rollout is not done — its current pods'
// back-offs, held for the failure grace period (kstatus's checks, src/report/rolloutHealth.ts);
// and, for a rollout that failed or whose pods are in trouble, the evidence of why.
import type { Listener } from '../../controlplane/schemas/index.ts';
import { type LiveKubeObject, refOf } from '../../kube/index.ts';
import type { ObjectCache } from '../../kube/objectCache.ts';
import { ROLLOUT_KINDS } from '../../objects/kinds.ts';
import { deploymentSelector, LABEL_COMPONENT } from '../../objects/ownership.ts';
import type { KubeObject } from '../../render/index.ts';
import { isRunningUnready, PodProblemClock, podsOfRevision } from '../../report/podProblems.ts';
import { computeRollout, type PodProblem, type RolloutStatus } from '../../report/rolloutHealth.ts';
import type { KubeReader } from '../kubeAccess.ts';
import type { EvidenceReader } from './evidenceReader.ts';
import { entryId, entryOf } from './inventory.ts';

export interface RolloutReaderOptions {
  readonly kube: KubeReader;
  readonly cache?: Pick<ObjectCache, 'get' | 'byLabel' | 'isSynced'> | undefined;
  readonly listener: () => Listener;
  readonly failureGraceMs: number;
  /** Reads the evidence of a failure (pods, Events, logs); absent: the status alone. */
  readonly evidence?: EvidenceReader | undefined;
}

export class RolloutReader {
  readonly #o: RolloutReaderOptions;
  /** First time each pod was seen waiting with a back-off reason, for the grace period. */
  readonly #podProblems = new PodProblemClock();
  /**
   * When each pod of a deployment's revision was first seen running and not ready, while the rollout
   * was not done: a pod that has stayed so for the grace (a failing readiness probe, a server that
   * hangs at start) makes the rollout stalled, and its evidence is read. Per pod, not per rollout:
   * on a cluster slow to create and schedule pods, a rollout whose first pod is ready and whose
   * others wait for the scheduler is progressing, not stalled (counted per rollout, a cold sync of
   * 1,000 read evidence for most deployments: 14.4 API requests a deployment in bench:sync, 12.2
   * without).
   */
  readonly #unreadySince = new Map<string, Map<string, number>>();

  constructor(options: RolloutReaderOptions) {
    this.#o = options;
  }

  /** Forgets a deleted deployment's pods. */
  forget(deploymentId: string): void {
    this.#podProblems.forget(deploymentId);
    this.#unreadySince.delete(deploymentId);
    this.#o.evidence?.forget(deploymentId);
  }

  async rollout(
    deploymentId: string,
    revisionId: string | undefined,
    namespace: string,
    objects: readonly KubeObject[],
    live: Map<string, LiveKubeObject>,
    signal?: AbortSignal,
  ): Promise<RolloutStatus> {
    const tracked: { component: string; object: LiveKubeObject | undefined }[] = [];
    for (const object of objects) {
      if (!ROLLOUT_KINDS.has(object.kind)) continue;
      // The status written since our apply: the watch has it, or a read does (without a cache).
      const ref = refOf(object);
      const fresh = this.#o.cache ? this.#o.cache.get(ref) : await this.#o.kube.get(ref, { signal });
      tracked.push({
        component: object.metadata.labels[LABEL_COMPONENT] ?? 'main',
        object: fresh ?? live.get(entryId(entryOf(object))),
      });
    }
    // Claims come only from a StatefulSet's volumeClaimTemplates (the database).
    const claims = objects.some((o) => o.kind === 'StatefulSet')
      ? await this.#ownedBy('PersistentVolumeClaim', namespace, deploymentId, signal)
      : [];
    for (const claim of claims)
      tracked.push({ component: claim.metadata.labels[LABEL_COMPONENT] ?? 'database', object: claim });
    const rollout = (podProblems: PodProblem[]) =>
      computeRollout({
        objects: tracked,
        podProblems,
        now: Date.now(),
        failureGraceMs: this.#o.failureGraceMs,
      });
    // Pods only explain a rollout that is not done: with every workload current (kstatus), a
    // pod's back-off cannot change the verdict.
    const withoutPods = rollout([]);
    if (withoutPods.revisionStatus === 'DEPLOYED') {
      this.#podProblems.forget(deploymentId);
      this.#unreadySince.delete(deploymentId);
      this.#o.evidence?.forget(deploymentId);
      return withoutPods;
    }
    const pods = podsOfRevision(await this.#ownedBy('Pod', namespace, deploymentId, signal), revisionId);
    const problems = this.#podProblems.observe(deploymentId, pods, Date.now());
    const status = rollout(problems);
    // Evidence for a failure, for pods in trouble while the rollout goes on, and for a rollout
    // stalled past the grace period (pods that never get ready: a failing readiness probe); not
    // for routine progress.
    if (!this.#o.evidence) return status;
    const stalled = this.#stalled(deploymentId, pods, Date.now());
    if (status.revisionStatus !== 'DEPLOY_FAILED' && problems.length === 0 && !stalled) return status;
    const secretNames = objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name);
    const evidence = await this.#o.evidence
      .evidence(
        { id: deploymentId, revisionId, namespace, failed: status.revisionStatus === 'DEPLOY_FAILED' },
        secretNames,
        signal,
      )
      // The status is told without it: evidence that cannot be read is no reason to fail the reconcile.
      .catch(() => []);
    return evidence.length > 0 ? { ...status, evidence } : status;
  }

  /** Whether a pod of the revision has been running and not ready for the failure grace. */
  #stalled(deploymentId: string, pods: readonly LiveKubeObject[], now: number): boolean {
    const before = this.#unreadySince.get(deploymentId);
    const since = new Map<string, number>();
    let stalled = false;
    for (const pod of pods) {
      if (!isRunningUnready(pod)) continue;
      const key = pod.metadata.uid ?? pod.metadata.name;
      const seen = before?.get(key);
      // A pod seen so for the first time starts its clock; it stalls at a later look.
      if (seen !== undefined && now - seen >= this.#o.failureGraceMs) stalled = true;
      since.set(key, seen ?? now);
    }
    if (since.size > 0) this.#unreadySince.set(deploymentId, since);
    else this.#unreadySince.delete(deploymentId);
    return stalled;
  }

  /**
   * The objects of a kind that carry this deployment's labels: from the watch cache once that
   * kind's watch in the namespace has listed (every status change of a rolling deployment wakes
   * it, and a listing per wake-up costs the API server most at scale), else listed.
   */
  async #ownedBy(
    kind: 'Pod' | 'PersistentVolumeClaim',
    namespace: string,
    deploymentId: string,
    signal: AbortSignal | undefined,
  ): Promise<readonly LiveKubeObject[]> {
    const cache = this.#o.cache;
    if (cache?.isSynced(kind, namespace)) return cache.byLabel(kind, namespace, deploymentId);
    return this.#o.kube.list(kind, {
      namespace,
      labelSelector: deploymentSelector(this.#o.listener().id, deploymentId),
      signal,
    });
  }
}
