// Listener, as `GET /v2/listeners/{listener_id}` returns it, and the bodies that write one.
import { z } from 'zod';
import { DateTime, Uuid } from './common.ts';

// compute_config is specific to compute_type; for `k8s` it carries the namespaces. Other keys
// are kept so that a PUT that echoes the listener back does not erase them.
export const ComputeConfig = z.looseObject({ k8s_namespaces: z.array(z.string()).nullish() });

export const Listener = z.object({
  compute_type: z.string(),
  compute_id: z.string(),
  compute_config: ComputeConfig.nullish(),
  id: Uuid,
  created_at: DateTime,
  updated_at: DateTime,
  version: z.string().nullish(),
});
export type Listener = z.infer<typeof Listener>;

/** Body of POST /v2/listeners and PUT /v2/listeners/{id}: the writable fields. */
export const ListenerWrite = z.object({
  compute_type: z.string().min(1),
  compute_id: z.string().min(1),
  compute_config: ComputeConfig.nullish(),
  version: z.string().nullish(),
});
export type ListenerWrite = z.infer<typeof ListenerWrite>;
