// `k8s-listener check` against the real test cluster and the emulator: all green as admin, and
// each failure it exists to find — a missing permission of a real service account, a wrong API
// key, a missing namespace — as the one ✗ line naming it, with exit code 1.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { CheckReport, runCheckCommand } from '../../../src/cli/check.ts';
import { startEmulator } from '../../../src/emulator/server.ts';
import { createNamespace, kubectlWithInput, uniqueNamespace } from '../../support/adminKube.ts';
import { startWorld, type World } from '../../support/agentHarness.ts';
import { ControlPlaneTestClient } from '../../support/controlPlaneTestClient.ts';

const execFileAsync = promisify(execFile);
const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;

let world: World;
let dir: string;
let ownNamespace: string;

async function check(config: Record<string, unknown>, kubeconfig: string, name: string) {
  const path = join(dir, `${name}.yaml`);
  await writeFile(path, stringify(config));
  let text = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  // --kubeconfig as a flag: flags win over the environment the suite sets for child processes.
  const code = await runCheckCommand(['--config', path, '--kubeconfig', kubeconfig], { stdout });
  return { code, text, lines: text.trimEnd().split('\n') };
}

function baseConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    listenerId: world.listenerId,
    controlPlane: { baseUrl: world.emulator.url },
    agentNamespace: ownNamespace,
    namespaces: world.namespaces,
    ...overrides,
  };
}

/** The ✗ lines (titles only) of a checklist. */
function failures(lines: readonly string[]): string[] {
  return lines.filter((line) => line.startsWith('✗ '));
}

const ALL_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/** What the chart grants in a managed namespace, with the verbs of some resources replaced. */
function namespaceRules(verbsOf: { secrets?: string[]; deployments?: string[] }): unknown[] {
  return [
    { apiGroups: [''], resources: ['secrets'], verbs: verbsOf.secrets ?? ALL_VERBS },
    {
      apiGroups: [''],
      resources: ['services', 'configmaps', 'persistentvolumeclaims', 'podtemplates'],
      verbs: ALL_VERBS,
    },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
    { apiGroups: ['apps'], resources: ['deployments'], verbs: verbsOf.deployments ?? ALL_VERBS },
    { apiGroups: ['apps'], resources: ['statefulsets'], verbs: ALL_VERBS },
    { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: ALL_VERBS },
    { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ALL_VERBS },
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ALL_VERBS },
    { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update', 'list'] },
  ];
}

/**
 * As the chart grants it in the agent's own namespace: create any Lease, get and update only the
 * agent's own; make its digest key, and read it by name; read and acknowledge the suspensions.
 */
const OWN_NAMESPACE_RULES: unknown[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: ['k8s-listener'],
    verbs: ['get', 'update'],
  },
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  { apiGroups: [''], resources: ['secrets'], resourceNames: ['k8s-listener-digest-key'], verbs: ['get'] },
  {
    apiGroups: [''],
    resources: ['configmaps'],
    resourceNames: ['k8s-listener-suspensions'],
    verbs: ['get', 'patch'],
  },
];

/**
 * A service account of the agent's namespace granted these rules (a Role and its binding per
 * namespace), and a kubeconfig holding only its token (TokenRequest API), as a Pod would have.
 */
async function accountKubeconfig(
  account: string,
  grants: readonly (readonly [string, unknown[]])[],
): Promise<{ kubeconfig: string; account: string; token: string }> {
  const kube = world.kube;
  await kube.core.createNamespacedServiceAccount({
    namespace: ownNamespace,
    body: { metadata: { name: account } },
  });
  const subject = [{ kind: 'ServiceAccount', name: account, namespace: ownNamespace }];
  for (const [namespace, roleRules] of grants) {
    await kube.objects.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: account, namespace },
      rules: roleRules,
    } as never);
    await kube.objects.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: account, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
      subjects: subject,
    } as never);
  }
  const token = await kube.core.createNamespacedServiceAccountToken({
    name: account,
    namespace: ownNamespace,
    body: { spec: { expirationSeconds: 3600, audiences: [] } },
  });
  const cluster = kube.config.getCurrentCluster();
  if (!cluster?.caData || !token.status?.token) throw new Error('no cluster CA or token');
  const kubeconfig = join(dir, `${account}-kubeconfig`);
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'c', cluster: { server: cluster.server, 'certificate-authority-data': cluster.caData } },
      ],
      users: [{ name: 'sa', user: { token: token.status.token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'sa' } }],
      'current-context': 'c',
    }),
    { mode: 0o600 },
  );
  return { kubeconfig, account, token: token.status.token };
}

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 2 });
  ownNamespace = uniqueNamespace('chk-own');
  await createNamespace(world.kube, ownNamespace);
  dir = await mkdtemp(join(tmpdir(), 'k8s-listener-check-'));
});

afterAll(async () => {
  await world?.close();
  await world?.kube.core.deleteNamespace({ name: ownNamespace }).catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('k8s-listener check', () => {
  it('passes every line as admin, as a real process too (exit 0)', async () => {
    const { code, lines } = await check(baseConfig(), world.kubeconfigPath, 'admin');
    expect(failures(lines)).toEqual([]);
    expect(code).toBe(0);
    const [a, b] = world.namespaces as [string, string];
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^✓ configuration loads: listener /),
        `✓ control plane answers at ${world.emulator.url} and accepts the API key`,
        `✓ listener ${world.listenerId} is k8s and shares namespaces with the agent: ${a}, ${b} (agent allow-list: ${a}, ${b})`,
        expect.stringMatching(/^✓ Kubernetes API server answers at https:\/\/127\.0\.0\.1:\d+$/),
        '✓ Kubernetes v1.34.4 is supported (≥ 1.29)',
        `✓ namespace ${a} (managed) exists`,
        `✓ namespace ${b} (managed) exists`,
        `✓ namespace ${ownNamespace} (the agent's own, for its Lease) exists`,
        `✓ may get, list, watch, create, patch, delete secrets in ${a}`,
        `✓ may get, list, watch, create, patch, delete deployments.apps in ${b}`,
        `✓ may create, patch, list events.events.k8s.io in ${b}`,
        `✓ may create leases.coordination.k8s.io in ${ownNamespace}`,
        `✓ may get, update leases.coordination.k8s.io/k8s-listener in ${ownNamespace}`,
      ]),
    );
    expect(lines.at(-1)).toBe(`all ${lines.length - 1} checks passed`);

    // The same as a real process, with JSON output.
    const config = join(dir, 'admin.yaml');
    const { stdout } = await execFileAsync(
      process.execPath,
      [MAIN, 'check', '--config', config, '--kubeconfig', world.kubeconfigPath, '--output', 'json'],
      { timeout: 60_000 },
    );
    // The documented shape, validated by its schema.
    const report = CheckReport.parse(JSON.parse(stdout));
    expect(report.ok).toBe(true);
    expect(report.checks.length).toBe(lines.length - 1);
    expect(report.checks.every((line) => line.ok)).toBe(true);
  });

  it('names the one permission a service account lacks: verb, resource, namespace (exit 1)', async () => {
    const [a, b] = world.namespaces as [string, string];
    const all = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
    // Everything the chart grants, but `delete` on Secrets in the first namespace.
    const { kubeconfig, account, token } = await accountKubeconfig('check-agent', [
      [a, namespaceRules({ secrets: all.filter((verb) => verb !== 'delete') })],
      [b, namespaceRules({})],
      [ownNamespace, OWN_NAMESPACE_RULES],
    ]);
    const { code, lines, text } = await check(baseConfig(), kubeconfig, 'service-account');
    expect(failures(lines)).toEqual([`✗ may not delete secrets in ${a}`]);
    const at = lines.indexOf(`✗ may not delete secrets in ${a}`);
    expect(lines[at + 1]).toContain(`to system:serviceaccount:${ownNamespace}:${account}`);
    expect(lines[at + 2]).toBe(
      `    fix:    grant it in a Role bound in ${a}: apiGroups: [""], resources: [secrets], verbs: [delete] (the Helm chart's Role does)`,
    );
    // It could not read namespaces (no cluster-wide permission), and still knew they exist.
    expect(lines).toContain(`✓ namespace ${a} (managed) exists`);
    expect(lines).toContain(`✓ namespace ${ownNamespace} (the agent's own, for its Lease) exists`);
    expect(lines).toContain(`✓ may get, update leases.coordination.k8s.io/k8s-listener in ${ownNamespace}`);
    expect(lines).toContain(`✓ may get, list, watch, create, patch, delete deployments.apps in ${a}`);
    expect(text).not.toContain(token);
    expect(code).toBe(1);
  });

  it('refuses a Role without create on Deployments: the first server-side apply needs it (exit 1)', async () => {
    const [a, b] = world.namespaces as [string, string];
    const { kubeconfig } = await accountKubeconfig('check-no-create', [
      [a, namespaceRules({ deployments: ALL_VERBS.filter((verb) => verb !== 'create') })],
      [b, namespaceRules({})],
      [ownNamespace, OWN_NAMESPACE_RULES],
    ]);
    // What run would meet: the server-side apply that creates a Deployment is refused...
    const deployment = stringify({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'no-create', namespace: a },
      spec: {
        selector: { matchLabels: { app: 'no-create' } },
        template: {
          metadata: { labels: { app: 'no-create' } },
          spec: { containers: [{ name: 'c', image: 'example.invalid/app:1' }] },
        },
      },
    });
    const refused = await kubectlWithInput(
      inject('clusterBinDir'),
      kubeconfig,
      ['apply', '--server-side', '--field-manager=k8s-listener', '-f', '-'],
      deployment,
    ).then(
      () => 'applied',
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/forbidden.*cannot create resource "deployments"/s);
    const { code, lines } = await check(baseConfig(), kubeconfig, 'no-create');
    // ...and what check says of it.
    expect(failures(lines)).toEqual([`✗ may not create deployments.apps in ${a}`]);
    expect(lines).toContain(`✓ may get, list, watch, create, patch, delete deployments.apps in ${b}`);
    expect(code).toBe(1);
  });

  it('a wrong API key is ✗ on the control plane line, and the key is never printed (exit 1)', async () => {
    const emulator = await startEmulator({ apiKey: 'the-right-key-1234' });
    const client = new ControlPlaneTestClient({
      baseUrl: emulator.url,
      apiKey: 'the-right-key-1234',
      logger: pino({ level: 'silent' }),
    });
    try {
      const listener = await client.createListener({
        compute_type: 'k8s',
        compute_id: `check-${world.namespaces[0]}`,
        compute_config: { k8s_namespaces: [...world.namespaces] },
      });
      const right = await check(
        baseConfig({
          listenerId: listener.id,
          controlPlane: { baseUrl: emulator.url, apiKey: 'the-right-key-1234' },
        }),
        world.kubeconfigPath,
        'right-key',
      );
      expect(failures(right.lines)).toEqual([]);

      const { code, lines, text } = await check(
        baseConfig({
          listenerId: listener.id,
          controlPlane: { baseUrl: emulator.url, apiKey: 'a-wrong-key-5678' },
        }),
        world.kubeconfigPath,
        'wrong-key',
      );
      expect(failures(lines)).toEqual([
        `✗ control plane at ${emulator.url} refuses the API key`,
        `✗ listener ${listener.id} not checked`,
      ]);
      expect(text).toContain(
        "fix:    set controlPlane.apiKey (K8S_LISTENER_API_KEY, or the chart's API key Secret)",
      );
      expect(text).not.toContain('a-wrong-key-5678');
      expect(text).not.toContain('the-right-key-1234');
      expect(code).toBe(1);
    } finally {
      await client.close();
      await emulator.close();
    }
  });

  it('a listener namespace that does not exist is ✗ on its line (exit 1)', async () => {
    const missing = uniqueNamespace('chk-missing');
    const listener = await world.client.createListener({
      compute_type: 'k8s',
      compute_id: `check-missing-${world.namespaces[0]}`,
      compute_config: { k8s_namespaces: [world.namespaces[0] as string, missing] },
    });
    const { code, lines } = await check(
      baseConfig({ listenerId: listener.id, namespaces: [world.namespaces[0] as string, missing] }),
      world.kubeconfigPath,
      'missing',
    );
    expect(failures(lines)).toEqual([`✗ namespace ${missing} (managed) does not exist`]);
    const at = lines.indexOf(`✗ namespace ${missing} (managed) does not exist`);
    expect(lines[at + 2]).toBe(
      `    fix:    kubectl create namespace ${missing}, or remove it from the listener's k8s_namespaces`,
    );
    expect(code).toBe(1);
  });

  it('one line per namespace and resource when the Lease lives in a managed namespace', async () => {
    const [a] = world.namespaces as [string, string];
    // The Lease beside the deployments (the agent's own namespace is never a managed one).
    const { code, lines } = await check(
      baseConfig({ reconcile: { leaderElection: { leaseNamespace: a } } }),
      world.kubeconfigPath,
      'own-managed',
    );
    expect(failures(lines)).toEqual([]);
    expect(lines.filter((line) => line.includes(`leases.coordination.k8s.io`))).toEqual([
      `✓ may create leases.coordination.k8s.io in ${a}`,
      `✓ may get, update leases.coordination.k8s.io/k8s-listener in ${a}`,
    ]);
    expect(lines.filter((line) => line.startsWith(`✓ namespace ${a} `))).toEqual([
      `✓ namespace ${a} (managed) exists`,
    ]);
    expect(code).toBe(0);
  });

  it('a listener of another compute type is ✗ on the listener line (exit 1)', async () => {
    const listener = await world.client.createListener({
      compute_type: 'ecs',
      compute_id: `check-ecs-${world.namespaces[0]}`,
    });
    const { code, lines } = await check(baseConfig({ listenerId: listener.id }), world.kubeconfigPath, 'ecs');
    expect(failures(lines)).toEqual([`✗ listener ${listener.id} has compute type ecs, not k8s`]);
    expect(code).toBe(1);
  });

  it('an allow-list that shares no namespace with the listener is ✗ on the listener line (exit 1)', async () => {
    const { code, lines } = await check(
      baseConfig({ namespaces: ['somewhere-else'] }),
      world.kubeconfigPath,
      'disjoint',
    );
    expect(failures(lines)[0]).toBe(`✗ listener ${world.listenerId} leaves no namespace to manage`);
    expect(code).toBe(1);
  });
});
