// Repository, the item of `GET /v1/integrations/repohost/{integration_id}/repos` (and its hosted
// variant).
import { z } from 'zod';
import { Uuid } from './common.ts';

export const Repository = z.object({
  host_integration_id: Uuid,
  id: z.number().int(),
  name: z.string(),
  owner: z.string(),
  url: z.string(),
  default_branch: z.string(),
});
export type Repository = z.infer<typeof Repository>;
