// One poll of the control plane: a complete listing of this listener's remotely reconciled
// deployments, revisions read only for what changed, and the prune guard on what vanished.
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { ControlPlaneClient } from '../../controlplane/client.ts';
import type { Deployment } from '../../controlplane/schemas/index.ts';
import type { ControlPlaneReporter, SentStatus } from '../../report/controlPlaneReporter.ts';
import { deploymentLogger } from '../../report/deploymentLogger.ts';
import type { AgentMetrics } from '../../report/metrics.ts';
import { decideVanished } from '../policy/pruneGuard.ts';
import type { ReconcileConfig } from '../policy/reconcileConfig.ts';
import { type DesiredState, type PresentEntry, resolveDesired } from './desiredState.ts';
import { listenerItems } from './listenerItems.ts';
import { deploymentFingerprint } from './target.ts';
import type { QueuePriority } from './workQueue.ts';

export interface PollerOptions {
  readonly client: ControlPlaneClient;
  readonly listenerId: string;
  readonly desired: DesiredState;
  /** Deployments that have objects in the cluster (from the inventories). */
  readonly knownIds: () => readonly string[];
  /** `low` for what the first listing finds: bulk work, behind changes and repairs. */
  readonly enqueue: (deploymentId: string, priority: QueuePriority) => void;
  readonly reporter: ControlPlaneReporter;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  readonly config: ReconcileConfig;
}

export class Poller {
  readonly #o: PollerOptions;
  readonly #log: Logger;
  #listedOnce = false;
  /** This poll's digest of each listed item, kept with the entry it becomes. */
  readonly #listedDigests = new Map<string, string>();
  /** Other listeners' items the last poll could not read: logged when first seen, not every poll. */
  #foreignUnreadable = new Set<string>();
  /** The agent's reports the control plane took before this poll's listing started. */
  #sentBeforeListing: ReadonlyMap<string, readonly SentStatus[]> = new Map();

  constructor(options: PollerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'poller' });
  }

  /** Returns false when the listing failed (and nothing was concluded from it). */
  async pollOnce(signal?: AbortSignal): Promise<boolean> {
    let listing: Awaited<ReturnType<ControlPlaneClient['listAllDeployments']>>;
    this.#listedDigests.clear();
    this.#sentBeforeListing = await this.#o.reporter.takeSent();
    try {
      listing = await this.#o.client.listAllDeployments(
        { remote_reconciled: true },
        { signal, reuse: (raw) => this.#unchanged(raw) },
      );
    } catch (error) {
      // Cancelled (shutdown, lost lease): nothing concluded, nothing sent.
      if (signal?.aborted) return false;
      // A failed or partial listing deletes nothing and changes nothing.
      this.#o.metrics.polls.inc({ result: 'failed' });
      this.#log.warn({ err: error }, 'listing deployments failed; keeping the last known state');
      await this.#o.reporter.flush();
      return false;
    }
    const { desired, listenerId } = this.#o;
    const withObjects = new Set(this.#o.knownIds());
    const known = new Set([...withObjects, ...desired.ids()]);
    // An unreadable deployment that never ran fails its latest revision (a client waiting on it
    // hears why); one already running keeps its revision's verdict and is told as a message.
    const failingRevision = (id: string, latest: string | undefined) =>
      withObjects.has(id) ? undefined : latest;
    const listed = new Set<string>();
    // The first listing holds every deployment (a cold sync, a restart, a new leader); later
    // ones, what changed.
    const priority: QueuePriority = this.#listedOnce ? 'normal' : 'low';
    this.#listedOnce = true;

    // Whose each item is: the same decision `diff` and `status` make (listenerItems.ts).
    const items = listenerItems(listing, listenerId, known);
    const completeForPrune = items.complete;
    const foreignUnreadable = new Set<string>();
    for (const invalid of items.foreign) {
      // Another listener's, by what can be read of it: not this one's to report, hold or wait
      // for. Refused for its nesting or its handling (not its schema, which a newer control
      // plane's items may fail in passing), it is logged by id, never by what it holds.
      if (invalid.id === undefined || invalid.error.code === 'SCHEMA_INVALID') continue;
      foreignUnreadable.add(invalid.id);
      if (!this.#foreignUnreadable.has(invalid.id))
        deploymentLogger(this.#log, { deploymentId: invalid.id }).warn(
          { code: invalid.error.code },
          "another listener's deployment cannot be read; skipped",
        );
    }
    for (const invalid of items.invalid) {
      listed.add(invalid.id);
      this.#invalid(
        invalid.id,
        invalid.error.message,
        failingRevision(invalid.id, invalid.identity?.latestRevisionId),
      );
    }
    this.#foreignUnreadable = foreignUnreadable;

    for (const deployment of items.mine) {
      // Listed: whatever happens below, its objects are not pruned.
      listed.add(deployment.id);
      try {
        await this.#take(deployment, priority, failingRevision, signal);
      } catch (error) {
        if (signal?.aborted) return false;
        // One deployment's failure is its own: reported as one that cannot be read (nothing is
        // written or deleted for it), and taken again at the next poll. The error's class only:
        // its message may quote the deployment.
        const kind = error instanceof Error ? error.name : typeof error;
        deploymentLogger(this.#log, { deploymentId: deployment.id }).warn(
          { errorClass: kind },
          'handling the listed deployment failed; held as invalid, nothing written or deleted for it',
        );
        this.#invalid(
          deployment.id,
          `deployment ${deployment.id} could not be handled (${kind})`,
          failingRevision(deployment.id, deployment.latest_revision_id ?? undefined),
        );
      }
    }

    if (completeForPrune) {
      const decision = decideVanished(known, listed, this.#o.config.prune);
      if (!decision.allowed) {
        this.#o.metrics.pruneRefusals.inc();
        this.#log.warn(
          { vanished: decision.vanished.length, reason: decision.reason },
          'deletions refused by the safety guard',
        );
      } else {
        for (const id of decision.vanished) {
          if (desired.get(id)?.kind === 'gone') continue;
          deploymentLogger(this.#log, { deploymentId: id }).info(
            'deployment gone from a complete listing; deleting its objects',
          );
          desired.set(id, { kind: 'gone' });
          this.#o.enqueue(id, 'normal');
        }
      }
    }
    this.#o.metrics.polls.inc({ result: 'ok' });
    await this.#o.reporter.flush();
    return true;
  }

  /** One listed deployment of this listener: held as it is, or its revisions read and it is queued. */
  async #take(
    deployment: Deployment,
    priority: QueuePriority,
    failingRevision: (id: string, latest: string | undefined) => string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { desired } = this.#o;
    const fingerprint = deploymentFingerprint(deployment);
    const listedDigest = this.#listedDigests.get(deployment.id);
    const previous = desired.get(deployment.id);
    if (previous?.kind === 'present' && previous.fingerprint === fingerprint) {
      if (previous.deployment === deployment) return;
      // Changed without a new update time (a value rewritten behind the interface): held as
      // listed, and reconciled when it differs.
      desired.set(deployment.id, { ...previous, deployment, listedDigest });
      if (!isDeepStrictEqual(previous.deployment, deployment)) this.#o.enqueue(deployment.id, 'normal');
      return;
    }
    if (previous?.kind === 'present' && this.#echoesOwnReport(previous, deployment)) {
      // Held as listed, so that the next poll takes it unparsed; nothing to read or do.
      desired.set(deployment.id, { ...previous, deployment, fingerprint, listedDigest });
      return;
    }
    let revisions: Awaited<ReturnType<ControlPlaneClient['listAllRevisions']>>;
    try {
      revisions = await this.#o.client.listAllRevisions(deployment.id, {}, { signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      deploymentLogger(this.#log, {
        deploymentId: deployment.id,
        revisionId: deployment.latest_revision_id ?? undefined,
        namespace: deployment.source_config.listener_config?.k8s_namespace ?? undefined,
      }).warn({ err: error }, 'reading revisions failed; will try again next poll');
      return;
    }
    // The one rule of what a listed deployment comes to (desiredState.ts): `diff`, `status` and
    // `render` resolve it alike. A revision it cannot read makes it invalid, never an older target.
    const resolved = resolveDesired(deployment, revisions, {
      failingRevision: failingRevision(deployment.id, deployment.latest_revision_id ?? undefined),
      listedDigest,
    });
    if (resolved.kind === 'invalid') {
      this.#invalid(deployment.id, resolved.message, resolved.revisionId);
      return;
    }
    desired.set(deployment.id, resolved);
    this.#o.enqueue(deployment.id, priority);
  }

  /**
   * The deployment as an earlier poll parsed it, when the listing's item is the very item that
   * poll held (the same digest of its JSON). Most of every listing is as it was; at 10,000
   * deployments parsing every field of each again was about half of a poll's CPU (a profile of the
   * agent), a digest a fraction of that. Any change is parsed, with or without a new update time:
   * a value rewritten behind the interface is validated like any other.
   */
  #unchanged(raw: unknown): Deployment | undefined {
    if (typeof raw !== 'object' || raw === null) return undefined;
    const id = (raw as Readonly<Record<string, unknown>>).id;
    if (typeof id !== 'string') return undefined;
    // The client has bounded the item's nesting (its maxJsonDepth) before this runs:
    // JSON.stringify recurses, and 4,450 levels overflowed it. Any throw here is the item's alone.
    const digest = createHash('sha256').update(JSON.stringify(raw)).digest('base64');
    this.#listedDigests.set(id, digest);
    const held = this.#o.desired.get(id);
    return held?.kind === 'present' && held.listedDigest === digest ? held.deployment : undefined;
  }

  /**
   * The listing differs from the held deployment only by what the agent's own status reports
   * changed: its status (one the agent sent since the last listing, or as it was when a report
   * carried none, as a DEPLOYING one does), the active revision and the update time. Without this
   * every report came back as a change at the next poll, and each one re-read the deployment's
   * revisions and reconciled it again: at 10,000 deployments some 30,000 revision reads and
   * reconciles in a cold sync, queued ahead of deployments not yet applied. The reports sent, not
   * the status last recorded: a status recorded after the last flush is not in this listing yet,
   * and was each rollout's second revision read. A failed revision is read again (its settled
   * verdict stops retries), and so is any other change, or one with no report of the agent's.
   */
  #echoesOwnReport(previous: PresentEntry, listed: Deployment): boolean {
    if (previous.target.settled !== undefined) return false;
    const sent = this.#sentBeforeListing.get(listed.id);
    if (!sent?.length || sent.some((report) => report.revision_status === 'DEPLOY_FAILED')) return false;
    if (previous.deployment.status === 'AWAITING_DELETE' || listed.status === 'AWAITING_DELETE') return false;
    const shown = sent.map((report) => report.deployment_status ?? previous.deployment.status);
    if (!shown.includes(listed.status)) return false;
    const ownFields = { status: undefined, active_revision_id: undefined, updated_at: undefined };
    return isDeepStrictEqual({ ...previous.deployment, ...ownFields }, { ...listed, ...ownFields });
  }

  /** A deployment of this listener that fails validation: reported, nothing written or deleted. */
  #invalid(id: string, message: string, revisionId: string | undefined): void {
    const previous = this.#o.desired.get(id);
    if (previous?.kind === 'invalid' && previous.message === message && previous.revisionId === revisionId)
      return;
    this.#o.desired.set(id, { kind: 'invalid', message, revisionId });
    this.#o.enqueue(id, 'normal');
  }
}
