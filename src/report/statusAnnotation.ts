// The `k8s-listener.io/status` annotation on a deployment's inventory ConfigMap: the agent's last
// reported rollout status, read back by `k8s-listener status`. Pure.
import { z } from 'zod';
import { parseJsonOrUndefined } from '../jsonText.ts';

export const StatusAnnotation = z.object({
  revisionId: z.string().optional(),
  status: z.enum(['DEPLOYING', 'DEPLOYED', 'DEPLOY_FAILED']),
  reason: z.string().optional(),
  message: z.string().optional(),
  /** ISO time of the last transition: when this revision reached this status. */
  since: z.iso.datetime({ offset: true }).optional(),
});
export type StatusAnnotation = z.infer<typeof StatusAnnotation>;

/** The annotation's content, or undefined when it is absent or not ours to read. */
export function parseStatusAnnotation(text: string | undefined): StatusAnnotation | undefined {
  const parsed = StatusAnnotation.safeParse(parseJsonOrUndefined(text));
  return parsed.success ? parsed.data : undefined;
}

/**
 * The annotation to write. `since` moves only when the revision or its status changes: a new
 * message within the same status (`1 of 2 replicas updated` → `2 of 2`) is no transition.
 */
export function nextStatusAnnotation(
  previous: string | undefined,
  next: {
    readonly revisionId: string | undefined;
    readonly status: StatusAnnotation['status'];
    readonly reason: string;
    readonly message: string;
  },
  now: Date,
): string {
  const before = parseStatusAnnotation(previous);
  const same = before?.revisionId === next.revisionId && before?.status === next.status;
  const since = same && before?.since ? before.since : now.toISOString();
  return JSON.stringify({ ...next, since });
}
