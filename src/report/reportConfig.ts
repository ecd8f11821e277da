// The report part of the agent configuration: what evidence of a failing server reaches the
// tenant through the control plane. Each key's description is the text of the generated
// configuration reference (docs/configuration.md).
import { z } from 'zod';

export const ReportConfig = z.strictObject({
  containerLogLines: z
    .number()
    .int()
    .min(0)
    .max(50)
    .default(20)
    .describe(
      "Lines of a failing container's previous log (its last, at most 2 KiB) sent with a failed or stalled revision's status, each secret value of the deployment masked. 0: no log lines (the container's reasons, exit codes, the scheduler's message and warning Events are still sent).",
    ),
  evidenceIntervalMs: z
    .number()
    .int()
    .min(1_000)
    .default(30_000)
    .describe(
      "A failing deployment's pods, Events and logs are read at most once in this time, and again only when a pod changed (a restart, another reason): a crash loop sends one report per back-off, not a flood.",
    ),
});
export type ReportConfig = z.infer<typeof ReportConfig>;
