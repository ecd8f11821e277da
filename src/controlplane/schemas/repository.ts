// Repository, the item of the repository-listing operations (interface §2.3).
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
