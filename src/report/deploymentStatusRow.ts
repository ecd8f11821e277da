// What `k8s-listener status` shows, as pure functions: the row of one deployment derived from what
// was observed (control plane, inventory, live objects), the table and detail formatters, the
// documented JSON/YAML shape. The I/O that gathers the observations is
// src/cli/statusObserver.ts.
import { z } from 'zod';
import { fieldAt } from '../objects/fields.ts';
import { ROLLOUT_KINDS, WORKLOAD_KINDS } from '../objects/kinds.ts';
import { formatLocalRef } from '../objects/objectRef.ts';
import { ReconcileReason } from './reconcileReason.ts';
import {
  computeObjectStatus,
  computeRollout,
  type LiveObject,
  notedMessage,
  Reason,
} from './rolloutHealth.ts';
import type { StatusAnnotation } from './statusAnnotation.ts';
import { terminalText } from './terminalText.ts';

// --- The documented output shape (`--output json|yaml`)

/**
 * DEPLOYED: every object applied, unchanged, and available. DEPLOYING: a rollout in progress, or
 * the agent has not yet applied what the control plane asks for. DRIFTED: an object was changed
 * or deleted by hand (the agent puts it back). DEPLOY_FAILED: the reason says why.
 */
export const StatusState = z.enum(['DEPLOYED', 'DEPLOYING', 'DRIFTED', 'DEPLOY_FAILED', 'SUSPENDED']);
export type StatusState = z.infer<typeof StatusState>;

export const WorkloadReplicas = z.object({
  /** `main`, `queue`, `orchestrator`, `database`, `kvstore`. */
  component: z.string(),
  kind: z.string(),
  name: z.string(),
  /** spec.replicas of the live workload (0 when it does not exist). */
  desired: z.number().int().nonnegative(),
  ready: z.number().int().nonnegative(),
});
export type WorkloadReplicas = z.infer<typeof WorkloadReplicas>;

export const StatusRow = z.object({
  id: z.string(),
  name: z.string(),
  namespace: z.string().nullable(),
  /** The target revision, chosen by the agent's own rules. */
  revisionId: z.string().nullable(),
  /** That revision's status in the control plane (what the agent reported). */
  revisionStatus: z.string().nullable(),
  state: StatusState,
  /** A kstatus-style reason constant, e.g. `Current`, `UpdatingReplicas`, `RenderInvalid`. */
  reason: z.string(),
  message: z.string(),
  /** ISO time of the last transition, when known (null for a hand edit). */
  since: z.string().nullable(),
  workloads: z.array(WorkloadReplicas),
  /** An operator's suspension in effect (`k8s-listener suspend`): who, when, why. */
  suspension: z
    .object({
      scope: z.enum(['deployment', 'listener']),
      by: z.string(),
      at: z.string(),
      reason: z.string(),
    })
    .nullable()
    .optional(),
  /** Its change comes from the agent itself (a new version or render configuration) and waits its turn. */
  agentChangeWaiting: z.boolean().optional(),
});
export type StatusRow = z.infer<typeof StatusRow>;
export type RowSuspension = NonNullable<StatusRow['suspension']>;

export const StatusList = z.object({
  listenerId: z.string(),
  observedAt: z.string(),
  deployments: z.array(StatusRow),
  /** How many deployments' changes from the agent itself wait for the agent change rate. */
  agentChangesWaiting: z.number().int().nonnegative().optional(),
});
export type StatusList = z.infer<typeof StatusList>;

export const ObjectStatusRow = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  namespace: z.string(),
  name: z.string(),
  component: z.string(),
  /** kstatus: Current, InProgress, Failed, Terminating, NotFound. */
  status: z.string(),
  reason: z.string(),
  message: z.string(),
  /** The first field changed by hand, when the object drifted from what the agent applied. */
  drift: z.string().nullable(),
});
export type ObjectStatusRow = z.infer<typeof ObjectStatusRow>;

export const EventRow = z.object({
  time: z.string().nullable(),
  type: z.string(),
  reason: z.string(),
  /** `Kind/name` of the object the Event is about. */
  object: z.string(),
  message: z.string(),
  count: z.number().int().positive(),
});
export type EventRow = z.infer<typeof EventRow>;

export const DeploymentDetail = z.object({
  listenerId: z.string(),
  observedAt: z.string(),
  deployment: StatusRow,
  objects: z.array(ObjectStatusRow),
  events: z.array(EventRow),
});
export type DeploymentDetail = z.infer<typeof DeploymentDetail>;

// --- Deriving a row from observations

export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** One object of a deployment as observed: desired (rendered now), recorded, or both. */
export interface ObservedObject {
  readonly ref: ObjectRef;
  readonly component: string;
  readonly live: LiveObject | undefined;
  /** The agent would apply this object now (it is in the rendered set). */
  readonly desired: boolean;
  /** Recorded in the deployment's inventory: the agent applied it at least once. */
  readonly recorded: boolean;
  /** The live object carries the spec hash of what the agent would apply now. */
  readonly applied: boolean;
  /** The first field a hand edit changed, for an applied object. */
  readonly drift: string | undefined;
}

export interface RowInput {
  readonly id: string;
  readonly name: string;
  readonly namespace: string | undefined;
  readonly revisionId: string | undefined;
  readonly revisionStatus: string | undefined;
  /** When the control plane last changed the target revision (the fallback transition time). */
  readonly revisionUpdatedAt: string | undefined;
  /** The target revision already failed or was given up: the agent does not roll it out. */
  readonly settled: string | undefined;
  /** AWAITING_DELETE, or gone from the listing while its objects remain. */
  readonly deleting: string | undefined;
  /** Why the deployment cannot be rendered (schema or render problems). */
  readonly invalid: string | undefined;
  readonly annotation: StatusAnnotation | undefined;
  readonly objects: readonly ObservedObject[];
  /** The deployment's claims (database volumes), for the database's readiness. */
  readonly claims: readonly LiveObject[];
  readonly now: number;
  readonly failureGraceMs: number;
  /** Render notes the agent adds to a rollout's message (e.g. dev_zero runs as dev). */
  readonly statusNotes?: readonly string[] | undefined;
}

const count = (value: unknown): number => (typeof value === 'number' && value >= 0 ? value : 0);

/** The order workloads are listed in: the application first, then its data stores. */
const COMPONENT_ORDER = ['main', 'queue', 'orchestrator', 'database', 'kvstore'];
const componentRank = (component: string): number => {
  const rank = COMPONENT_ORDER.indexOf(component);
  return rank === -1 ? COMPONENT_ORDER.length : rank;
};

export function workloadsOf(objects: readonly ObservedObject[]): WorkloadReplicas[] {
  return objects
    .filter((o) => o.desired && WORKLOAD_KINDS.has(o.ref.kind))
    .toSorted((a, b) => componentRank(a.component) - componentRank(b.component))
    .map((o) => ({
      component: o.component,
      kind: o.ref.kind,
      name: o.ref.name,
      desired: o.live
        ? fieldAt(o.live, 'spec', 'replicas') === undefined
          ? 1
          : count(fieldAt(o.live, 'spec', 'replicas'))
        : 0,
      ready: count(fieldAt(o.live, 'status', 'readyReplicas')),
    }));
}

/**
 * The state of one deployment. Failures win (an invalid spec, the agent's own verdict for this
 * revision, a settled revision, a failed workload), then what the agent has yet to apply, then
 * hand edits, then the rollout of the live workloads.
 */
export function deriveStatusRow(input: RowInput): StatusRow {
  const sameRevision = input.annotation !== undefined && input.annotation.revisionId === input.revisionId;
  // The agent's transition time holds for the state it reported; a hand edit has no known time;
  // otherwise the control plane's last change of the revision (created, or a status reported).
  const sinceOf = (state: StatusState): string | null => {
    if (sameRevision && input.annotation?.status === state && input.annotation.since)
      return input.annotation.since;
    return state === 'DRIFTED' ? null : (input.revisionUpdatedAt ?? null);
  };
  const row = (state: StatusState, reason: string, message: string): StatusRow => ({
    id: input.id,
    name: input.name,
    namespace: input.namespace ?? null,
    revisionId: input.revisionId ?? null,
    revisionStatus: input.revisionStatus ?? null,
    state,
    reason,
    message,
    since: sinceOf(state),
    workloads: workloadsOf(input.objects),
  });

  if (input.invalid !== undefined) return row('DEPLOY_FAILED', ReconcileReason.RenderInvalid, input.invalid);
  if (sameRevision && input.annotation?.status === 'DEPLOY_FAILED') {
    return row(
      'DEPLOY_FAILED',
      input.annotation.reason ?? 'DeployFailed',
      input.annotation.message ?? 'the agent reported the rollout failed',
    );
  }
  if (input.settled !== undefined) {
    return row(
      'DEPLOY_FAILED',
      'RevisionSettled',
      `revision ${shortId(input.revisionId ?? '')} is ${input.settled} in the control plane; a new revision or a redeploy is needed`,
    );
  }
  const rollout = computeRollout({
    objects: [
      ...input.objects
        .filter((o) => o.desired && ROLLOUT_KINDS.has(o.ref.kind))
        .map((o) => ({ component: o.component, object: o.live })),
      ...input.claims.map((claim) => ({
        component: String(fieldAt(claim, 'metadata', 'labels', 'app.kubernetes.io/component') ?? 'database'),
        object: claim,
      })),
    ],
    podProblems: [],
    now: input.now,
    failureGraceMs: input.failureGraceMs,
  });
  if (rollout.revisionStatus === 'DEPLOY_FAILED')
    return row('DEPLOY_FAILED', rollout.reason, rollout.message);
  if (input.deleting !== undefined) return row('DEPLOYING', 'Deleting', input.deleting);

  const pending = input.objects.find((o) => o.desired && (o.live ? !o.applied : !o.recorded));
  if (pending) {
    return row(
      'DEPLOYING',
      'NotApplied',
      `waiting for the agent to apply ${formatLocalRef(pending.ref)}${pending.live ? ' (changed)' : ''}`,
    );
  }
  const deleted = input.objects.find((o) => o.desired && o.recorded && !o.live);
  if (deleted) return row('DRIFTED', 'Drifted', `${formatLocalRef(deleted.ref)} was deleted by hand`);
  const drifted = input.objects.find((o) => o.desired && o.drift !== undefined);
  if (drifted)
    return row('DRIFTED', 'Drifted', `${formatLocalRef(drifted.ref)}: ${drifted.drift} changed by hand`);

  // As the agent reports: a revision once DEPLOYED stays so while an autoscaler adds replicas.
  if (rollout.revisionStatus === 'DEPLOYING' && !(sameRevision && input.annotation?.status === 'DEPLOYED'))
    return row('DEPLOYING', rollout.reason, notedMessage(rollout.message, input.statusNotes));
  return row('DEPLOYED', Reason.Current, notedMessage('all workloads are available', input.statusNotes));
}

/**
 * A suspended deployment shows SUSPENDED, with who, when and why, followed by what its objects
 * would show otherwise (the agent keeps reporting its rollout while it applies nothing).
 */
export function withSuspension(row: StatusRow, suspension: RowSuspension | undefined): StatusRow {
  if (!suspension) return row;
  const who = suspension.scope === 'listener' ? 'the whole listener suspended' : 'suspended';
  const why = suspension.reason ? `: ${suspension.reason}` : '';
  return {
    ...row,
    state: 'SUSPENDED',
    reason: 'Suspended',
    message: `${who} by ${suspension.by}${why}; underneath ${row.state}: ${row.message}`,
    since: suspension.at || row.since,
    suspension,
  };
}

/** The note of a deployment whose change from the agent itself waits (its report, and `status`). */
export const AGENT_CHANGE_WAITING = 'waiting for the agent change rate (reconcile.agentChangeRate)';

/**
 * A deployment not yet applied only because the agent renders its same revision anew (a new
 * version or render configuration) says it waits for the agent change rate: it runs as it is
 * until its turn. Anything the row already says that matters more (a failure, a hand edit) stays.
 */
export function withAgentChangeWaiting(row: StatusRow, waiting: boolean): StatusRow {
  if (!waiting || row.reason !== 'NotApplied') return row;
  return {
    ...row,
    reason: 'AgentChangeWaiting',
    message: `${AGENT_CHANGE_WAITING}: the agent's new render of this revision rolls out in turn; until then it runs as it is`,
    agentChangeWaiting: true,
  };
}

/** How many rows wait for the agent change rate. */
export function agentChangesWaiting(rows: readonly StatusRow[]): number {
  return rows.filter((row) => row.agentChangeWaiting === true).length;
}

/** The kstatus-style status of each object, for `status DEPLOYMENT`. */
export function objectStatusRows(
  objects: readonly ObservedObject[],
  claims: readonly LiveObject[],
  clock: { now: number; failureGraceMs: number },
): ObjectStatusRow[] {
  const rows = objects.map((o) => {
    const status = computeObjectStatus(o.live, clock);
    return {
      apiVersion: o.ref.apiVersion,
      kind: o.ref.kind,
      namespace: o.ref.namespace,
      name: o.ref.name,
      component: o.component,
      status: status.status,
      reason: status.reason,
      message: o.desired ? status.message : `${status.message} (no longer desired: pruned by the agent)`,
      drift: o.drift ?? null,
    };
  });
  for (const claim of claims) {
    const status = computeObjectStatus(claim, clock);
    rows.push({
      apiVersion: claim.apiVersion,
      kind: claim.kind,
      namespace: String(fieldAt(claim, 'metadata', 'namespace') ?? ''),
      name: claim.metadata.name,
      component: String(fieldAt(claim, 'metadata', 'labels', 'app.kubernetes.io/component') ?? 'database'),
      status: status.status,
      reason: status.reason,
      message: status.message,
      drift: null,
    });
  }
  return rows;
}

// --- Formatting

/** `5s`, `3m`, `2h`, `4d`; a time in the future reads `0s`. */
export function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

export function ageSince(iso: string | null | undefined, now: number): string {
  const at = iso ? Date.parse(iso) : Number.NaN;
  return Number.isFinite(at) ? formatAge(now - at) : '-';
}

/** The first 8 characters of an id, as the table shows revisions. */
export function shortId(id: string): string {
  return id.slice(0, 8);
}

const COMPONENT_SHORT: Record<string, string> = { database: 'db' };

/** `main 2/2 queue 1/1 db 1/1`. */
export function formatReplicas(workloads: readonly WorkloadReplicas[]): string {
  if (workloads.length === 0) return '-';
  return workloads
    .map((w) => `${COMPONENT_SHORT[w.component] ?? w.component} ${w.ready}/${w.desired}`)
    .join(' ');
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim();

/**
 * Columns separated by two spaces, each as wide as its widest cell; the last is not padded. Cells
 * hold tenants' strings: each is escaped (terminalText), so a row is one line and moves no cursor.
 */
export function formatColumns(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const printed = [header, ...rows].map((cells) => cells.map(terminalText));
  const widths = header.map((_h, i) => Math.max(...printed.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${printed.map(line).join('\n')}\n`;
}

export const STATUS_TABLE_HEADER = [
  'NAME',
  'NAMESPACE',
  'REVISION',
  'REPLICAS',
  'STATE',
  'AGE',
  'MESSAGE',
] as const;

/** The cells of one row, as the table prints them. */
export function statusTableCells(row: StatusRow, now: number): string[] {
  return [
    row.name,
    row.namespace ?? '-',
    row.revisionId ? shortId(row.revisionId) : '-',
    formatReplicas(row.workloads),
    row.state,
    ageSince(row.since, now),
    oneLine(row.message),
  ];
}

/** The table of `k8s-listener status`, sorted by namespace then name. */
export function formatStatusTable(rows: readonly StatusRow[], now: number): string {
  if (rows.length === 0) return 'No deployments are bound to this listener.\n';
  const sorted = [...rows].sort(
    (a, b) => (a.namespace ?? '').localeCompare(b.namespace ?? '') || a.name.localeCompare(b.name),
  );
  const table = formatColumns(
    STATUS_TABLE_HEADER,
    sorted.map((row) => statusTableCells(row, now)),
  );
  const waiting = agentChangesWaiting(rows);
  return waiting === 0
    ? table
    : `${table}\n${waiting} of ${rows.length} deployments wait for the agent change rate (reconcile.agentChangeRate).\n`;
}

/** `status DEPLOYMENT`: the deployment, its objects with their status, its recent Events. */
export function formatDeploymentDetail(detail: DeploymentDetail, now: number): string {
  const d = detail.deployment;
  const fields: [string, string][] = [
    ['Deployment', `${d.name} (${d.id})`],
    ['Namespace', d.namespace ?? '-'],
    [
      'Revision',
      d.revisionId ? `${d.revisionId} (${d.revisionStatus ?? 'unknown'} in the control plane)` : '-',
    ],
    ['State', `${d.state} for ${ageSince(d.since, now)}`],
    ['Reason', d.reason],
    ['Message', oneLine(d.message)],
    ['Replicas', formatReplicas(d.workloads)],
  ];
  const width = Math.max(...fields.map(([k]) => k.length)) + 2;
  const head = fields.map(([k, v]) => `${`${k}:`.padEnd(width)}${terminalText(v)}`).join('\n');
  const objects =
    detail.objects.length === 0
      ? 'No objects.\n'
      : formatColumns(
          ['KIND', 'NAME', 'COMPONENT', 'STATUS', 'MESSAGE'],
          detail.objects.map((o) => [
            o.kind,
            o.name,
            o.component,
            o.drift === null ? o.status : `${o.status} (drifted)`,
            oneLine(o.drift === null ? o.message : `${o.drift} changed by hand; ${o.message}`),
          ]),
        );
  const events =
    detail.events.length === 0
      ? 'No recent events.\n'
      : formatColumns(
          ['AGE', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'],
          detail.events.map((e) => [
            ageSince(e.time, now),
            e.type,
            e.reason,
            e.object,
            oneLine(e.count > 1 ? `${e.message} (x${e.count})` : e.message),
          ]),
        );
  return `${head}\n\nObjects:\n${objects}\nEvents:\n${events}`;
}
