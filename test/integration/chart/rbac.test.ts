// The chart's RBAC proven by use: the chart installed with `helm install`, a token of its
// ServiceAccount (TokenRequest API), and the real agent process holding only that token through
// a whole lifecycle. Then, with the same token, everything outside its namespaces is denied, and
// the chart grants no verb the agent did not use (its kube_requests metric of the run).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { type ManagedKind, resourceTypeOf } from '../../../src/kube/resources.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import { app, FAST_RECONCILE, startWorld, type World, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { gatewaySays } from '../../support/gatewayStatus.ts';

const run = promisify(execFile);
const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;
const CHART = new URL('../../../charts/k8s-listener', import.meta.url).pathname;
const RELEASE = 'agent';
const IDENTITY = 'rbac-agent';
const INGRESS_CLASS = 'rbac-test';

/**
 * Granted but not necessarily used by `run` in one lifecycle, each with its reason:
 * `group/resource verb`. Anything else granted and unused fails the test.
 */
const NOT_IN_RUN: Readonly<Record<string, string>> = {
  // A rare path: only an Event that recurs within the series window (a rollout failing again and
  // again) is patched (its series count) instead of created anew.
  'events.k8s.io/events patch': 'series update of a recurring Event',
  // `k8s-listener status`, run in the agent's pod (the chart's NOTES), lists the ReplicaSets and
  // Events of each workload; `run` lists only what it watches (every kind it writes).
  'apps/replicasets list': 'status',
  'events.k8s.io/events list': 'status',
  // Reads come from the watch cache; a GET answers only a miss (before a watch has listed). The
  // inventory ConfigMaps are usually listed at start and watched from then on, so a run may never
  // miss one; every other kind is read once when its object does not exist yet.
  '/configmaps get': 'a read the watch cache did not answer',
  // A renamed deployment's earlier names' volumes past reconcile.prune.keptVolumesPerDeployment
  // (test/integration/reconcile/kept-volumes.test.ts); this lifecycle renames nothing.
  '/persistentvolumeclaims delete': 'a rename past the kept volumes',
  // A crashed container's log, read for the evidence of a failure: no container crashes on kwok
  // (test/integration/node/failure-evidence.test.ts reads it on the real node); the token's reach
  // is asserted below, and `check` asks for it.
  '/pods/log get': 'a crashed container (the evidence of a failure)',
};

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Rule[];
}

let world: World;
let work: string;
let releaseNs: string;
let foreignNs: string;
let watched: readonly string[];
let manifests: Manifest[];
let configPath: string;
let tokenConfig: k8s.KubeConfig;

/** The environment of the agent: none of the suite's own variables (they name the admin kubeconfig). */
function agentEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('K8S_LISTENER_')));
}

interface InstalledRelease {
  readonly manifests: Manifest[];
  readonly configPath: string;
  readonly tokenConfig: k8s.KubeConfig;
}

/**
 * The chart installed as a platform team installs it (`helm install` with `config` among its
 * values), a token of its ServiceAccount as the kubelet would mount it and nothing else, and an
 * agent configuration that holds only that token.
 */
async function installRelease(options: {
  readonly world: World;
  readonly release: string;
  readonly releaseNs: string;
  readonly identity: string;
  readonly config: Record<string, unknown>;
  readonly render: Record<string, unknown>;
}): Promise<InstalledRelease> {
  const { world: where, release, releaseNs: namespace } = options;
  const kubeconfigPath = inject('kubeconfigPath');
  const binDir = inject('clusterBinDir');
  const dir = join(work, release);
  await mkdir(dir, { recursive: true });
  const valuesPath = join(dir, 'values.yaml');
  await writeFile(
    valuesPath,
    stringify({
      listenerId: where.listenerId,
      controlPlane: { url: where.emulator.url, apiKey: 'not-a-real-key' },
      namespaces: [...where.namespaces],
      replicaCount: 1,
      config: options.config,
    }),
  );
  const helmEnv = {
    ...process.env,
    HELM_CACHE_HOME: join(work, 'helm-cache'),
    HELM_CONFIG_HOME: join(work, 'helm-config'),
    HELM_DATA_HOME: join(work, 'helm-data'),
  };
  await run(
    join(binDir, 'helm'),
    ['install', release, CHART, '-n', namespace, '-f', valuesPath, '--kubeconfig', kubeconfigPath],
    { env: helmEnv },
  );
  const { stdout } = await run(
    join(binDir, 'helm'),
    ['get', 'manifest', release, '-n', namespace, '--kubeconfig', kubeconfigPath],
    { env: helmEnv, maxBuffer: 16 * 1024 * 1024 },
  );
  const installed = parseAllDocuments(stdout)
    .map((doc) => doc.toJSON() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
  const serviceAccount = installed.find((m) => m.kind === 'ServiceAccount')?.metadata.name ?? '';

  // A token of the chart's ServiceAccount, as the kubelet would mount it, and nothing else.
  const token = await where.kube.core.createNamespacedServiceAccountToken({
    name: serviceAccount,
    namespace,
    body: { spec: { expirationSeconds: 3600, audiences: [] } },
  });
  const cluster = where.kube.config.getCurrentCluster();
  const tokenKubeconfig = join(dir, 'sa-kubeconfig');
  await writeFile(
    tokenKubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'test',
          cluster: {
            server: cluster?.server,
            ...(cluster?.caData ? { 'certificate-authority-data': cluster.caData } : {}),
            ...(cluster?.caFile ? { 'certificate-authority': cluster.caFile } : {}),
          },
        },
      ],
      users: [{ name: serviceAccount, user: { token: token.status?.token } }],
      contexts: [{ name: 'sa', context: { cluster: 'test', user: serviceAccount } }],
      'current-context': 'sa',
    }),
    { mode: 0o600 },
  );
  const config = new k8s.KubeConfig();
  config.loadFromFile(tokenKubeconfig);

  const agentConfig = join(dir, 'config.yaml');
  await writeFile(
    agentConfig,
    stringify({
      listenerId: where.listenerId,
      controlPlane: { baseUrl: where.emulator.url },
      kubeconfig: tokenKubeconfig,
      namespaces: [...where.namespaces],
      identity: options.identity,
      agentNamespace: namespace,
      probes: { host: '127.0.0.1', port: 0 },
      log: { level: 'info' },
      render: options.render,
      reconcile: {
        ...FAST_RECONCILE,
        leaderElection: { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 },
      },
    }),
  );
  return {
    manifests: installed,
    configPath: agentConfig,
    tokenConfig: config,
  };
}

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 2 });
  watched = world.namespaces;
  releaseNs = uniqueNamespace('listener');
  foreignNs = uniqueNamespace('foreign');
  for (const ns of [releaseNs, foreignNs]) await createNamespace(world.kube, ns);
  await world.kube.core.createNamespacedSecret({
    namespace: foreignNs,
    body: { metadata: { name: 'not-yours' }, stringData: { password: 'foreign-secret-value' } },
  });
  work = await mkdtemp(join(tmpdir(), 'k8s-listener-rbac-'));

  // The chart as a platform team installs it: two watched namespaces, the ingress class set.
  const installed = await installRelease({
    world,
    release: RELEASE,
    releaseNs,
    identity: IDENTITY,
    config: { render: { ingress: { className: INGRESS_CLASS } } },
    render: { ingress: { className: INGRESS_CLASS, allowedHostSuffixes: ['rbac.example.test'] } },
  });
  ({ manifests, configPath, tokenConfig } = installed);
}, 300_000);

afterAll(async () => {
  await world?.close();
  for (const ns of [releaseNs, foreignNs]) {
    if (ns) await world?.kube.core.deleteNamespace({ name: ns }).catch(() => undefined);
  }
  if (work) await rm(work, { recursive: true, force: true });
});

/** `group/resource verb` for every permission the chart's Role in `namespace` grants. */
/** Every permission the chart's Roles grant in the namespace (its own has two: the Lease's, the digest key's). */
function granted(namespace: string): Set<string> {
  const roles = manifests.filter((m) => m.kind === 'Role' && m.metadata.namespace === namespace);
  expect(roles.length, `a Role in ${namespace}`).toBeGreaterThan(0);
  const permissions = new Set<string>();
  for (const rule of roles.flatMap((role) => role.rules ?? [])) {
    for (const group of rule.apiGroups)
      for (const resource of rule.resources)
        for (const verb of rule.verbs) permissions.add(`${group}/${resource} ${verb}`);
  }
  return permissions;
}

interface RequestSample {
  readonly kind: string;
  readonly verb: string;
  readonly code: string;
  readonly count: number;
}

function parseKubeRequests(metrics: string): RequestSample[] {
  const samples: RequestSample[] = [];
  for (const line of metrics.split('\n')) {
    const match = /^k8s_listener_kube_requests_total\{([^}]*)\} (\d+)/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries(
      [...(match[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']),
    );
    samples.push({
      kind: labels.kind ?? '',
      verb: labels.verb ?? '',
      code: labels.code ?? '',
      count: Number(match[2]),
    });
  }
  return samples;
}

/**
 * The permissions a counted request needed: a dry run the same as the write; a server-side apply
 * that created its object (201) is authorized as both patch and create by the API server.
 */
function permissionsOf(sample: RequestSample): string[] {
  // A container's log, counted as its resource (kubeClient.podLog).
  if (sample.kind === 'pods/log') return [`/pods/log ${sample.verb}`];
  const type = resourceTypeOf(sample.kind as ManagedKind);
  expect(type, `a known kind: ${sample.kind}`).toBeDefined();
  const verb = sample.verb.replace(/:dryRun$/, '');
  const verbs = verb === 'patch' && sample.code === '201' ? ['patch', 'create'] : [verb];
  return verbs.map((v) => `${type?.group}/${type?.plural} ${v}`);
}

async function allowed(
  config: k8s.KubeConfig,
  attributes: k8s.V1ResourceAttributes,
): Promise<boolean | undefined> {
  const review = await config.makeApiClient(k8s.AuthorizationV1Api).createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: attributes } },
  });
  return review.status?.allowed;
}

describe('the chart’s RBAC, proven by an agent holding only its ServiceAccount token', () => {
  let requests: RequestSample[] = [];
  let output = '';

  // One agent process through a deployment's whole life, each step an `it`, in order: every step
  // uses permissions, and none may be refused.
  describe('the whole lifecycle, run by the agent with only the chart’s permissions', () => {
    let child: ChildProcess | undefined;
    let exited: Promise<number | null>;
    let probes = '';
    let full: Deployment;
    const appsNs = () => watched[0] ?? '';
    const otherNs = () => watched[1] ?? '';
    const leaseHolder = async () =>
      (
        await world.kube.config
          .makeApiClient(k8s.CoordinationV1Api)
          .readNamespacedLease({ name: 'k8s-listener', namespace: releaseNs })
      ).spec?.holderIdentity;
    /** A failure, with the requests the agent was refused (a 403 is the likely cause of any). */
    const withRefusals =
      (body: () => Promise<void>): (() => Promise<void>) =>
      async () => {
        try {
          await body();
        } catch (error) {
          const refused = output.split('\n').filter((line) => /\b403\b|forbidden/i.test(line));
          throw new Error(
            `${String(error)}; the agent's refused requests: ${refused.slice(0, 5).join('\n')}`,
            { cause: error },
          );
        }
      };

    beforeAll(
      withRefusals(async () => {
        const spawned = spawn(process.execPath, [MAIN, 'run', '--config', configPath], {
          env: agentEnv(),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        child = spawned;
        spawned.stdout?.on('data', (chunk: Buffer) => {
          output += chunk.toString();
        });
        spawned.stderr?.on('data', (chunk: Buffer) => {
          output += chunk.toString();
        });
        exited = new Promise<number | null>((resolve) => spawned.once('exit', (code) => resolve(code)));
        probes = await eventually(
          'the probe address',
          async () => /"probes":"(http:\/\/[^"]+)"/.exec(output)?.[1],
          20_000,
        );
        await eventually('the Lease taken', async () =>
          (await leaseHolder()) === IDENTITY ? true : undefined,
        );
      }),
    );
    afterAll(() => {
      child?.kill('SIGKILL');
    });

    it(
      'rolls out every kind it writes',
      withRefusals(async () => {
        // Every kind the agent writes: prod (PDB), autoscaled (HPA), queue, executor (PodTemplate),
        // database (StatefulSet, credentials Secret, volume), key-value store, secrets, custom URL.
        full = await world.client.createDeployment(
          app(world, 'full', appsNs(), {
            source_config: {
              listener_id: world.listenerId,
              listener_config: { k8s_namespace: appsNs() },
              deployment_type: 'prod',
              custom_url: 'full.rbac.example.test',
              resource_spec: {
                min_scale: 2,
                max_scale: 3,
                cpu: 0.1,
                memory_mb: 64,
                queue_cpu: 0.1,
                executor_cpu: 0.1,
                db_storage_gi: 1,
                kvstore_memory_mb: 32,
              },
            },
          }),
        );
        const small = await world.client.createDeployment(app(world, 'small', otherNs()));
        await waitForRevision(world, full, 'DEPLOYED', 90_000);
        await waitForRevision(world, small, 'DEPLOYED');
      }),
    );

    it(
      'applies a new revision',
      withRefusals(async () => {
        const next = await world.client.patchDeployment(full.id, {
          source_revision_config: { image_uri: 'nginx:1.28' },
        });
        expect(next.latest_revision_id).not.toBe(full.latest_revision_id);
        await waitForRevision(world, next, 'DEPLOYED', 90_000);
      }),
    );

    it(
      'repairs drift: an image edited and a Service deleted by hand come back',
      withRefusals(async () => {
        await world.kube.apps.patchNamespacedDeployment({
          name: 'full',
          namespace: appsNs(),
          body: [
            { op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'busybox:hand-edited' },
          ],
        });
        await world.kube.core.deleteNamespacedService({ name: 'small', namespace: otherNs() });
        await eventually('image restored', async () => {
          const live = await world.kube.apps.readNamespacedDeployment({ name: 'full', namespace: appsNs() });
          return live.spec?.template.spec?.containers[0]?.image === 'nginx:1.28' ? true : undefined;
        });
        await eventually('Service restored', async () =>
          (await world.kube.core.readNamespacedService({ name: 'small', namespace: otherNs() }))
            ? true
            : undefined,
        );
      }),
    );

    it(
      'lets `status` run in the agent’s pod with the same token, every workload of every kind listed',
      withRefusals(async () => {
        const status = await run(
          process.execPath,
          [MAIN, 'status', '--config', configPath, '--output', 'json'],
          {
            env: agentEnv(),
          },
        ).catch((error: { code: number; stdout: string; stderr: string }) => error);
        const statusText = `${status.stdout}${status.stderr}`;
        expect(statusText.split('\n').filter((line) => /\b403\b|forbidden/i.test(line))).toEqual([]);
        // 1 would mean it could not read the cluster; 3 (DEPLOYING) is its view of a rollout.
        expect([0, 3], statusText).toContain('code' in status ? status.code : 0);
        const rows = (
          JSON.parse(status.stdout) as { deployments: { name: string; workloads: { name: string }[] }[] }
        ).deployments;
        expect(
          rows
            .find((row) => row.name === 'full')
            ?.workloads.map((w) => w.name)
            .sort(),
        ).toEqual(['full', 'full-db', 'full-kvstore', 'full-queue']);
      }),
    );

    it(
      'lets `suspend` and `resume` run in the agent’s pod with the same token, acknowledged by the agent',
      withRefusals(async () => {
        for (const command of [
          ['suspend', 'small', '--reason', 'rbac'],
          ['resume', 'small'],
        ]) {
          const done = await run(
            process.execPath,
            [MAIN, ...command, '--config', configPath, '--timeout', '30'],
            {
              env: agentEnv(),
            },
          );
          expect(done.stdout).toContain('the agent acknowledged it');
        }
      }),
    );

    it(
      'writes Events on the workload',
      withRefusals(async () => {
        const events = await world.kube.config
          .makeApiClient(k8s.EventsV1Api)
          .listNamespacedEvent({ namespace: appsNs(), fieldSelector: 'regarding.name=full' });
        expect(events.items.map((e) => e.reason)).toContain('RolloutComplete');
      }),
    );

    it(
      'removes every object of a deleted deployment, and keeps its database volume and the credentials that open it',
      withRefusals(async () => {
        await world.client.deleteDeployment(full.id);
        const selector = `${LABEL_DEPLOYMENT_ID}=${full.id}`;
        await eventually(
          'objects of the deleted deployment removed',
          async () => {
            const [deployments, secrets, templates] = await Promise.all([
              world.kube.apps.listNamespacedDeployment({ namespace: appsNs(), labelSelector: selector }),
              world.kube.core.listNamespacedSecret({ namespace: appsNs(), labelSelector: selector }),
              world.kube.core.listNamespacedPodTemplate({ namespace: appsNs(), labelSelector: selector }),
            ]);
            // The database's volume is kept, and its credentials with it.
            const secretNames = secrets.items.map((s) => s.metadata?.name);
            return deployments.items.length + templates.items.length === 0 &&
              secretNames.join() === 'full-db-credentials'
              ? true
              : undefined;
          },
          60_000,
        );
        const claims = await world.kube.core.listNamespacedPersistentVolumeClaim({
          namespace: appsNs(),
          labelSelector: selector,
        });
        expect(claims.items.map((c) => c.metadata?.name)).toEqual(['data-full-db-0']);
      }),
    );

    it(
      'counts its Kubernetes requests by kind, verb and code on /metrics',
      withRefusals(async () => {
        requests = parseKubeRequests(await (await fetch(`${probes}/metrics`)).text());
        expect(requests.length).toBeGreaterThan(10);
      }),
    );

    it(
      'releases its Lease on SIGTERM, for an immediate successor',
      withRefusals(async () => {
        child?.kill('SIGTERM');
        expect(await exited, output).toBe(0);
        expect(await leaseHolder()).toBeFalsy();
      }),
    );

    it('was refused nothing: no 403 counted, none logged', () => {
      expect(requests.length).toBeGreaterThan(10);
      expect(requests.filter((r) => r.code === '403')).toEqual([]);
      expect(output.split('\n').filter((line) => /\b403\b|forbidden/i.test(line))).toEqual([]);
    });
  });

  it('grants exactly the verbs the agent used: none granted and never used', () => {
    expect(requests.length).toBeGreaterThan(0);
    const used = new Set(requests.flatMap(permissionsOf));
    const lease = manifests.find(
      (m) =>
        m.kind === 'Role' &&
        m.metadata.namespace === releaseNs &&
        m.metadata.name.endsWith('-leader-election'),
    );
    const leasePermissions = granted(releaseNs);
    const namespacePermissions = granted(watched[0] ?? '');
    // Both watched namespaces get the same Role.
    expect([...granted(watched[1] ?? '')].sort()).toEqual([...namespacePermissions].sort());
    // The metric has no namespace label; in its own namespace the agent touches its Lease, its
    // digest key (a Secret it reads and, on the first start, makes), the suspensions (a
    // ConfigMap it reads and acknowledges) and the listener-wide Events about them alone.
    const isLease = (p: string) => p.startsWith('coordination.k8s.io/leases ');
    const isOwn = (p: string) =>
      isLease(p) ||
      [
        '/secrets get',
        '/secrets create',
        '/configmaps get',
        '/configmaps patch',
        'events.k8s.io/events create',
      ].includes(p);
    const unused = (permissions: Set<string>, usedHere: (p: string) => boolean) =>
      [...permissions].filter((p) => !(used.has(p) && usedHere(p)) && NOT_IN_RUN[p] === undefined).sort();
    expect(unused(namespacePermissions, (p) => !isLease(p))).toEqual([]);
    expect(unused(leasePermissions, isOwn)).toEqual([]);
    // And each used permission is granted by one of them (the run saw no 403, this says where).
    const everything = new Set([...namespacePermissions, ...leasePermissions]);
    expect([...used].filter((p) => !everything.has(p)).sort()).toEqual([]);
    // The Lease is granted by name for everything but create (RBAC cannot name an object not yet made).
    expect(
      lease?.rules?.filter((r) => r.resources.includes('leases') && !r.verbs.includes('create')),
    ).toEqual([expect.objectContaining({ resourceNames: ['k8s-listener'] })]);
    expect(manifests.filter((m) => m.kind.startsWith('Cluster'))).toEqual([]);
  });

  it('passes `check` with the same token: the chart grants every permission the preflight asks about', async () => {
    const result = await run(process.execPath, [MAIN, 'check', '--config', configPath, '--output', 'json'], {
      env: agentEnv(),
    }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    const report = JSON.parse(result.stdout) as { checks: { id: string; ok: boolean; reason?: string }[] };
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
    expect(report.checks.filter((c) => c.id.startsWith('access/')).length).toBeGreaterThan(5);
  });

  it('follows the agent configuration: Ingresses, HTTPRoutes and the Lease only as configured', async () => {
    const template = async (...sets: string[]) => {
      const { stdout } = await run(
        join(inject('clusterBinDir'), 'helm'),
        ['template', RELEASE, CHART, '-n', 'rel', '--set', `listenerId=${world.listenerId}`]
          .concat(['--set', 'controlPlane.url=http://cp.example.test', '--set', 'namespaces={n1}'])
          .concat(sets.flatMap((set) => ['--set', set])),
        {
          env: {
            ...process.env,
            HELM_CACHE_HOME: join(work, 'helm-cache'),
            HELM_CONFIG_HOME: join(work, 'helm-config'),
          },
        },
      );
      const roles = parseAllDocuments(stdout)
        .map((doc) => doc.toJSON() as Manifest | null)
        .filter((m): m is Manifest => m?.kind === 'Role');
      const rulesOf = (namespace: string) =>
        roles.filter((r) => r.metadata.namespace === namespace).flatMap((r) => r.rules ?? []);
      const verbsOn = (namespace: string, resource: string) =>
        rulesOf(namespace)
          .filter((r) => r.resources.includes(resource))
          .flatMap((r) => r.verbs);
      return { rulesOf, verbsOn };
    };
    const plain = await template();
    expect(plain.verbsOn('n1', 'ingresses')).toEqual([]);
    for (const resource of ['httproutes', 'scaledobjects', 'triggerauthentications'])
      expect(plain.verbsOn('n1', resource), resource).toEqual([]);
    // A Gateway and KEDA queue scaling: HTTPRoutes and KEDA's kinds, in their own API groups.
    const routedAndScaled = await template(
      'config.render.gateway.parentRefs[0].name=shared',
      'config.render.autoscaling.queue=keda',
    );
    // Ingresses read only: a host is judged against both route kinds.
    expect(routedAndScaled.verbsOn('n1', 'ingresses')).toEqual(['list']);
    const all = ['get', 'list', 'watch', 'create', 'patch', 'delete'];
    expect(routedAndScaled.rulesOf('n1')).toEqual(
      expect.arrayContaining([
        { apiGroups: ['gateway.networking.k8s.io'], resources: ['httproutes'], verbs: all },
        { apiGroups: ['keda.sh'], resources: ['scaledobjects', 'triggerauthentications'], verbs: all },
      ]),
    );
    // Each only with its own setting.
    const scaledOnly = await template('config.render.autoscaling.queue=keda');
    expect(scaledOnly.verbsOn('n1', 'httproutes')).toEqual([]);
    expect(scaledOnly.verbsOn('n1', 'scaledobjects')).toEqual(all);
    // Delete whatever keepDatabaseVolumes says: a rename past the kept volumes deletes the oldest.
    expect(plain.verbsOn('n1', 'persistentvolumeclaims')).toEqual(['get', 'list', 'watch', 'delete']);
    const configured = await template(
      'config.render.ingress.className=public',
      'config.reconcile.prune.keepDatabaseVolumes=false',
      'config.reconcile.leaderElection.leaseName=my-lease',
      'config.reconcile.leaderElection.leaseNamespace=coordination',
    );
    expect(configured.verbsOn('n1', 'ingresses')).toEqual([
      'get',
      'list',
      'watch',
      'create',
      'patch',
      'delete',
    ]);
    // And HTTPRoutes read only, beside the Ingresses it writes.
    expect(configured.verbsOn('n1', 'httproutes')).toEqual(['list']);
    expect(configured.verbsOn('n1', 'persistentvolumeclaims')).toEqual(['get', 'list', 'watch', 'delete']);
    // In the release's namespace only the digest key and the suspensions: the Lease went elsewhere.
    expect(configured.rulesOf('rel')).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['k8s-listener-digest-key'], verbs: ['get'] },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['k8s-listener-suspensions'],
        verbs: ['get', 'patch'],
      },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
    expect(configured.rulesOf('coordination')).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['my-lease'],
        verbs: ['get', 'update'],
      },
    ]);
  });

  it('may read pods’ logs in its watched namespaces alone (the evidence of a failure)', async () => {
    const mayRead = async (namespace: string) =>
      allowed(tokenConfig, { namespace, group: '', resource: 'pods', subresource: 'log', verb: 'get' });
    for (const namespace of watched) expect(await mayRead(namespace), namespace).toBe(true);
    for (const namespace of [foreignNs, releaseNs, 'kube-system'])
      expect(await mayRead(namespace), namespace).toBe(false);
  });

  it('denies every write outside the watched namespaces, and Secrets there', async () => {
    const writes = ['create', 'update', 'patch', 'delete', 'deletecollection'];
    const kinds: ManagedKind[] = [
      'Secret',
      'Service',
      'ConfigMap',
      'PersistentVolumeClaim',
      'PodTemplate',
      'Pod',
      'Event',
      'Deployment',
      'StatefulSet',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'Ingress',
      'NetworkPolicy',
      'HTTPRoute',
      'ScaledObject',
      'TriggerAuthentication',
      'Lease',
    ];
    const allowedWrites: string[] = [];
    for (const namespace of [foreignNs, 'default', 'kube-system']) {
      for (const kind of kinds) {
        const type = resourceTypeOf(kind);
        for (const verb of writes) {
          const answer = await allowed(tokenConfig, {
            namespace,
            group: type?.group ?? '',
            resource: type?.plural ?? '',
            verb,
          });
          if (answer !== false) allowedWrites.push(`${namespace} ${type?.plural} ${verb}`);
        }
      }
    }
    expect(allowedWrites).toEqual([]);
    // In its own namespace it may only hold its Lease, make its digest key (a Secret: RBAC
    // cannot name what does not exist yet), which it may read by name alone, and record the
    // listener-wide Events.
    for (const kind of kinds.filter((k) => k !== 'Lease' && k !== 'Secret' && k !== 'Event')) {
      const type = resourceTypeOf(kind);
      expect(
        await allowed(tokenConfig, {
          namespace: releaseNs,
          group: type?.group ?? '',
          resource: type?.plural ?? '',
          verb: 'create',
        }),
        `${kind} create in the release namespace`,
      ).toBe(false);
    }
    expect(await allowed(tokenConfig, { namespace: releaseNs, resource: 'secrets', verb: 'create' })).toBe(
      true,
    );
    expect(
      await allowed(tokenConfig, {
        namespace: releaseNs,
        group: 'events.k8s.io',
        resource: 'events',
        verb: 'create',
      }),
    ).toBe(true);
    for (const [name, verb, expected] of [
      ['k8s-listener-digest-key', 'get', true],
      ['k8s-listener-digest-key', 'update', false],
      ['k8s-listener-digest-key', 'delete', false],
      ['k8s-listener-api-key', 'get', false],
    ] as const) {
      expect(
        await allowed(tokenConfig, { namespace: releaseNs, resource: 'secrets', verb, name }),
        `${verb} secret ${name} in the release namespace`,
      ).toBe(expected);
    }
    // Secrets: readable in the watched namespaces only (and the digest key by name).
    for (const namespace of [foreignNs, releaseNs, 'kube-system', undefined]) {
      for (const verb of ['get', 'list', 'watch']) {
        expect(
          await allowed(tokenConfig, { ...(namespace ? { namespace } : {}), resource: 'secrets', verb }),
          `secrets ${verb} in ${namespace ?? 'all namespaces'}`,
        ).toBe(false);
      }
    }
    expect(
      await allowed(tokenConfig, { namespace: watched[0] ?? '', resource: 'secrets', verb: 'get' }),
    ).toBe(true);

    // And for real, with the token: the requests themselves are refused.
    const core = tokenConfig.makeApiClient(k8s.CoreV1Api);
    await expect(
      core.readNamespacedSecret({ name: 'not-yours', namespace: foreignNs }),
    ).rejects.toMatchObject({
      code: 403,
    });
    await expect(core.listSecretForAllNamespaces()).rejects.toMatchObject({ code: 403 });
    await expect(
      core.createNamespacedConfigMap({ namespace: foreignNs, body: { metadata: { name: 'intruder' } } }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      core.deleteNamespacedSecret({ name: 'not-yours', namespace: foreignNs }),
    ).rejects.toMatchObject({
      code: 403,
    });
  });

  it('may ask the API server what it may do (SelfSubjectAccessReview) through system:basic-user alone', async () => {
    // The chart grants nothing on authorization.k8s.io; the default ClusterRole every
    // authenticated user holds does, which is what `k8s-listener check` relies on.
    const rules = manifests.flatMap((m) => m.rules ?? []);
    expect(rules.filter((r) => r.apiGroups.includes('authorization.k8s.io'))).toEqual([]);
    const basicUser = await world.kube.config
      .makeApiClient(k8s.RbacAuthorizationV1Api)
      .readClusterRole({ name: 'system:basic-user' });
    expect(basicUser.rules).toContainEqual(
      expect.objectContaining({
        apiGroups: ['authorization.k8s.io'],
        resources: expect.arrayContaining(['selfsubjectaccessreviews']),
        verbs: ['create'],
      }),
    );
    expect(
      await allowed(tokenConfig, {
        namespace: watched[0] ?? '',
        group: 'apps',
        resource: 'deployments',
        verb: 'patch',
      }),
    ).toBe(true);
  });
});

describe('the chart’s RBAC with a Gateway and KEDA queue scaling, proven by its own token', () => {
  const RELEASE_GK = 'agent-gk';
  const GATEWAY = { namespace: 'gateways', name: 'shared' };
  const KINDS = ['httproutes', 'scaledobjects', 'triggerauthentications'];
  let gkWorld: World;
  let gkReleaseNs: string;
  let gk: InstalledRelease;

  beforeAll(async () => {
    gkWorld = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
    gkReleaseNs = uniqueNamespace('listener-gk');
    await createNamespace(gkWorld.kube, gkReleaseNs);
    const render = {
      gateway: { parentRefs: [GATEWAY] },
      autoscaling: { queue: 'keda' },
    };
    gk = await installRelease({
      world: gkWorld,
      release: RELEASE_GK,
      releaseNs: gkReleaseNs,
      identity: 'rbac-agent-gk',
      config: { render },
      render: { ...render, ingress: { allowedHostSuffixes: ['rbac.example.test'] } },
    });
  }, 300_000);
  afterAll(async () => {
    await gkWorld?.close();
    if (gkReleaseNs) await gkWorld?.kube.core.deleteNamespace({ name: gkReleaseNs }).catch(() => undefined);
  });

  it('routes and scales a deployment through its lifecycle with nothing forbidden, using each permission granted for it', async () => {
    const [ns = ''] = gkWorld.namespaces;
    let output = '';
    const child: ChildProcess = spawn(process.execPath, [MAIN, 'run', '--config', gk.configPath], {
      env: agentEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let requests: RequestSample[] = [];
    const custom = gkWorld.kube.config.makeApiClient(k8s.CustomObjectsApi);
    try {
      const probes = await eventually(
        'the probe address',
        async () => /"probes":"(http:\/\/[^"]+)"/.exec(output)?.[1],
        20_000,
      );
      const deployment = await gkWorld.client.createDeployment(
        app(gkWorld, 'routed', ns, {
          source_config: {
            listener_id: gkWorld.listenerId,
            listener_config: { k8s_namespace: ns },
            custom_url: 'https://routed.rbac.example.test/agents',
            resource_spec: {
              min_scale: 1,
              max_scale: 1,
              cpu: 0.1,
              memory_mb: 64,
              queue_min_scale: 1,
              queue_max_scale: 3,
              queue_cpu: 0.1,
              db_storage_gi: 1,
            },
          },
        }),
      );
      const selector = `${LABEL_DEPLOYMENT_ID}=${deployment.id}`;
      const count = async (group: string, version: string, plural: string) =>
        (
          (await custom.listNamespacedCustomObject({
            group,
            version,
            namespace: ns,
            plural,
            labelSelector: selector,
          })) as { items: unknown[] }
        ).items.length;
      const counts = async () =>
        (await count('gateway.networking.k8s.io', 'v1', 'httproutes')) +
        (await count('keda.sh', 'v1alpha1', 'scaledobjects')) +
        (await count('keda.sh', 'v1alpha1', 'triggerauthentications'));
      await eventually(
        'the route and the scaler applied',
        async () => ((await counts()) === 3 ? true : undefined),
        60_000,
      );
      await gatewaySays(gkWorld.kube, { namespace: ns, name: 'routed' }, GATEWAY, {
        status: 'True',
        reason: 'Accepted',
        message: 'route attached',
      });
      await waitForRevision(gkWorld, deployment, 'DEPLOYED', 90_000);

      // Drift repaired with the same token: the route deleted by hand comes back.
      await custom.deleteNamespacedCustomObject({
        group: 'gateway.networking.k8s.io',
        version: 'v1',
        namespace: ns,
        plural: 'httproutes',
        name: 'routed',
      });
      await eventually('the route restored', async () => ((await counts()) === 3 ? true : undefined), 60_000);

      await gkWorld.client.deleteDeployment(deployment.id);
      await eventually(
        'the route and the scaler pruned',
        async () => ((await counts()) === 0 ? true : undefined),
        60_000,
      );
      requests = parseKubeRequests(await (await fetch(`${probes}/metrics`)).text());
      child.kill('SIGTERM');
      expect(await exited, output).toBe(0);
    } catch (error) {
      const refused = output.split('\n').filter((line) => /\b403\b|forbidden/i.test(line));
      throw new Error(`${String(error)}; the agent's refused requests: ${refused.slice(0, 5).join('\n')}`, {
        cause: error,
      });
    } finally {
      child.kill('SIGKILL');
    }
    expect(requests.filter((r) => r.code === '403')).toEqual([]);
    expect(output.split('\n').filter((line) => /\b403\b|forbidden/i.test(line))).toEqual([]);

    // Every verb the Role grants on these kinds was used (reads of a miss aside, as above).
    const used = new Set(requests.flatMap(permissionsOf));
    const role = gk.manifests.filter((m) => m.kind === 'Role' && m.metadata.namespace === ns);
    const grantedHere = role
      .flatMap((r) => r.rules ?? [])
      .flatMap((rule) =>
        rule.resources
          .filter((resource) => KINDS.includes(resource))
          .flatMap((resource) => rule.verbs.map((verb) => `${rule.apiGroups[0]}/${resource} ${verb}`)),
      );
    expect(grantedHere).toHaveLength(18);
    expect(grantedHere.filter((p) => !used.has(p)).sort()).toEqual([]);
    // The Ingresses it does not write are listed (read only) to judge the route's host.
    expect(role.flatMap((r) => r.rules ?? []).filter((rule) => rule.resources.includes('ingresses'))).toEqual(
      [{ apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['list'] }],
    );
    expect(used).toContain('networking.k8s.io/ingresses list');
  });

  it('grants the Gateway’s and KEDA’s kinds to this release’s token alone, in its namespaces alone', async () => {
    const [ns = ''] = gkWorld.namespaces;
    for (const [group, resource] of [
      ['gateway.networking.k8s.io', 'httproutes'],
      ['keda.sh', 'scaledobjects'],
      ['keda.sh', 'triggerauthentications'],
    ] as const) {
      expect(
        await allowed(gk.tokenConfig, { namespace: ns, group, resource, verb: 'create' }),
        resource,
      ).toBe(true);
      expect(await allowed(gk.tokenConfig, { namespace: gkReleaseNs, group, resource, verb: 'create' })).toBe(
        false,
      );
      // The release configured for Ingresses is granted none of them, in its own namespaces either.
      expect(
        await allowed(tokenConfig, { namespace: watched[0] ?? '', group, resource, verb: 'create' }),
      ).toBe(false);
    }
  });

  it('passes `check` with the same token', async () => {
    const result = await run(
      process.execPath,
      [MAIN, 'check', '--config', gk.configPath, '--output', 'json'],
      {
        env: agentEnv(),
      },
    ).catch((error: { code: number; stdout: string; stderr: string }) => error);
    const report = JSON.parse(result.stdout) as { checks: { id: string; ok: boolean; reason?: string }[] };
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
    const asked = report.checks.map((c) => c.id).join(' ');
    for (const resource of [
      'httproutes.gateway.networking.k8s.io',
      'scaledobjects.keda.sh',
      'triggerauthentications.keda.sh',
    ])
      expect(asked).toContain(resource);
    // And the cluster serves them (their CRDs are installed).
    expect(report.checks.filter((c) => c.id.startsWith('kind/')).map((c) => [c.id, c.ok])).toEqual([
      ['kind/httproutes.gateway.networking.k8s.io/v1', true],
      ['kind/scaledobjects.keda.sh/v1alpha1', true],
      ['kind/triggerauthentications.keda.sh/v1alpha1', true],
    ]);
  });
});
