// The body of `POST /v2/listeners/{listener_id}/status-reports`, the agent's extension of the
// control-plane interface (docs/architecture.md, "Reporting").
import { z } from 'zod';
import { DateTime, DeploymentStatus, Uuid } from './common.ts';

export const ReportedRevisionStatus = z.enum(['DEPLOYING', 'DEPLOYED', 'DEPLOY_FAILED']);
export type ReportedRevisionStatus = z.infer<typeof ReportedRevisionStatus>;

export const StatusReport = z.object({
  deployment_id: Uuid,
  deployment_status: DeploymentStatus.nullish(),
  revision_id: Uuid.nullish(),
  revision_status: ReportedRevisionStatus.nullish(),
  message: z.string().max(4096).nullish(),
  deleted: z.boolean().nullish(),
  observed_at: DateTime,
});
export type StatusReport = z.infer<typeof StatusReport>;

export const StatusReportBatch = z.object({ reports: z.array(StatusReport).min(1).max(1000) });
export type StatusReportBatch = z.infer<typeof StatusReportBatch>;
