import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  leaseAccess,
  namespaceAccess,
  qualifiedResource,
  statusAccess,
} from '../../../src/cli/requiredAccess.ts';
import { findResourceType, resourceTypeOf } from '../../../src/kube/resources.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import { OBSERVED_KINDS, watchedKinds } from '../../../src/reconcile/policy/watchedKinds.ts';
import { RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import { goldenConfig, listener, maximalDeployment } from '../../support/renderFixtures.ts';
import { grantedLines, type RoleRule, requiredLines } from '../../support/roleGrants.ts';

const reconcile = ReconcileConfig.parse({});
/** What a kind the agent applies needs: read back, listed and watched, created or patched, pruned. */
const WRITTEN = ['get', 'list', 'watch', 'create', 'patch', 'delete'];

function verbsOf(access: ReturnType<typeof namespaceAccess>, group: string, resource: string): string[] {
  return access.find((a) => a.group === group && a.resource === resource)?.verbs.slice() ?? [];
}

describe('the permissions check asks for', () => {
  // Derived from what render produces: every kind it writes is read back, applied and pruned.
  const result = renderDeployment(
    { deployment: maximalDeployment, revision: undefined, listener, allowedNamespaces: undefined },
    goldenConfig,
  );
  if (!result.ok) throw result.error;
  const kinds = [...new Set(result.value.objects.map((o) => `${o.apiVersion} ${o.kind}`))];
  const access = namespaceAccess({ render: goldenConfig, reconcile });

  // Server-side apply that creates an object is authorized as create: without it the first apply of
  // each object is refused, though the check would have passed.
  it('get, create, patch and delete on every kind the maximal deployment renders into', () => {
    expect(kinds.length).toBeGreaterThanOrEqual(8);
    for (const key of kinds) {
      const [apiVersion, kind] = key.split(' ') as [string, string];
      const type = findResourceType(apiVersion, kind);
      expect(type, key).toBeDefined();
      expect(verbsOf(access, type?.group ?? '', type?.plural ?? ''), key).toEqual(
        expect.arrayContaining(['get', 'create', 'patch', 'delete']),
      );
    }
  });

  it('list and watch on exactly the kinds the agent watches', () => {
    const watched = [...watchedKinds(goldenConfig), ...OBSERVED_KINDS].map((kind) => {
      const type = resourceTypeOf(kind);
      return type?.group === '' ? type.plural : `${type?.plural}.${type?.group}`;
    });
    const asked = access.filter((a) => a.verbs.includes('watch')).map(qualifiedResource);
    expect(asked.sort()).toEqual([...watched].sort());
    for (const a of access.filter((a) => a.verbs.includes('watch'))) expect(a.verbs).toContain('list');
  });

  it.each([
    ['', 'secrets', WRITTEN],
    ['', 'podtemplates', WRITTEN],
    // The inventory ConfigMaps are applied too: created by the first apply.
    ['', 'configmaps', WRITTEN],
    ['', 'persistentvolumeclaims', ['get', 'list', 'watch', 'delete']],
    ['', 'pods', ['list', 'watch']],
    // The evidence of a failure: a crashed container's log, a failing pod's warning Events.
    ['', 'pods/log', ['get']],
    ['events.k8s.io', 'events', ['create', 'patch', 'list']],
  ])('%s %s: %j', (group, resource, verbs) => {
    expect(verbsOf(access, group, resource)).toEqual(verbs);
  });

  it('asks for ingresses only when an ingress class is configured', () => {
    const without = namespaceAccess({
      render: RenderConfig.parse({ networkPolicy: { enabled: false } }),
      reconcile,
    });
    expect(without.map(qualifiedResource)).not.toContain('ingresses.networking.k8s.io');
    expect(access.map(qualifiedResource)).toContain('ingresses.networking.k8s.io');
    // NetworkPolicies likewise, only when they are rendered (on by default).
    expect(without.map(qualifiedResource)).not.toContain('networkpolicies.networking.k8s.io');
    expect(access.map(qualifiedResource)).toContain('networkpolicies.networking.k8s.io');
  });

  it('asks for HTTPRoutes only with a Gateway, and for KEDA’s kinds only with queue scaling on runs', () => {
    const plain = namespaceAccess({ render: RenderConfig.parse({}), reconcile }).map(qualifiedResource);
    for (const resource of [
      'httproutes.gateway.networking.k8s.io',
      'scaledobjects.keda.sh',
      'triggerauthentications.keda.sh',
    ])
      expect(plain).not.toContain(resource);
    const render = RenderConfig.parse({
      gateway: { parentRefs: [{ name: 'shared' }] },
      autoscaling: { queue: 'keda' },
    });
    const both = namespaceAccess({ render, reconcile });
    for (const [group, resource] of [
      ['gateway.networking.k8s.io', 'httproutes'],
      ['keda.sh', 'scaledobjects'],
      ['keda.sh', 'triggerauthentications'],
    ] as const)
      expect(verbsOf(both, group, resource), resource).toEqual(WRITTEN);
    // Watched as they are asked for: a cluster without their CRDs is never asked to list them.
    expect(watchedKinds(render)).toEqual(
      expect.arrayContaining(['HTTPRoute', 'ScaledObject', 'TriggerAuthentication']),
    );

    for (const kind of ['HTTPRoute', 'ScaledObject', 'TriggerAuthentication'])
      expect(watchedKinds(RenderConfig.parse({})), kind).not.toContain(kind);
  });

  it('asks to list the route kind it does not render when it renders the other: one registry of hosts', () => {
    const routes = (render: RenderConfig) => {
      const asked = namespaceAccess({ render, reconcile });
      return [
        verbsOf(asked, 'networking.k8s.io', 'ingresses'),
        verbsOf(asked, 'gateway.networking.k8s.io', 'httproutes'),
      ];
    };
    expect(routes(RenderConfig.parse({}))).toEqual([[], []]);
    expect(routes(RenderConfig.parse({ ingress: { className: 'nginx' } }))).toEqual([WRITTEN, ['list']]);
    expect(routes(RenderConfig.parse({ gateway: { parentRefs: [{ name: 'shared' }] } }))).toEqual([
      ['list'],
      WRITTEN,
    ]);
  });

  it('asks to delete volumes whether or not they are kept: a rename past the kept ones deletes the oldest', () => {
    const dropping = ReconcileConfig.parse({ prune: { keepDatabaseVolumes: false } });
    for (const config of [dropping, reconcile])
      expect(
        verbsOf(namespaceAccess({ render: goldenConfig, reconcile: config }), '', 'persistentvolumeclaims'),
      ).toEqual(['get', 'list', 'watch', 'delete']);
  });

  it('asks to create any Lease and to get and update its own, only with leader election', () => {
    expect(leaseAccess({ reconcile }).map((a) => [qualifiedResource(a), a.verbs])).toEqual([
      ['leases.coordination.k8s.io', ['create']],
      ['leases.coordination.k8s.io/k8s-listener', ['get', 'update']],
    ]);
    const named = ReconcileConfig.parse({ leaderElection: { leaseName: 'mine' } });
    expect(leaseAccess({ reconcile: named })[1]?.name).toBe('mine');
    const solo = ReconcileConfig.parse({ leaderElection: { enabled: false } });
    expect(leaseAccess({ reconcile: solo })).toEqual([]);
  });
});

describe('the kustomize Role of a watched namespace', () => {
  // Generated from the chart with deploy/kustomize/chart-values.yaml: the default configuration.
  it('grants exactly what run and status need under the default render configuration', async () => {
    const path = new URL('../../../deploy/kustomize/watched-namespace/rbac.yaml', import.meta.url);
    const docs = parseAllDocuments(await readFile(path, 'utf8')).map(
      (doc) => doc.toJS() as { kind: string; rules?: RoleRule[] },
    );
    const roles = docs.filter((doc) => doc.kind === 'Role');
    expect(roles).toHaveLength(1);
    const config = { render: RenderConfig.parse({}), reconcile };
    expect(grantedLines(roles[0]?.rules ?? [])).toEqual(
      requiredLines([...namespaceAccess(config), ...statusAccess(config)]),
    );
  });
});
