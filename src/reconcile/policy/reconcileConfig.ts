// The reconcile part of the agent configuration, with its defaults. Each key's
// description is the text of the generated configuration reference (docs/configuration.md).
import { z } from 'zod';
import { DEFAULT_FAILURE_GRACE_MS } from '../../report/rolloutHealth.ts';

export const ReconcileConfig = z.strictObject({
  pollIntervalMs: z
    .number()
    .int()
    .min(100)
    .default(10_000)
    .describe('How often the control plane is polled.'),
  pollJitter: z
    .number()
    .min(0)
    .max(0.9)
    .default(0.2)
    .describe('Each poll waits interval × (1 ± jitter), so the replicas of many agents do not align.'),
  resyncIntervalMs: z
    .number()
    .int()
    .min(1_000)
    .default(600_000)
    .describe('Every deployment is reconciled again this often, even without a change.'),
  concurrency: z.number().int().min(1).max(64).default(4).describe('Deployments reconciled at once.'),
  backoffBaseMs: z
    .number()
    .int()
    .min(1)
    .default(1_000)
    .describe('First retry delay of a failed reconcile (doubles per failure).'),
  backoffMaxMs: z.number().int().min(1).default(300_000).describe('Longest retry delay.'),
  maxQueuedKeys: z
    .number()
    .int()
    .min(1)
    .default(20_000)
    .describe('The work queue refuses new keys beyond this many (one key per deployment).'),
  rolloutRecheckMs: z
    .number()
    .int()
    .min(100)
    .default(15_000)
    .describe(
      'While a rollout is in progress, look again this often even without a watch event (workload status changes wake a reconcile through the watches; the recheck finds what only pods show, such as a back-off past its grace period).',
    ),
  rolloutRechecksPerSecond: z
    .number()
    .int()
    .min(1)
    .default(20)
    .describe(
      'The rechecks of rollouts in progress, all together, stay within this many a second: with more rollouts at once than `rolloutRecheckMs` allows for (300 at the defaults, as in a cold sync of a large listener), each is looked at less often, in proportion. Watch events are not counted: a workload whose status changes is looked at at once when no deployment waits to be applied; a recheck or a status change waits behind those that do.',
    ),
  failureGraceMs: z
    .number()
    .int()
    .min(0)
    .default(DEFAULT_FAILURE_GRACE_MS)
    .describe(
      'A pod in `ImagePullBackOff`, `CrashLoopBackOff` or `CreateContainerConfigError` longer than this fails the rollout.',
    ),
  agentChangeRate: z
    .number()
    .int()
    .min(0)
    .default(10)
    .describe(
      'At most this many deployments a minute (per `agentChangeWindowMs`) start a rollout that comes from the agent itself — a new agent version or `render` configuration that changes their pod templates — rather than from a new revision; the others keep running as they are, wait their turn in the order they were first held (`status` shows them, `k8s_listener_agent_changes_waiting` counts them) and get an `AgentChangeApplied` Event when applied. A new revision is never held back. 0: unlimited.',
    ),
  agentChangeWindowMs: z
    .number()
    .int()
    .min(1_000)
    .default(60_000)
    .describe(
      'The window `agentChangeRate` counts in: at most that many agent changes start in any window of this length. Longer spreads an upgrade further.',
    ),
  prune: z
    .strictObject({
      maxVanishedFraction: z
        .number()
        .min(0)
        .max(1)
        .default(0.5)
        .describe(
          'Refuse to delete when more than this share of the known deployments vanish from one listing…',
        ),
      maxVanishedCount: z
        .number()
        .int()
        .min(0)
        .default(2)
        .describe('…and more than this many (small fleets can still lose one or two).'),
      keepDatabaseVolumes: z
        .boolean()
        .default(true)
        .describe(
          'Database volumes (PVCs) and their generated credentials Secrets outlive their deployment unless this is false.',
        ),
      keptVolumesPerDeployment: z
        .number()
        .int()
        .min(0)
        .max(100)
        .default(1)
        .describe(
          "How many earlier names' database volumes (claims and credentials) a renamed deployment keeps beside those of its current name; a rename past it deletes the oldest. None are kept when keepDatabaseVolumes is false.",
        ),
    })
    .prefault({})
    .describe('Removing what the control plane deleted.'),
  shutdownDrainMs: z
    .number()
    .int()
    .min(0)
    .default(20_000)
    .describe(
      'On SIGTERM, how long reconciles in flight may finish before the agent releases its Lease and exits.',
    ),
  leaderElection: z
    .strictObject({
      enabled: z.boolean().default(true).describe('Off: this process always writes (one replica only).'),
      leaseName: z.string().default('k8s-listener').describe('Name of the `coordination.k8s.io/v1` Lease.'),
      leaseNamespace: z
        .string()
        .optional()
        .describe("Namespace of the Lease; unset: the agent's own (`agentNamespace`)."),
      leaseDurationMs: z
        .number()
        .int()
        .min(1_000)
        .default(15_000)
        .describe('How long a lease is held without renewal.'),
      renewDeadlineMs: z
        .number()
        .int()
        .min(500)
        .default(10_000)
        .describe('The leader gives up (and exits) when it could not renew within this.'),
      retryPeriodMs: z
        .number()
        .int()
        .min(100)
        .default(2_000)
        .describe('How often the lease is tried and renewed.'),
    })
    .prefault({})
    .describe('Only the leader of a Lease polls and writes.'),
});
export type ReconcileConfig = z.infer<typeof ReconcileConfig>;
