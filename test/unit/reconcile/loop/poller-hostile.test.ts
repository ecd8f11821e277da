// One hostile item in a listing fails alone. The real client against the real emulator, through a
// proxy that adds a raw item to the first page of each listing: nested thousands deep (past what
// JSON.stringify can write, so no emulator could serve it), huge, of the wrong types, with unknown
// fields or nulls, another listener's or this one's. Every other deployment is taken and
// reconciled, and one gone from the listing is pruned, as without it.
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlaneClient } from '../../../../src/controlplane/client.ts';
import { DesiredState } from '../../../../src/reconcile/loop/desiredState.ts';
import { Poller } from '../../../../src/reconcile/loop/poller.ts';
import { ReconcileConfig } from '../../../../src/reconcile/policy/reconcileConfig.ts';
import { ControlPlaneReporter } from '../../../../src/report/controlPlaneReporter.ts';
import { createMetrics } from '../../../../src/report/metrics.ts';
import {
  type Harness,
  SEED_DEPLOYMENTS,
  SEED_LISTENER_ID,
  startHarness,
} from '../../../support/emulatorHarness.ts';
import { type FaultyControlPlane, startFaultyControlPlane } from '../../../support/faultyControlPlane.ts';
import { textSink } from '../../../support/textSink.ts';

const OTHER_LISTENER_ID = '00000000-0000-4000-8000-0000000000ff';
/** A deployment this listener has objects for that the listing no longer holds: pruned. */
const VANISHED_ID = '3f8d6c1e-1a2b-4c3d-8e4f-0000000009ff';
/** The hostile item's id, when it has one, and when this listener has objects for it. */
const HOSTILE_ID = '3f8d6c1e-1a2b-4c3d-8e4f-0000000008ff';
/** Somewhere in each hostile item: never in a log line or a reported message. */
const MARKER = 'hostile-content-marker';

let harness: Harness;
let proxy: FaultyControlPlane;
let client: ControlPlaneClient;

beforeAll(async () => {
  harness = await startHarness();
  proxy = await startFaultyControlPlane(harness.emulator.url);
  client = new ControlPlaneClient({ baseUrl: proxy.url, logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await client.close();
  await proxy.close();
  await harness.close();
});

interface Run {
  readonly poller: Poller;
  readonly desired: DesiredState;
  readonly enqueued: string[];
  readonly log: () => string;
}

function newRun(knownIds: readonly string[], enqueue: (id: string) => void = () => {}): Run {
  const desired = new DesiredState();
  const enqueued: string[] = [];
  const sink = textSink();
  const logger = pino({ level: 'debug' }, sink.stream);
  const metrics = createMetrics({ defaultMetrics: false });
  const reporter = new ControlPlaneReporter({ sink: client, listenerId: SEED_LISTENER_ID, logger, metrics });
  const poller = new Poller({
    client,
    listenerId: SEED_LISTENER_ID,
    desired,
    knownIds: () => knownIds,
    enqueue: (id) => {
      enqueue(id);
      enqueued.push(id);
    },
    reporter,
    metrics,
    logger,
    config: ReconcileConfig.parse({}),
  });
  return { poller, desired, enqueued, log: sink.text };
}

/** `{"nest":…}` or `[…]`, `levels` deep, around the marker, as text. */
const nestedText = (levels: number, arrays = false) =>
  arrays
    ? `${'['.repeat(levels)}"${MARKER}"${']'.repeat(levels)}`
    : `${'{"nest":'.repeat(levels)}"${MARKER}"${'}'.repeat(levels)}`;

/** A deployment item as the control plane lists it, as a JSON object. */
function deploymentItem(id: string, listenerId: string): Record<string, unknown> {
  return {
    id,
    tenant_id: '00000000-0000-4000-8000-000000000001',
    name: 'hostile',
    source: 'external_container',
    source_config: { listener_id: listenerId, listener_config: { k8s_namespace: 'apps' } },
    source_revision_config: { image_uri: 'nginx:1.27' },
    secrets: [],
    status: 'READY',
    created_at: '2026-11-01T09:04:00Z',
    updated_at: '2026-11-01T09:04:00Z',
    latest_revision_id: null,
    active_revision_id: null,
  };
}

/** Replaces the value at `path` of the item's JSON with raw text (which may be nested past any parser's walk). */
function withRaw(item: Record<string, unknown>, path: readonly string[], raw: string): string {
  const placeholder = '"__raw_placeholder__"';
  const copy = structuredClone(item);
  let at: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    const next = at[key];
    at[key] = typeof next === 'object' && next !== null && !Array.isArray(next) ? next : {};
    at = at[key] as Record<string, unknown>;
  }
  at[path.at(-1) ?? 'extra'] = '__raw_placeholder__';
  return JSON.stringify(copy).replace(placeholder, () => raw);
}

const FIELD_PATHS: readonly (readonly string[])[] = [
  ['labels'],
  ['source_config', 'resource_spec', 'labels'],
  ['source_config', 'resource_spec', 'volumes'],
  ['source_config', 'listener_config'],
  ['source_revision_config'],
  ['secrets'],
  ['name'],
  ['unknown_field'],
];

/** One hostile item: the ways a control plane's item can be wrong, written out by `hostileText`. */
type Hostile =
  | {
      readonly kind: 'deep';
      readonly path: readonly string[];
      readonly levels: number;
      readonly arrays: boolean;
    }
  | { readonly kind: 'large'; readonly path: readonly string[] }
  | { readonly kind: 'wrong'; readonly path: readonly string[]; readonly value: unknown }
  | { readonly kind: 'raw'; readonly text: string };

const hostile: fc.Arbitrary<Hostile> = fc.oneof(
  // Nested past the bound, at depths up to and past where a recursive walk overflows.
  fc.record({
    kind: fc.constant('deep' as const),
    path: fc.constantFrom(...FIELD_PATHS),
    levels: fc.oneof(fc.integer({ min: 65, max: 200 }), fc.integer({ min: 4_000, max: 8_000 })),
    arrays: fc.boolean(),
  }),
  // Large: a 2 MiB value (under the body caps).
  fc.record({ kind: fc.constant('large' as const), path: fc.constantFrom(...FIELD_PATHS) }),
  // Wrong types, nulls and unknown fields, at the top or in source_config.
  fc.record({
    kind: fc.constant('wrong' as const),
    path: fc.constantFrom(...FIELD_PATHS, ['id'], ['source_config'], ['source_config', 'listener_id']),
    value: fc.oneof(
      fc.constant(null),
      fc.constant(MARKER),
      fc.integer(),
      fc.boolean(),
      fc.jsonValue({ maxDepth: 4 }).map((v) => ({ [MARKER]: v })),
      fc.array(fc.constant(MARKER), { maxLength: 3 }),
    ),
  }),
  // Not an object at all.
  fc.record({
    kind: fc.constant('raw' as const),
    text: fc.constantFrom('null', '7', `"${MARKER}"`, `["${MARKER}"]`, 'true', '{}'),
  }),
);

function hostileText(item: Hostile, base: Record<string, unknown>): string {
  switch (item.kind) {
    case 'deep':
      return withRaw(base, item.path, nestedText(item.levels, item.arrays));
    case 'large':
      return withRaw(base, item.path, JSON.stringify(`${MARKER}${'x'.repeat(2 * 2 ** 20)}`));
    case 'wrong':
      return withRaw(base, item.path, JSON.stringify(item.value));
    case 'raw':
      return item.text;
  }
}

const seedIds = Object.values(SEED_DEPLOYMENTS);

/** The seed's deployments are taken (present, queued) and the vanished one pruned, whatever the hostile item. */
function expectOthersTaken(run: Run): void {
  for (const id of seedIds) expect(run.desired.get(id)?.kind, id).toBe('present');
  expect(run.enqueued).toEqual(expect.arrayContaining(seedIds));
}

describe('one hostile item in a listing', () => {
  // The reported attack: another listener's deployment nested 5,000 deep (9 KB) overflowed the
  // poller's digest of it, and the whole listing failed, every poll: nothing converged or pruned.
  it("another listener's item nested 5,000 deep fails alone: the rest are taken, one gone is pruned, the item logged by id only", async () => {
    const id = '00000000-0000-4000-8000-0000000007ff';
    proxy.injected.splice(
      0,
      Infinity,
      withRaw(
        deploymentItem(id, OTHER_LISTENER_ID),
        ['source_config', 'resource_spec', 'labels'],
        nestedText(5_000),
      ),
    );
    const run = newRun([...seedIds, VANISHED_ID]);
    expect(await run.poller.pollOnce()).toBe(true);
    expectOthersTaken(run);
    expect(run.desired.get(VANISHED_ID)?.kind).toBe('gone');
    expect(run.desired.get(id)).toBeUndefined();
    expect(run.enqueued).not.toContain(id);
    // Logged once, by id and why, never its content; not again while it stays as it is.
    const lines = run
      .log()
      .split('\n')
      .filter((line) => line.includes(id));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      deployment_id: id,
      code: 'TOO_DEEP',
      msg: "another listener's deployment cannot be read; skipped",
    });
    expect(run.log()).not.toContain(MARKER);
    expect(await run.poller.pollOnce()).toBe(true);
    expect(
      run
        .log()
        .split('\n')
        .filter((line) => line.includes(id)),
    ).toHaveLength(1);
  });

  it("this listener's own item nested 5,000 deep: reported failed and kept, never pruned; the rest are taken", async () => {
    proxy.injected.splice(
      0,
      Infinity,
      withRaw(
        deploymentItem(HOSTILE_ID, SEED_LISTENER_ID),
        ['source_config', 'resource_spec', 'labels'],
        nestedText(5_000),
      ),
    );
    const run = newRun([...seedIds, HOSTILE_ID, VANISHED_ID]);
    expect(await run.poller.pollOnce()).toBe(true);
    expectOthersTaken(run);
    expect(run.desired.get(VANISHED_ID)?.kind).toBe('gone');
    expect(run.desired.get(HOSTILE_ID)).toEqual({
      kind: 'invalid',
      message: `deployment ${HOSTILE_ID} is invalid: source_config.resource_spec.labels.nest…: nested deeper than 64 levels, the most the agent reads`,
      revisionId: undefined,
    });
    expect(run.enqueued).toContain(HOSTILE_ID);
    expect(run.log()).not.toContain(MARKER);
  });

  it('a deployment whose handling throws fails alone: held invalid (reported, its objects kept), the rest taken', async () => {
    proxy.injected.splice(0, Infinity);
    let thrown = false;
    const run = newRun([...seedIds], (id) => {
      if (id !== SEED_DEPLOYMENTS.chatApi || thrown) return;
      thrown = true;
      throw new RangeError('Maximum call stack size exceeded');
    });
    expect(await run.poller.pollOnce()).toBe(true);
    for (const id of [SEED_DEPLOYMENTS.helloWeb, SEED_DEPLOYMENTS.agentPlatform])
      expect(run.desired.get(id)?.kind).toBe('present');
    expect(run.desired.get(SEED_DEPLOYMENTS.chatApi)).toEqual({
      kind: 'invalid',
      message: `deployment ${SEED_DEPLOYMENTS.chatApi} could not be handled (RangeError)`,
      revisionId: undefined,
    });
    // Taken again at the next poll, as any deployment that was not held.
    expect(await run.poller.pollOnce()).toBe(true);
    expect(run.desired.get(SEED_DEPLOYMENTS.chatApi)?.kind).toBe('present');
  });

  it('property: whatever the one hostile item, every other deployment is taken and one gone is pruned', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostile,
        fc.constantFrom(SEED_LISTENER_ID, OTHER_LISTENER_ID),
        fc.boolean(),
        async (item, listenerId, hostileKnown) => {
          const text = hostileText(item, deploymentItem(HOSTILE_ID, listenerId));
          proxy.injected.splice(0, Infinity, text);
          const run = newRun([...seedIds, VANISHED_ID, ...(hostileKnown ? [HOSTILE_ID] : [])]);
          const named = text.includes(`"id":"${HOSTILE_ID}"`);
          const others = text.includes(`"listener_id":"${OTHER_LISTENER_ID}"`);
          // This listener's, or not readably anyone's (a listener id of the wrong type). A null
          // listener id is a deployment bound to none: no longer this one's, so pruned.
          const boundHere =
            text.includes(`"listener_id":"${SEED_LISTENER_ID}"`) ||
            (item.kind === 'wrong' &&
              item.path.join('.') === 'source_config.listener_id' &&
              item.value !== null);
          for (let poll = 0; poll < 2; poll++) {
            expect(await run.poller.pollOnce()).toBe(true);
            expectOthersTaken(run);
            const held = run.desired.get(HOSTILE_ID);
            // This listener's deployment is never pruned while an item with its id is listed,
            // whatever else is wrong with the item.
            if (hostileKnown && named && boundHere) expect(held?.kind).not.toBe('gone');
            // An item that may be this listener's and whose id cannot be read prunes nothing (it
            // might be the vanished one); any other leaves the vanished one to be pruned.
            if (named || others) expect(run.desired.get(VANISHED_ID)?.kind).toBe('gone');
            // Reported messages and logs name ids, fields and limits, never what the item holds.
            if (held?.kind === 'invalid') expect(held.message).not.toContain(MARKER);
            expect(run.log()).not.toContain(MARKER);
          }
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
