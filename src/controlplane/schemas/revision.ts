// Revision, the item of `GET /v2/deployments/{deployment_id}/revisions`.
import { z } from 'zod';
import { DateTime, RevisionStatus, Source, Uuid } from './common.ts';
import { SourceRevisionConfig } from './deployment.ts';

export const Revision = z.object({
  id: Uuid,
  created_at: DateTime,
  updated_at: DateTime,
  status: RevisionStatus,
  source: Source,
  source_revision_config: SourceRevisionConfig,
});
export type Revision = z.infer<typeof Revision>;
