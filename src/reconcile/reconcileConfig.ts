// The reconcile part of the agent configuration, with the defaults of DESIGN.md.
import { z } from 'zod';

export const ReconcileConfig = z.strictObject({
  pollIntervalMs: z.number().int().min(100).default(10_000),
  /** Each poll waits interval × (1 ± jitter), so replicas of many agents do not align. */
  pollJitter: z.number().min(0).max(0.9).default(0.2),
  /** Every deployment is reconciled again this often, even without a change. */
  resyncIntervalMs: z.number().int().min(1_000).default(600_000),
  concurrency: z.number().int().min(1).max(64).default(4),
  backoffBaseMs: z.number().int().min(1).default(1_000),
  backoffMaxMs: z.number().int().min(1).default(300_000),
  /** The queue refuses new keys beyond this many (one key per deployment). */
  maxQueuedKeys: z.number().int().min(1).default(10_000),
  /**
   * While a rollout is in progress, look again this often even without a watch event. Workload
   * status changes wake a reconcile through the watches; the recheck only finds what pods alone
   * show (a back-off past its grace period). 15 s, from bench:sync: at 5 s, 1,000 deployments
   * rolling out made 200 reconciles (and pod listings) a second.
   */
  rolloutRecheckMs: z.number().int().min(100).default(15_000),
  /** A pod in ImagePullBackOff or CrashLoopBackOff longer than this fails the rollout. */
  failureGraceMs: z.number().int().min(0).default(120_000),
  prune: z
    .strictObject({
      /** Refuse to delete when more than this share of known deployments vanish at once… */
      maxVanishedFraction: z.number().min(0).max(1).default(0.5),
      /** …and more than this many (small fleets can still lose one or two). */
      maxVanishedCount: z.number().int().min(0).default(2),
      /** Database volumes (PVCs) outlive their deployment unless this is false. */
      keepDatabaseVolumes: z.boolean().default(true),
    })
    .prefault({}),
  shutdownDrainMs: z.number().int().min(0).default(20_000),
  leaderElection: z
    .strictObject({
      enabled: z.boolean().default(true),
      leaseName: z.string().default('k8s-listener'),
      /** Defaults to the agent's own namespace (POD_NAMESPACE), else `default`. */
      leaseNamespace: z.string().optional(),
      leaseDurationMs: z.number().int().min(1_000).default(15_000),
      renewDeadlineMs: z.number().int().min(500).default(10_000),
      retryPeriodMs: z.number().int().min(100).default(2_000),
    })
    .prefault({}),
});
export type ReconcileConfig = z.infer<typeof ReconcileConfig>;
