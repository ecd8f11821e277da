// Reports rollout status to the control plane through the status-report extension: one batch
// per poll cycle holding only what changed; 404/405 turns it off with one warning.
import type { Logger } from 'pino';
import { isControlPlaneError } from '../controlplane/errors.ts';
import type { StatusReport, StatusReportBatch } from '../controlplane/schemas/index.ts';
import type { AgentMetrics } from './metrics.ts';

export interface StatusReportSink {
  postStatusReports(listenerId: string, batch: StatusReportBatch): Promise<void>;
}

export type StatusChange = Omit<StatusReport, 'observed_at'>;

const MAX_PENDING = 1_000;
const MAX_MESSAGE = 1_000;

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
    if (this.#pending.size >= MAX_PENDING && !this.#pending.has(change.deployment_id)) {
      this.#logger.warn(
        { deploymentId: change.deployment_id },
        'too many unsent status reports; dropping the oldest',
      );
      const oldest = this.#pending.keys().next().value;
      if (oldest !== undefined) this.#pending.delete(oldest);
    }
    this.#pending.set(change.deployment_id, { ...normalised, observed_at: now.toISOString() });
    return true;
  }

  /** Forgets what was sent for a deployment, so its next status is sent even if unchanged. */
  forget(deploymentId: string): void {
    this.#last.delete(deploymentId);
  }

  /** Sends everything pending in one request; failures keep it for the next cycle. */
  async flush(): Promise<void> {
    if (!this.#enabled || this.#pending.size === 0) return;
    const reports = [...this.#pending.values()];
    try {
      await this.#sink.postStatusReports(this.#listenerId, { reports });
      for (const report of reports) {
        if (this.#pending.get(report.deployment_id) === report) this.#pending.delete(report.deployment_id);
      }
      this.#metrics?.statusReports.inc({ result: 'sent' });
    } catch (error) {
      if (isControlPlaneError(error, 404) || isControlPlaneError(error, 405)) {
        this.#enabled = false;
        this.#pending.clear();
        this.#metrics?.statusReports.inc({ result: 'unsupported' });
        this.#logger.warn(
          { status: isControlPlaneError(error) ? error.status : undefined },
          'the control plane does not offer the status-report extension; reporting to it is off (Kubernetes events, annotations, metrics and logs still carry status)',
        );
        return;
      }
      this.#metrics?.statusReports.inc({ result: 'failed' });
      this.#logger.warn(
        { err: error, pending: reports.length },
        'status report failed; will retry next cycle',
      );
    }
  }
}
