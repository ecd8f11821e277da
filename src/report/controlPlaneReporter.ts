// Reports rollout status to the control plane through the status-report extension: one batch
// per poll cycle holding only what changed, the latest status per deployment; 404/405 turns it
// off with one warning; a batch the control plane refuses for its content is dropped, not re-sent.
// An outcome (DEPLOYED, DEPLOY_FAILED) is not kept for the next poll: it is sent at once (after
// `promptMs`, which gathers outcomes reached together), unless a poll's listing is under way, whose
// flush sends it when the listing ends — so a tenant hears "deployed" as its server turns ready.
import type { Logger } from 'pino';
import { isControlPlaneError } from '../controlplane/errors.ts';
import type { StatusReport, StatusReportBatch } from '../controlplane/schemas/index.ts';
import type { AgentMetrics } from './metrics.ts';

export interface StatusReportSink {
  postStatusReports(listenerId: string, batch: StatusReportBatch): Promise<void>;
}

export type StatusChange = Omit<StatusReport, 'observed_at'>;

/** What a report the control plane took said of a deployment: what its listings then show. */
export type SentStatus = Pick<StatusChange, 'deployment_status' | 'revision_status'>;

/** Reports per request: the extension accepts at most 1,000, and a request stays well under 1 MiB. */
const MAX_BATCH = 500;
/** The extension's bound: a message with the evidence of a failure (deploymentReport.ts) fits. */
const MAX_MESSAGE = 4_096;
/** Reports kept per deployment between two listings: a rollout sends two or three. */
const MAX_SENT_KEPT = 4;
/** Refusals that another cycle can cure: credentials being rotated, a timeout, a rate limit. */
const RETRYABLE_REFUSALS: ReadonlySet<number> = new Set([401, 403, 408, 429]);

export class ControlPlaneReporter {
  readonly #sink: StatusReportSink;
  readonly #listenerId: string;
  readonly #logger: Logger;
  readonly #metrics: AgentMetrics | undefined;
  /** Last state sent (or queued) per deployment, to send only changes. */
  readonly #last = new Map<string, string>();
  readonly #pending = new Map<string, StatusReport>();
  /** What the control plane took since the last `takeSent`, per deployment, oldest first. */
  #sent = new Map<string, SentStatus[]>();
  #enabled = true;
  /** How soon an outcome is sent; undefined: at the next poll, as any status. */
  readonly #promptMs: number | undefined;
  #promptTimer: ReturnType<typeof setTimeout> | undefined;
  /** A poll's listing is under way (takeSent … flush): its flush sends what is recorded meanwhile. */
  #listing = false;
  /** The flush in progress: flushes run one after another, never sending a report twice. */
  #flushing: Promise<void> = Promise.resolve();
  #busy = false;

  constructor(options: {
    sink: StatusReportSink;
    listenerId: string;
    logger: Logger;
    metrics?: AgentMetrics;
    promptMs?: number | undefined;
  }) {
    this.#sink = options.sink;
    this.#listenerId = options.listenerId;
    this.#logger = options.logger.child({ component: 'status-reporter' });
    this.#metrics = options.metrics;
    this.#promptMs = options.promptMs;
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  /** Records a status; returns whether it differs from the last one recorded for the deployment. */
  record(change: StatusChange, now = new Date()): boolean {
    const message = change.message ? change.message.slice(0, MAX_MESSAGE) : change.message;
    const normalised: StatusChange = { ...change, message };
    const key = JSON.stringify([
      normalised.deployment_status,
      normalised.revision_id,
      normalised.revision_status,
      normalised.message,
      normalised.deleted,
    ]);
    if (this.#last.get(change.deployment_id) === key) return false;
    this.#last.set(change.deployment_id, key);
    if (change.deleted) this.#last.delete(change.deployment_id);
    if (!this.#enabled) return true;
    // One entry per deployment, the latest: bounded by the listener's deployments, and nothing
    // recorded is lost to a full queue.
    this.#pending.delete(change.deployment_id);
    this.#pending.set(change.deployment_id, { ...normalised, observed_at: now.toISOString() });
    if (change.revision_status === 'DEPLOYED' || change.revision_status === 'DEPLOY_FAILED') this.#prompt();
    return true;
  }

  /** An outcome was recorded: sent soon, unless a listing's flush will send it. */
  #prompt(): void {
    if (this.#promptMs === undefined || this.#promptTimer !== undefined || this.#listing) return;
    this.#promptTimer = setTimeout(() => {
      this.#promptTimer = undefined;
      if (!this.#listing) void this.#flushQueued();
    }, this.#promptMs);
    this.#promptTimer.unref();
  }

  /**
   * What the control plane took since the last call, per deployment, and forgets it. While a
   * listing is under way nothing is sent (the poller's `flush` after it sends what waited), and a
   * prompt send still in flight is waited for: a listing started after this resolves shows every
   * report it returns, and no other report of the agent's. (Taken before that send landed, a
   * status the listing already showed came back as a change, its revisions read again.)
   */
  async takeSent(): Promise<ReadonlyMap<string, readonly SentStatus[]>> {
    this.#listing = true;
    await this.#flushing.catch(() => undefined);
    const sent = this.#sent;
    this.#sent = new Map();
    return sent;
  }

  /** Forgets what was sent for a deployment, so its next status is sent even if unchanged. */
  forget(deploymentId: string): void {
    this.#last.delete(deploymentId);
  }

  /** The poll's flush: its listing is over; sends what is pending now. */
  flush(): Promise<void> {
    this.#listing = false;
    return this.#flushQueued();
  }

  /** Starts at once when no flush is in flight, else after it (what it sent is not sent again). */
  #flushQueued(): Promise<void> {
    const started = this.#busy ? this.#flushing.then(() => this.#sendPending()) : this.#sendPending();
    this.#busy = true;
    const done: Promise<void> = started.finally(() => {
      if (this.#flushing === done) this.#busy = false;
    });
    this.#flushing = done;
    return done;
  }

  /** Sends what is pending now, in batches; what fails stays for the next cycle. */
  async #sendPending(): Promise<void> {
    if (!this.#enabled) return;
    // A status recorded while this flush runs waits for the next one: a flush always ends.
    const queued = [...this.#pending.values()];
    for (let start = 0; start < queued.length && this.#enabled; start += MAX_BATCH) {
      const reports = queued.slice(start, start + MAX_BATCH);
      const outcome = await this.#send(reports);
      if (outcome === 'retry' || outcome === 'off') return;
      if (outcome === 'sent') for (const report of reports) this.#keepSent(report);
      // Sent or refused for good: drop exactly these (a newer status recorded meanwhile stays).
      for (const report of reports) {
        if (this.#pending.get(report.deployment_id) === report) this.#pending.delete(report.deployment_id);
      }
    }
  }

  #keepSent(report: StatusReport): void {
    const kept = this.#sent.get(report.deployment_id) ?? [];
    kept.push({ deployment_status: report.deployment_status, revision_status: report.revision_status });
    if (kept.length > MAX_SENT_KEPT) kept.shift();
    this.#sent.set(report.deployment_id, kept);
  }

  async #send(reports: StatusReport[]): Promise<'sent' | 'retry' | 'dropped' | 'off'> {
    try {
      await this.#sink.postStatusReports(this.#listenerId, { reports });
      this.#metrics?.statusReports.inc({ result: 'sent' });
      return 'sent';
    } catch (error) {
      const status = isControlPlaneError(error) ? error.status : undefined;
      if (status === 404 || status === 405) {
        this.#enabled = false;
        this.#pending.clear();
        this.#metrics?.statusReports.inc({ result: 'unsupported' });
        this.#logger.warn(
          { status },
          'the control plane does not offer the status-report extension; reporting to it is off (Kubernetes events, annotations, metrics and logs still carry status)',
        );
        return 'off';
      }
      if (status !== undefined && status >= 400 && status < 500 && !RETRYABLE_REFUSALS.has(status)) {
        // Sending the same batch again would be refused again, and would hold back every later one.
        this.#metrics?.statusReports.inc({ result: 'rejected' });
        this.#logger.warn(
          { err: error, status, dropped: reports.length },
          'the control plane refused a status report; dropped it; each of its deployments reports again on its next change',
        );
        return 'dropped';
      }
      this.#metrics?.statusReports.inc({ result: 'failed' });
      this.#logger.warn(
        { err: error, pending: this.#pending.size },
        'status report failed; will retry next cycle',
      );
      return 'retry';
    }
  }
}
