// Hostile deployments made by fast-check, created in the control plane while one real agent process
// runs, mixed with valid ones. The control plane itself refuses some at the door (422/413/400); of those
// it accepts, the agent refuses every bad one with its typed reason (DEPLOY_FAILED naming the
// field) and writes nothing for it, serves the hostile-but-valid ones (long and unicode names,
// thousands of variables, huge secrets), never lets a name collision take another deployment's
// objects, never logs a secret value, and stays up (/healthz 200) throughout. Every valid one
// converges. Replay a run with HOSTILE_SEED=<seed>.
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment, StatusReport } from '../../../src/controlplane/schemas/index.ts';
import { MAX_JSON_DEPTH } from '../../../src/jsonText.ts';
import {
  AGENT_NAME,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../../src/objects/ownership.ts';
import { inventoryName } from '../../../src/reconcile/steps/inventoryStore.ts';
import { app, revisionStatus, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import {
  type AgentProcess,
  listListenerObjects,
  recordStatusReports,
  startAgentProcess,
  writeAgentConfig,
} from '../../support/agentProcess.ts';
import { eventually } from '../../support/eventually.ts';

/** A namespace the listener lists but the agent's own allow-list leaves out. */
const OUTSIDE_ALLOW_LIST = 'kube-system';
const SPEC = 'source_config.resource_spec';

const seed = Number(process.env.HOSTILE_SEED ?? Math.floor(Math.random() * 2 ** 31));
// Planted in secret values: it must never appear in a log line, a report or an Event.
const MARKER = `hostile-secret-${randomBytes(6).toString('hex')}`;

type Expectation =
  /**
   * The control plane refuses it (422 naming `field`, 413 for a body over 1 MiB, 400 for one
   * nested past 64 levels).
   */
  | { readonly kind: 'door'; readonly status: 400 | 413 | 422; readonly field?: string }
  /** The agent refuses it: DEPLOY_FAILED with a message naming `path`, nothing written. */
  | { readonly kind: 'refused'; readonly path: string }
  /**
   * Past the agent's checks, refused by the API server (strict field validation of free-form
   * content the interface passes through): DEPLOY_FAILED with a message naming `path`. What was
   * applied before the refused object stays (counted, not asserted: the apply has no dry run).
   */
  | { readonly kind: 'rejected'; readonly path: string }
  /** Hostile in form, valid in substance: it is served. */
  | { readonly kind: 'converges' };

interface HostileCase {
  readonly category: string;
  readonly body: Record<string, unknown>;
  readonly expect: Expectation;
}

let world: World;
let agent: AgentProcess;
let configPath: string;
let reports: StatusReport[];
let ns0: string;
let ns1: string;

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { extraListenerNamespaces: [OUTSIDE_ALLOW_LIST] });
  [ns0 = '', ns1 = ''] = world.namespaces;
  reports = recordStatusReports(world.emulator);
  configPath = await writeAgentConfig(world, {
    leaseName: `lease-${ns0}`,
    namespaces: [ns0, ns1],
    reconcile: { concurrency: 8 },
  });
  agent = startAgentProcess(configPath, 'hostile-agent');
  await eventually('the agent leads', async () =>
    agent.output().includes('"msg":"leading: polling and reconciling"') ? true : undefined,
  );
});
afterAll(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGTERM');
    await agent.exited;
  }
  await world?.close();
});

function body(name: string, namespace: string, spec: Record<string, unknown> = {}, extra = {}) {
  return {
    name,
    source: 'external_container',
    source_config: {
      listener_id: world.listenerId,
      listener_config: { k8s_namespace: namespace },
      deployment_type: 'dev',
      resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.05, memory_mb: 32, ...spec },
    },
    source_revision_config: { image_uri: 'nginx:1.27' },
    secrets: [{ name: 'API_TOKEN', value: MARKER }],
    ...extra,
  };
}

const namespaceArb = () => fc.constantFrom(ns0, ns1);
const plainName = fc.stringMatching(/^[a-z][a-z0-9]{2,10}$/);
/** Free-form JSON nested `depth` levels deep, built without recursion. */
function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = { [`l${i % 7}`]: value };
  return value;
}
const invalidEnvName = fc.constantFrom('1STARTS_WITH_DIGIT', 'HAS SPACE', 'ÜMLAUT', 'semi;colon', '', 'A=B');
const secretsList = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ name: `VAR_${i}`, value: `${MARKER}-${i}` }));

/** Every generator of hostile input, with how many cases each contributes. */
function arbitraries(): [number, fc.Arbitrary<HostileCase>][] {
  return [
    // Very long and unicode names that still hold a letter: normalised, hashed, served.
    [
      4,
      fc
        .tuple(fc.string({ unit: 'grapheme', minLength: 30, maxLength: 300 }), plainName, namespaceArb())
        .map(([junk, letters, namespace]) => ({
          category: 'long or unicode name',
          body: body(`${junk}x${letters}${junk}`, namespace),
          expect: { kind: 'converges' },
        })),
    ],
    // Names with no letter or digit at all: nothing to make a Kubernetes name of.
    [
      15,
      fc
        .tuple(
          fc.array(fc.constantFrom('🚀', '漢', '字', '—', '!', '*', '🙂', ' ', '·', '♥'), {
            minLength: 1,
            maxLength: 400,
          }),
          namespaceArb(),
        )
        .map(([chars, namespace]) => ({
          category: 'name without letters',
          body: body(chars.join(''), namespace),
          expect: { kind: 'refused', path: 'name' },
        })),
    ],
    // Thousands of secrets (environment variables), one of them invalid or duplicated.
    [
      18,
      fc
        .tuple(fc.integer({ min: 1_000, max: 3_000 }), fc.nat(), invalidEnvName, fc.boolean(), namespaceArb())
        .map(([count, at, bad, duplicate, namespace]) => {
          const secrets = secretsList(count);
          const index = at % count;
          const broken = duplicate && index > 0 ? (secrets[index - 1]?.name ?? bad) : bad;
          secrets[index] = { name: broken, value: MARKER };
          return {
            category: 'thousands of variables, one bad',
            body: body(`many-${index}`, namespace, {}, { secrets }),
            expect: { kind: 'refused', path: `secrets[${index}].name` },
          };
        }),
    ],
    // Thousands of valid variables: served.
    [
      2,
      fc.tuple(fc.integer({ min: 1_000, max: 2_000 }), namespaceArb()).map(([count, namespace]) => ({
        category: 'thousands of variables',
        body: body(`many-ok-${count}`, namespace, {}, { secrets: secretsList(count) }),
        expect: { kind: 'converges' },
      })),
    ],
    // Thousands of sidecar variables, one bad.
    [
      12,
      fc
        .tuple(fc.integer({ min: 1_000, max: 3_000 }), fc.nat(), invalidEnvName, namespaceArb())
        .map(([count, at, bad, namespace]) => {
          const index = at % count;
          const env = Array.from({ length: count }, (_, i) => ({
            name: i === index ? bad : `S_${i}`,
            value: 'v',
          }));
          return {
            category: 'sidecar with thousands of variables, one bad',
            body: body(`side-${index}`, namespace, {
              sidecars: [{ name: 'side', image: 'busybox:1.36', env }],
            }),
            expect: { kind: 'refused', path: `${SPEC}.sidecars[0].env[${index}].name` },
          };
        }),
    ],
    // A secret too big for the control plane's 1 MiB body.
    [
      3,
      fc.integer({ min: 1_100_000, max: 1_500_000 }).map((size) => ({
        category: 'secret over 1 MiB',
        body: body('huge', ns0, {}, { secrets: [{ name: 'HUGE', value: MARKER.padEnd(size, 'x') }] }),
        expect: { kind: 'door', status: 413 },
      })),
    ],
    // A huge secret within the limits: served, and its value appears nowhere.
    [
      2,
      fc.tuple(fc.integer({ min: 600_000, max: 900_000 }), namespaceArb()).map(([size, namespace]) => ({
        category: 'huge secret',
        body: body(
          `huge-ok-${size}`,
          namespace,
          {},
          { secrets: [{ name: 'HUGE', value: MARKER.padEnd(size, 'y') }] },
        ),
        expect: { kind: 'converges' },
      })),
    ],
    // Deeply nested free-form pod metadata: labels and annotations must be strings. Nested past
    // 64 levels in all (the body, source_config, resource_spec and the map are 4), the control
    // plane refuses it at the door: writing it back would overflow the stack.
    [
      25,
      fc
        .tuple(
          fc.constantFrom('labels', 'annotations'),
          fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/),
          fc.oneof(
            fc.integer({ min: 5, max: MAX_JSON_DEPTH - 4 }),
            fc.integer({ min: MAX_JSON_DEPTH - 3, max: 3_000 }),
          ),
          namespaceArb(),
        )
        .map(([kind, key, depth, namespace]) => ({
          category: 'deeply nested metadata',
          body: body(`deep-${depth}`, namespace, { [kind]: { [key]: nested(depth, MARKER) } }),
          expect:
            4 + depth <= MAX_JSON_DEPTH
              ? ({ kind: 'refused', path: `${SPEC}.${kind}.${key}` } as const)
              : ({ kind: 'door', status: 400 } as const),
        })),
    ],
    // Labels in the agent's own domain: they would let a deployment pass for another.
    [
      10,
      fc
        .tuple(
          fc.constantFrom(
            'k8s-listener.io/deployment-id',
            'k8s-listener.io/listener-id',
            'app.kubernetes.io/managed-by',
          ),
          namespaceArb(),
        )
        .map(([key, namespace]) => ({
          category: 'reserved label',
          body: body('reserved', namespace, { labels: { [key]: 'someone-else' } }),
          expect: { kind: 'refused', path: `${SPEC}.labels.${key}` },
        })),
    ],
    // A namespace the listener does not list (or not a namespace name at all): refused at the door.
    [
      25,
      fc
        .oneof(
          fc.constantFrom('default', 'kube-public', 'kube-node-lease', 'Bad_NS', '../etc', ''),
          fc.stringMatching(/^[a-z]{3,20}$/),
          fc.string({ unit: 'grapheme', minLength: 1, maxLength: 100 }),
        )
        .filter((namespace) => ![ns0, ns1, OUTSIDE_ALLOW_LIST].includes(namespace))
        .map((namespace) => ({
          category: 'namespace outside the listener',
          body: body('elsewhere', namespace),
          expect: { kind: 'door', status: 422, field: 'source_config.listener_config.k8s_namespace' },
        })),
    ],
    // A namespace the listener lists but the agent's allow-list leaves out.
    [
      15,
      plainName.map((name) => ({
        category: 'namespace outside the allow-list',
        body: body(name, OUTSIDE_ALLOW_LIST),
        expect: { kind: 'refused', path: 'source_config.listener_config.k8s_namespace' },
      })),
    ],
    // Volume types outside the interface (hostPath and friends), or two sources in one volume.
    [
      25,
      fc
        .tuple(
          fc.constantFrom(
            { hostPath: { path: '/' } },
            { hostPath: { path: '/var/run/docker.sock', type: 'Socket' } },
            { gitRepo: { repository: 'https://example.invalid/x.git' } },
            { iscsi: { targetPortal: '10.0.0.1:3260', iqn: 'iqn.x', lun: 0 } },
            { emptyDir: {}, secret: { secretName: 'x' } },
            {},
          ),
          namespaceArb(),
        )
        .map(([source, namespace]) => ({
          category: 'unknown volume type',
          body: body('volumes', namespace, {
            volumes: [{ name: 'data', ...source }],
            volume_mounts: [{ name: 'data', mountPath: '/data' }],
          }),
          expect: { kind: 'door', status: 422 },
        })),
    ],
    // Free-form volume content with fields Kubernetes does not know, nested a few levels deep.
    [
      4,
      fc.tuple(fc.integer({ min: 1, max: 30 }), namespaceArb()).map(([depth, namespace]) => ({
        category: 'unknown fields in a volume source',
        body: body('volsrc', namespace, {
          volumes: [{ name: 'scratch', emptyDir: { medium: '', ...(nested(depth, 'x') as object) } }],
        }),
        expect: { kind: 'rejected', path: 'emptyDir' },
      })),
    ],
    // A volume name Kubernetes cannot take.
    [
      10,
      fc
        .tuple(fc.constantFrom('Data', 'with_underscore', 'a'.repeat(64), 'ü', '-x'), namespaceArb())
        .map(([name, namespace]) => ({
          category: 'invalid volume name',
          body: body('volname', namespace, { volumes: [{ name, emptyDir: {} }] }),
          expect: { kind: 'refused', path: `${SPEC}.volumes[0].name` },
        })),
    ],
    // Privileged sidecars and init containers: refused by the agent's Pod Security policy.
    [
      30,
      fc
        .tuple(
          fc.constantFrom('sidecars', 'init_containers'),
          fc.constantFrom(
            ['privileged', { privileged: true }],
            ['allowPrivilegeEscalation', { allowPrivilegeEscalation: true }],
            ['capabilities.add', { capabilities: { add: ['SYS_ADMIN'] } }],
            ['capabilities.add', { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } }],
          ),
          namespaceArb(),
        )
        .map(([group, [field, securityContext], namespace]) => ({
          category: 'privileged sidecar',
          body: body('priv', namespace, {
            [group]: [{ name: 'evil', image: 'busybox:1.36', securityContext }],
          }),
          // Refused by Pod Security, naming the rendered container and field.
          expect: {
            kind: 'refused',
            path: `${group === 'sidecars' ? 'spec.containers[1]' : 'spec.initContainers[0]'}(evil).securityContext.${field}`,
          },
        })),
    ],
    // Variables the agent sets itself.
    [
      5,
      fc.tuple(fc.constantFrom('WORKLOAD_ROLE'), namespaceArb()).map(([name, namespace]) => ({
        category: 'variable set by the agent',
        body: body('takeover', namespace, {}, { secrets: [{ name, value: MARKER }] }),
        expect: { kind: 'refused', path: 'secrets' },
      })),
    ],
    // Numbers Kubernetes cannot take.
    [
      10,
      fc
        .tuple(
          fc.constantFrom(
            ['cpu', { cpu: -1 }],
            ['min_scale', { min_scale: 1.5 }],
            ['min_scale', { min_scale: 5, max_scale: 2 }],
            ['memory_mb', { memory_mb: -64 }],
            ['cpu', { cpu: 1e-9 }],
          ),
          namespaceArb(),
        )
        .map(([[field, spec], namespace]) => ({
          category: 'impossible numbers',
          body: body('numbers', namespace, spec),
          expect: { kind: 'refused', path: `${SPEC}.${field}` },
        })),
    ],
    // A custom URL that is no host name.
    [
      5,
      fc
        .tuple(fc.constantFrom('http://exa mple.com', '###', 'https://', 'ü.example'), namespaceArb())
        .map(([url, namespace]) => ({
          category: 'invalid custom url',
          body: {
            ...body('url', namespace),
            source_config: { ...body('url', namespace).source_config, custom_url: url },
          },
          expect: { kind: 'refused', path: 'source_config.custom_url' },
        })),
    ],
  ];
}

interface Created {
  readonly hostile: HostileCase;
  readonly deployment: Deployment;
}

async function post(payload: unknown): Promise<{ status: number; body: unknown }> {
  // A connection of its own: the emulator answers 413 before reading a body over 1 MiB and then
  // closes the connection, which must not fail the next request on a shared one.
  const dispatcher = new Agent();
  try {
    const response = await fetch(`${world.emulator.url}/v2/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      dispatcher,
    });
    return { status: response.status, body: await response.json() };
  } finally {
    await dispatcher.close();
  }
}

describe('hostile input through a running agent', () => {
  // One run: hostile cases mixed with valid ones, all sent while the agent runs; each `it` below
  // checks one thing the agent must do with them, in order (later ones delete the colliders).
  describe('a run of hostile deployments mixed with valid ones', () => {
    let started = 0;
    // Liveness throughout, not only at the end.
    let prober: ReturnType<typeof setInterval> | undefined;
    const probeFailures: string[] = [];
    let probes = 0;
    let victim: Deployment;
    let valid: HostileCase[] = [];
    let all: HostileCase[] = [];
    /** What the control plane answered to each case. */
    const answers: { hostile: HostileCase; status: number; body: unknown }[] = [];
    /** The cases the control plane let in. */
    const created: Created[] = [];
    const idsOf = (kind: Expectation['kind']) =>
      new Set(created.filter((c) => c.hostile.expect.kind === kind).map((c) => c.deployment.id));

    beforeAll(async () => {
      console.log(`hostile-input: seed ${seed} (replay with HOSTILE_SEED=${seed})`);
      started = Date.now();
      prober = setInterval(() => {
        const url = agent.probesUrl();
        if (!url) return;
        probes++;
        fetch(`${url}/healthz`).then(
          (response) => {
            if (response.status !== 200) probeFailures.push(`healthz ${response.status}`);
          },
          (error: unknown) => probeFailures.push(`healthz ${String(error)}`),
        );
      }, 500);

      // Deployments whose generated names the colliders below take, and someone else's Service.
      victim = await world.client.createDeployment(
        app(world, 'victim', ns0, {
          source_config: {
            listener_id: world.listenerId,
            listener_config: { k8s_namespace: ns0 },
            resource_spec: {
              cpu: 0.05,
              memory_mb: 32,
              queue_cpu: 0.05,
              db_storage_gi: 1,
              kvstore_memory_mb: 32,
            },
          },
        }),
      );
      await world.kube.core.createNamespacedService({
        namespace: ns1,
        body: {
          metadata: { name: 'squatter' },
          spec: { ports: [{ port: 80 }], selector: { app: 'squatter' } },
        },
      });
      await waitForRevision(world, victim, 'DEPLOYED', 120_000);

      // The ones that write objects get a name of their own: two alike would collide (one would
      // fail, as the collisions below must).
      const cases: HostileCase[] = arbitraries()
        .flatMap(([count, arbitrary], i) => fc.sample(arbitrary, { numRuns: count, seed: seed + i }))
        .map((c, i) =>
          c.expect.kind === 'converges' || c.expect.kind === 'rejected'
            ? { ...c, body: { ...c.body, name: `${String(c.body.name)}-${i}` } }
            : c,
        );
      // Names that collide with what the agent generates for `victim`, and a hand-made Service.
      const collisions: [string, string, string][] = [
        ['victim', ns0, `Deployment/${ns0}/victim`],
        ['victim-db', ns0, `Service/${ns0}/victim-db`],
        ['victim-kvstore', ns0, `Service/${ns0}/victim-kvstore`],
        ['victim-queue', ns0, `Deployment/${ns0}/victim-queue`],
        ['squatter', ns1, `Service/${ns1}/squatter`],
      ];
      for (const [name, namespace, object] of collisions)
        cases.push({
          category: 'name collision',
          body: body(name, namespace),
          expect: { kind: 'refused', path: object },
        });
      // Valid deployments mixed in among them.
      valid = Array.from({ length: 10 }, (_, i) => ({
        category: 'valid',
        body: body(`valid-${i}`, i % 2 === 0 ? ns0 : ns1),
        expect: { kind: 'converges' } as const,
      }));
      all = fc.sample(fc.shuffledSubarray([...cases, ...valid], { minLength: cases.length + valid.length }), {
        numRuns: 1,
        seed,
      })[0] ?? [...cases, ...valid];

      for (const hostile of all) {
        const answer = await post(hostile.body).catch((error: unknown) => ({
          status: 0,
          body: `${String(error)} (${String((error as { cause?: unknown }).cause)})`,
        }));
        answers.push({ hostile, ...answer });
        if (hostile.expect.kind !== 'door' && answer.status === 201)
          created.push({ hostile, deployment: answer.body as Deployment });
      }
    }, 300_000);
    afterAll(() => clearInterval(prober));

    it('sends at least 200 hostile cases', () => {
      expect(all.length - valid.length).toBeGreaterThanOrEqual(200);
    });

    it('is refused at the control plane where the interface says (413, 400, 422 naming the field), created otherwise', () => {
      for (const { hostile, status, body: answered } of answers) {
        const said = `${hostile.category}: ${JSON.stringify(answered).slice(0, 300)}`;
        if (hostile.expect.kind === 'door') {
          expect(status, said).toBe(hostile.expect.status);
          if (hostile.expect.field)
            expect((answered as { error: { field?: string } }).error.field).toBe(hostile.expect.field);
        } else expect(status, said).toBe(201);
      }
    });

    it('brings every deployment the control plane let in to its outcome: DEPLOYED, or DEPLOY_FAILED', async () => {
      const outcome = (c: Created) => (c.hostile.expect.kind === 'converges' ? 'DEPLOYED' : 'DEPLOY_FAILED');
      // Straight from the emulator's store: a snapshot of its state would deep-clone the hostile
      // payloads (structuredClone overflows the stack on the most deeply nested ones).
      const latestStatus = (id: string) => {
        const deployment = world.emulator.store.getDeployment(id);
        return world.emulator.store.listRevisions(id, {}).find((r) => r.id === deployment.latest_revision_id)
          ?.status;
      };
      const unsettled = () =>
        created
          .filter((c) => latestStatus(c.deployment.id) !== outcome(c))
          .map((c) => {
            const said = reports.findLast((r) => r.deployment_id === c.deployment.id)?.message ?? '';
            return `${c.hostile.category} ${c.deployment.id}: ${latestStatus(c.deployment.id)} ${said.slice(0, 300)}`;
          });
      const pending = await eventually(
        'every outcome',
        async () => (unsettled().length === 0 ? [] : undefined),
        150_000,
        2_000,
      ).catch(() => unsettled());
      if (pending.length > 0) {
        // The agent's own words and the workloads as the API server has them, for whoever debugs it.
        const dir = await mkdtemp(join(tmpdir(), 'hostile-input-'));
        await writeFile(join(dir, 'agent.log'), agent.output());
        for (const namespace of [ns0, ns1]) {
          const workloads = await world.kube.apps.listNamespacedDeployment({ namespace });
          await writeFile(
            join(dir, `deployments-${namespace}.json`),
            JSON.stringify(
              workloads.items.map((d) => ({
                name: d.metadata?.name,
                generation: d.metadata?.generation,
                status: d.status,
              })),
              null,
              1,
            ),
          );
          const events = await world.kube.core.listNamespacedEvent({ namespace });
          await writeFile(
            join(dir, `events-${namespace}.txt`),
            events.items
              .map((e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`)
              .join('\n'),
          );
        }
        console.log(`hostile-input: agent log and cluster state in ${dir}`);
      }
      expect(pending).toEqual([]);
    }, 200_000);

    it('names, in each refusal, its field (or the object a collision would have taken)', () => {
      const failedMessages = new Map<string, string[]>();
      for (const report of reports) {
        if (report.revision_status !== 'DEPLOY_FAILED') continue;
        failedMessages.set(report.deployment_id, [
          ...(failedMessages.get(report.deployment_id) ?? []),
          report.message ?? '',
        ]);
      }
      const unnamed: string[] = [];
      for (const { hostile, deployment } of created) {
        const { expect: wanted } = hostile;
        if (wanted.kind !== 'refused' && wanted.kind !== 'rejected') continue;
        const messages = failedMessages.get(deployment.id) ?? [];
        if (!messages.some((m) => m.includes(wanted.path)))
          unnamed.push(
            `${hostile.category}: wanted ${wanted.path} in ${JSON.stringify(messages).slice(0, 300)}`,
          );
      }
      expect(unnamed).toEqual([]);
    });

    it('writes nothing for a refused deployment, in any namespace, and lets no collision take an object', async () => {
      const live = await listListenerObjects(world, [ns0, ns1, OUTSIDE_ALLOW_LIST]);
      const refusedIds = idsOf('refused');
      const written = live.filter(
        (entry) => entry.deploymentId !== undefined && refusedIds.has(entry.deploymentId),
      );
      expect(written.map((entry) => entry.key)).toEqual([]);
      const victimObjects = live.filter((entry) => entry.deploymentId === victim.id).map((e) => e.key);
      for (const name of ['victim', 'victim-db', 'victim-kvstore', 'victim-queue'])
        expect(victimObjects.some((key) => key.endsWith(`/${name}`))).toBe(true);
      expect(await revisionStatus(world, victim.id, victim.latest_revision_id ?? '')).toBe('DEPLOYED');
      const squatter = await world.kube.core.readNamespacedService({ name: 'squatter', namespace: ns1 });
      expect(squatter.metadata?.labels?.[LABEL_DEPLOYMENT_ID]).toBeUndefined();
    });

    it('removes nothing of what the colliders collided with when they are deleted', async () => {
      const victimKeys = async () =>
        (await listListenerObjects(world, [ns0]))
          .filter((e) => e.deploymentId === victim.id)
          .map((e) => e.key)
          .sort();
      const before = await victimKeys();
      const colliders = created.filter((c) => c.hostile.category === 'name collision');
      expect(colliders).toHaveLength(5);
      for (const c of colliders) await world.client.deleteDeployment(c.deployment.id);
      await eventually(
        'the colliders removed',
        async () => {
          const ids = new Set(world.emulator.store.listDeployments({}).map((d) => d.id));
          return colliders.every((c) => !ids.has(c.deployment.id)) ? true : undefined;
        },
        60_000,
      );
      expect(await victimKeys()).toEqual(before);
      await world.kube.core.readNamespacedService({ name: 'squatter', namespace: ns1 });
    });

    it('lets no secret value reach its log, its reports or an Event', async () => {
      expect(agent.output()).not.toContain(MARKER);
      expect(reports.some((r) => r.message?.includes(MARKER))).toBe(false);
      for (const namespace of [ns0, ns1]) {
        const events = await world.kube.core.listNamespacedEvent({ namespace });
        expect(events.items.some((e) => e.message?.includes(MARKER))).toBe(false);
      }
    });

    it('stays up throughout (/healthz 200 every half second)', async () => {
      clearInterval(prober);
      expect(agent.child.exitCode).toBeNull();
      expect(probeFailures).toEqual([]);
      // Every half second for the whole run (which takes at least the victim's rollout).
      expect(probes).toBeGreaterThanOrEqual(10);
      const url = agent.probesUrl();
      expect((await fetch(`${url}/healthz`)).status).toBe(200);

      const rejectedIds = idsOf('rejected');
      const live = await listListenerObjects(world, [ns0, ns1, OUTSIDE_ALLOW_LIST]);
      const summary = {
        seed,
        hostileCases: all.length - valid.length,
        refusedAtDoor: answers.filter((a) => a.hostile.expect.kind === 'door').length,
        refusedByAgent: idsOf('refused').size,
        rejectedByApiServer: rejectedIds.size,
        writtenBeforeApiServerRejection: live.filter((e) => e.deploymentId && rejectedIds.has(e.deploymentId))
          .length,
        hostileServed: created.filter(
          (c) => c.hostile.category !== 'valid' && c.hostile.expect.kind === 'converges',
        ).length,
        validServed: valid.length,
        seconds: Math.round((Date.now() - started) / 1000),
      };
      console.log(`hostile-input: ${JSON.stringify(summary)}`);
    });
  });

  it('never prunes an object that another deployment owns, even when an inventory records it', async () => {
    const owner = await world.client.createDeployment(app(world, 'owner', ns1));
    await waitForRevision(world, owner, 'DEPLOYED', 120_000);
    const forger = await world.client.createDeployment(
      body('forger', ns1, { cpu: -1 }) as Parameters<typeof world.client.createDeployment>[0],
    );
    await waitForRevision(world, forger, 'DEPLOY_FAILED');
    const uids = async () =>
      Promise.all([
        world.kube.apps.readNamespacedDeployment({ name: 'owner', namespace: ns1 }),
        world.kube.core.readNamespacedService({ name: 'owner', namespace: ns1 }),
      ]).then((objects) => objects.map((o) => o.metadata?.uid));
    const before = await uids();

    // An inventory of the refused deployment that records the owner's objects, as one written by
    // an older agent, or by two deployments that applied the same name at the same moment, would.
    const entry = (apiVersion: string, kind: string) => ({ apiVersion, kind, namespace: ns1, name: 'owner' });
    await world.kube.core.createNamespacedConfigMap({
      namespace: ns1,
      body: {
        metadata: {
          name: inventoryName(forger.id),
          labels: {
            [LABEL_MANAGED_BY]: AGENT_NAME,
            [LABEL_LISTENER_ID]: world.listenerId,
            [LABEL_DEPLOYMENT_ID]: forger.id,
            [LABEL_COMPONENT]: 'inventory',
          },
        },
        data: {
          inventory: JSON.stringify({
            deploymentId: forger.id,
            specHash: 'forged',
            entries: [entry('apps/v1', 'Deployment'), entry('v1', 'Service')],
          }),
        },
      },
    });
    // Inventories are read when a leader starts: a new agent process takes over.
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    agent = startAgentProcess(configPath, 'hostile-agent-2');
    await world.client.deleteDeployment(forger.id);
    await eventually('the forger removed', async () =>
      world.emulator.store.listDeployments({}).some((d) => d.id === forger.id) ? undefined : true,
    );
    // Its inventory is gone; what it recorded is not: another deployment owns it.
    await expect(
      world.kube.core.readNamespacedConfigMap({ name: inventoryName(forger.id), namespace: ns1 }),
    ).rejects.toThrow();
    expect(await uids()).toEqual(before);
    expect(await revisionStatus(world, owner.id, owner.latest_revision_id ?? '')).toBe('DEPLOYED');
  }, 240_000);
});
