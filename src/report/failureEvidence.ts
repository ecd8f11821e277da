// The evidence of a failing pod, in the words of whoever saw it fail: per container its waiting
// reason and message, its last termination (reason, exit code, the memory limit an OOMKill hit),
// its restart count and the last lines of its previous instance's log; the scheduler's message;
// the pod's latest warning Events. What the tenant, who has no access to the cluster, reads under
// a failed revision. Every line is masked (the deployment's secrets), terminal-safe and bounded.
// Pure: the pods, Events and logs are read by src/reconcile/steps/evidenceReader.ts.
import { z } from 'zod';
import { terminalText } from './terminalText.ts';

/** Longest line of evidence, in characters, after escaping. */
export const MAX_EVIDENCE_LINE = 240;
/** Characters kept of a longer line's start; the rest of the budget is its end. */
const KEPT_HEAD = 96;
/** The start of a line of a container's log in the evidence. */
const LOG_LINE = '  | ';
/** Warning Events told per pod, the latest. */
export const MAX_POD_EVENTS = 3;

const Terminated = z.looseObject({
  reason: z.string().optional(),
  message: z.string().optional(),
  exitCode: z.number().optional(),
});

const ContainerStatus = z.looseObject({
  name: z.string(),
  ready: z.boolean().optional(),
  restartCount: z.number().optional(),
  state: z
    .looseObject({
      waiting: z.looseObject({ reason: z.string().optional(), message: z.string().optional() }).optional(),
      running: z.looseObject({}).optional(),
      terminated: Terminated.optional(),
    })
    .optional(),
  lastState: z.looseObject({ terminated: Terminated.optional() }).optional(),
});
type ContainerStatus = z.infer<typeof ContainerStatus>;

const ContainerSpec = z.looseObject({
  name: z.string(),
  resources: z
    .looseObject({ limits: z.record(z.string(), z.union([z.string(), z.number()])).optional() })
    .optional(),
});

/** The fields of a pod the evidence is read from. */
export const EvidencePod = z.looseObject({
  metadata: z.looseObject({ name: z.string(), uid: z.string().optional() }),
  spec: z
    .looseObject({
      initContainers: z.array(ContainerSpec).optional().catch(undefined),
      containers: z.array(ContainerSpec).optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
  status: z
    .looseObject({
      phase: z.string().optional(),
      conditions: z
        .array(
          z.looseObject({
            type: z.string(),
            status: z.string(),
            reason: z.string().optional(),
            message: z.string().optional(),
          }),
        )
        .optional()
        .catch(undefined),
      initContainerStatuses: z.array(ContainerStatus).optional().catch(undefined),
      containerStatuses: z.array(ContainerStatus).optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
});
export type EvidencePod = z.infer<typeof EvidencePod>;

/** An events.k8s.io/v1 Event, the fields told of it. */
export const EvidenceEvent = z.looseObject({
  type: z.string().optional(),
  reason: z.string().optional(),
  note: z.string().optional(),
  eventTime: z.string().nullish(),
  deprecatedLastTimestamp: z.string().nullish(),
  series: z.looseObject({ lastObservedTime: z.string().optional() }).nullish(),
  metadata: z.looseObject({ creationTimestamp: z.string().optional() }).optional(),
});
export type EvidenceEvent = z.infer<typeof EvidenceEvent>;

/** What is known of one pod: the pod, its warning Events, the log tails read per container. */
export interface PodEvidenceInput {
  readonly pod: unknown;
  readonly events: readonly unknown[];
  /** Container name → the tail of its previous (or, when it never restarted, its ended) instance. */
  readonly logs: ReadonlyMap<string, string>;
}

/** Waiting reasons that are a container's ordinary start, not evidence. */
const ROUTINE_WAITING: ReadonlySet<string> = new Set(['ContainerCreating', 'PodInitializing']);

/**
 * One line: masked, escaped, cut to MAX_EVIDENCE_LINE in its middle. A message says last what went
 * wrong (a pull error's `…: not found` after the image reference it quotes twice, an exception's
 * words after its type), so a long line keeps its start and its end.
 */
function line(text: string, mask: (text: string) => string): string {
  const safe = terminalText(mask(text));
  if (safe.length <= MAX_EVIDENCE_LINE) return safe;
  return `${safe.slice(0, KEPT_HEAD)}…${safe.slice(safe.length - (MAX_EVIDENCE_LINE - KEPT_HEAD - 1))}`;
}

/**
 * The kubelet's `Error: ErrImagePull`, `Error: ImagePullBackOff`: a container's waiting reason
 * again, as an Event of its own beside the one with the words (`Failed to pull image …`).
 */
const BARE_REASON_NOTE = /^Error: [A-Za-z]+$/;

const unmasked = (text: string): string => text;

/** A container's own trouble: waiting (not routine), ended, restarted or not ready. */
function troubled(status: ContainerStatus): boolean {
  const waiting = status.state?.waiting?.reason;
  return (
    (waiting !== undefined && !ROUTINE_WAITING.has(waiting)) ||
    status.state?.terminated !== undefined ||
    status.lastState?.terminated !== undefined ||
    (status.restartCount ?? 0) > 0 ||
    (status.ready === false && status.state?.running !== undefined)
  );
}

function terminationText(terminated: z.infer<typeof Terminated>, memoryLimit: string | undefined): string {
  const parts = [terminated.reason ?? 'terminated'];
  if (terminated.exitCode !== undefined) parts.push(`exit code ${terminated.exitCode}`);
  if (terminated.reason === 'OOMKilled' && memoryLimit !== undefined)
    parts.push(`memory limit ${memoryLimit}`);
  const message = terminated.message?.trim();
  return message ? `${parts.join(', ')}: ${message}` : parts.join(', ');
}

/** The last lines of a log, each one line of evidence; a line cut by the byte budget is dropped. */
export function logTailLines(text: string, maxLines: number, truncated: boolean): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  else if (truncated) lines.pop();
  return lines.map((l) => l.replace(/\r$/, '')).slice(-maxLines);
}

function eventTime(event: EvidenceEvent): number {
  const at =
    event.series?.lastObservedTime ??
    event.eventTime ??
    event.deprecatedLastTimestamp ??
    event.metadata?.creationTimestamp;
  const parsed = at ? Date.parse(at) : Number.NaN;
  return Number.isFinite(parsed) ? parsed : 0;
}

/**
 * The evidence lines of one pod. `mask` replaces the deployment's secret values; `logLines` is how
 * many lines of each container's log are told (0: none).
 */
export function podEvidence(
  input: PodEvidenceInput,
  mask: (text: string) => string,
  options: { readonly logLines: number; readonly logTruncated?: (container: string) => boolean },
): string[] {
  const parsed = EvidencePod.safeParse(input.pod);
  if (!parsed.success) return [];
  const pod = parsed.data;
  const name = pod.metadata.name;
  const out: string[] = [];
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  if (scheduled)
    out.push(
      line(`pod ${name}: ${scheduled.reason ?? 'not scheduled'}: ${scheduled.message ?? ''}`.trim(), mask),
    );
  const specs = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const memoryLimitOf = (container: string): string | undefined => {
    const limit = specs.find((s) => s.name === container)?.resources?.limits?.memory;
    return limit === undefined ? undefined : String(limit);
  };
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const status of statuses.filter(troubled)) {
    const prefix = `pod ${name} container ${status.name}`;
    const restarts = `restarts: ${status.restartCount ?? 0}`;
    // The last exit on a line of its own, first: a long back-off message cut at the line's end
    // never hides it.
    const last = status.lastState?.terminated;
    if (last)
      out.push(
        line(`${prefix}: last exit: ${terminationText(last, memoryLimitOf(status.name))}; ${restarts}`, mask),
      );
    const waiting = status.state?.waiting;
    const now = waiting?.reason
      ? `waiting: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`
      : status.state?.terminated
        ? `terminated: ${terminationText(status.state.terminated, memoryLimitOf(status.name))}`
        : status.ready === false
          ? 'running, not ready'
          : undefined;
    if (now !== undefined) out.push(line(`${prefix}: ${last ? now : `${now}; ${restarts}`}`, mask));
    const log = input.logs.get(status.name);
    if (log !== undefined && options.logLines > 0) {
      // Masked whole before it is split: a value printed across lines is found whole.
      const tail = logTailLines(mask(log), options.logLines, options.logTruncated?.(status.name) ?? false);
      const which = last ? 'previous instance' : 'log';
      if (tail.length > 0) out.push(line(`${prefix} ${which}, last ${tail.length} lines:`, mask));
      for (const text of tail) out.push(line(`${LOG_LINE}${text}`, unmasked));
    }
  }
  const events = input.events
    .flatMap((raw) => {
      const event = EvidenceEvent.safeParse(raw);
      return event.success && event.data.type === 'Warning' && !BARE_REASON_NOTE.test(event.data.note ?? '')
        ? [event.data]
        : [];
    })
    .sort((a, b) => eventTime(a) - eventTime(b));
  // The latest of each reason and note (a repeated probe failure is one Event with a count).
  const seen = new Set<string>();
  const latest: EvidenceEvent[] = [];
  for (const event of events.reverse()) {
    const key = `${event.reason ?? ''}\u0000${event.note ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    latest.push(event);
    if (latest.length === MAX_POD_EVENTS) break;
  }
  for (const event of latest.reverse())
    out.push(line(`pod ${name} event ${event.reason ?? 'Warning'}: ${event.note ?? ''}`.trim(), mask));
  return out;
}

/**
 * Evidence lines under a budget of characters (joined by newlines). Over it, the earliest log
 * lines go first — a log's last lines say why (the exception after its traceback) — with one line
 * in their place saying how many; then, if still over, whole lines in order until the next would
 * not fit, and a last line says how many were left out.
 */
export function boundedEvidence(lines: readonly string[], maxChars: number): string[] {
  const size = (list: readonly string[]) => list.reduce((sum, text) => sum + text.length + 1, 0);
  if (size(lines) <= maxChars) return [...lines];
  const kept = [...lines];
  const first = kept.findIndex((text) => text.startsWith(LOG_LINE));
  let dropped = 0;
  // Room for the note in their place.
  while (first >= 0 && kept[first]?.startsWith(LOG_LINE) && size(kept) + 40 > maxChars) {
    kept.splice(first, 1);
    dropped++;
  }
  if (dropped > 0) kept.splice(first, 0, `${LOG_LINE}… ${dropped} earlier lines left out`);
  if (size(kept) <= maxChars) return kept;
  const cut: string[] = [];
  let used = 0;
  for (const [i, text] of kept.entries()) {
    const cost = text.length + 1;
    const left = kept.length - i;
    // Room for the note of what is left out, unless this is the last line.
    const reserve = left > 1 ? 40 : 0;
    if (used + cost + reserve > maxChars) {
      cut.push(`… ${left} more lines of evidence left out`);
      return cut;
    }
    cut.push(text);
    used += cost;
  }
  return cut;
}
