// Reports rollout status to the control plane through the status-report extension: one batch
// per poll cycle holding only what changed, the latest status per deployment; 404/405 turns it
// off with one warning; a batch the control plane refuses for its content is dropped, not re-sent.
import type { Logger } from 'pino';
import { isControlPlaneError } from '../controlplane/errors.ts';
import type { StatusReport, StatusReportBatch } from '../controlplane/schemas/index.ts';
import type { AgentMetrics } from './metrics.ts';

export interface StatusReportSink {
  postStatusReports(listenerId: string, batch: StatusReportBatch): Promise<void>;
}

export type StatusChange = Omit<StatusReport, 'observed_at'>;

/** Reports per request: the extension accepts at most 1,000, and a request stays well under 1 MiB. */
const MAX_BATCH = 500;
const MAX_MESSAGE = 1_000;
/** Refusals that another cycle can cure: credentials being rotated, a timeout, a rate limit. */
const RETRYABLE_REFUSALS: ReadonlySet<number> = new Set([401, 403, 408, 429]);

export class StatusReporter {
  readonly #sink: StatusReportSink;
  readonly #listenerId: string;
  readonly #logger: Logger;
  readonly #metrics: AgentMetrics | undefined;
  /** Last state sent (or queued) per deployment, to send only changes. */
  readonly #last = new Map<string, string>();
  readonly #pending = new Map<string, StatusReport>();
  #enabled = true;

  constructor(options: {
    sink: StatusReportSink;
    listenerId: string;
    logger: Logger;
    metrics?: AgentMetrics;
  }) {
    this.#sink = options.sink;
    this.#listenerId = options.listenerId;
    this.#logger = options.logger.child({ component: 'status-reporter' });
    this.#metrics = options.metrics;
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
    return true;
  }

  /**
   * The deployment and revision status last recorded for a deployment (sent or queued), while
   * reports reach the control plane: what a listing shows of the agent's own reports.
   */
  recordedStatus(
    deploymentId: string,
  ): Pick<StatusChange, 'deployment_status' | 'revision_id' | 'revision_status'> | undefined {
    const key = this.#last.get(deploymentId);
    if (!this.#enabled || key === undefined) return undefined;
    // The key is this class's own JSON of the recorded fields (record above).
    const [deployment_status, revision_id, revision_status] = JSON.parse(key) as [
      StatusChange['deployment_status'],
      StatusChange['revision_id'],
      StatusChange['revision_status'],
    ];
    return { deployment_status, revision_id, revision_status };
  }

  /** Forgets what was sent for a deployment, so its next status is sent even if unchanged. */
  forget(deploymentId: string): void {
    this.#last.delete(deploymentId);
  }

  /** Sends what is pending now, in batches; what fails stays for the next cycle. */
  async flush(): Promise<void> {
    if (!this.#enabled) return;
    // A status recorded while this flush runs waits for the next one: a flush always ends.
    const queued = [...this.#pending.values()];
    for (let start = 0; start < queued.length && this.#enabled; start += MAX_BATCH) {
      const reports = queued.slice(start, start + MAX_BATCH);
      const outcome = await this.#send(reports);
      if (outcome === 'retry' || outcome === 'off') return;
      // Sent or refused for good: drop exactly these (a newer status recorded meanwhile stays).
      for (const report of reports) {
        if (this.#pending.get(report.deployment_id) === report) this.#pending.delete(report.deployment_id);
      }
    }
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
