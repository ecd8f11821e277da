// What is wrong with a pod, read from the few status fields that say so: a container waiting with
// a reason (back-offs, config errors) or the scheduler's PodScheduled=False condition.
import { z } from 'zod';

const ContainerStatus = z.looseObject({
  name: z.string().optional(),
  state: z.looseObject({ waiting: z.looseObject({ reason: z.string().optional() }).optional() }).optional(),
});

const PodCondition = z.looseObject({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
});

/** The pod status fields this module reads; anything else in the status is left alone. */
export const PodStatusFields = z.looseObject({
  status: z
    .looseObject({
      phase: z.string().optional(),
      conditions: z.array(PodCondition).optional().catch(undefined),
      initContainerStatuses: z.array(ContainerStatus).optional().catch(undefined),
      containerStatuses: z.array(ContainerStatus).optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
});
export type PodStatusFields = z.infer<typeof PodStatusFields>;

/**
 * The problem reasons of one pod: each waiting container's reason, and `Unschedulable` while the
 * scheduler finds no node for it. A pod whose status does not parse has no known problem.
 */
export function podProblemReasons(pod: unknown): string[] {
  const parsed = PodStatusFields.safeParse(pod);
  if (!parsed.success) return [];
  const status = parsed.data.status;
  const reasons: string[] = [];
  const unschedulable = status?.conditions?.some(
    (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
  );
  if (unschedulable && (status?.phase ?? 'Pending') === 'Pending') reasons.push('Unschedulable');
  for (const container of [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])]) {
    const reason = container.state?.waiting?.reason;
    if (reason) reasons.push(reason);
  }
  return [...new Set(reasons)];
}
