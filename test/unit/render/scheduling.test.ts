// render.scheduling: where the platform team puts application pods and data stores, by namespace
// and, within a namespace, by deployment type, the most specific level winning field by field —
// and nothing a deployment sends can put a scheduling field into a pod, nor its type a placement
// its namespace is not given.
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadAgentConfig } from '../../../src/config/agentConfig.ts';
import type { DeploymentType } from '../../../src/controlplane/schemas/index.ts';
import { LABEL_COMPONENT, LABEL_DEPLOYMENT_ID, LABEL_INSTANCE } from '../../../src/objects/ownership.ts';
import {
  type KubeObject,
  RenderConfig,
  renderDeployment,
  renderFromJson,
} from '../../../src/render/index.ts';
import type { RenderConfigInput } from '../../../src/render/renderConfig.ts';
import { docBlock } from '../../support/docBlocks.ts';
import { listener, maximalDeployment, withSpec } from '../../support/renderFixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered objects freely
type Json = Record<string, any>;

const SCHEDULING_FIELDS = [
  'nodeSelector',
  'tolerations',
  'affinity',
  'priorityClassName',
  'topologySpreadConstraints',
] as const;

/** Every pod spec of the render, by `Kind/name`. */
function podSpecs(objects: readonly KubeObject[]): Record<string, Json> {
  const specs: Record<string, Json> = {};
  for (const object of objects as unknown as Json[]) {
    const spec = object.spec?.template?.spec ?? object.template?.spec;
    if (spec) specs[`${object.kind}/${object.metadata.name}`] = spec;
  }
  return specs;
}

/** What each pod spec sets of the scheduling fields. */
function placements(objects: readonly KubeObject[]): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(podSpecs(objects)).map(([name, spec]) => [
      name,
      Object.fromEntries(SCHEDULING_FIELDS.flatMap((field) => (field in spec ? [[field, spec[field]]] : []))),
    ]),
  );
}

/** Main, queue, orchestrator and executor; a database and a key-value store. */
const EVERY_WORKLOAD = {
  queue_min_scale: 1,
  orchestrator_min_scale: 1,
  executor_cpu: 0.1,
  db_storage_gi: 1,
  kvstore_memory_mb: 64,
};

function render(
  scheduling: RenderConfigInput['scheduling'],
  options: { type?: DeploymentType; namespace?: string; prod?: RenderConfigInput['prod'] } = {},
): KubeObject[] {
  const input = withSpec(EVERY_WORKLOAD);
  input.deployment.source_config.deployment_type = options.type ?? 'dev';
  input.deployment.source_config.listener_config = { k8s_namespace: options.namespace ?? 'apps' };
  const result = renderDeployment(input, RenderConfig.parse({ scheduling, prod: options.prod }));
  if (!result.ok) throw result.error;
  return result.value.objects;
}

const own = (component: string) => ({
  matchLabels: {
    [LABEL_INSTANCE]: 'hello',
    [LABEL_COMPONENT]: component,
    [LABEL_DEPLOYMENT_ID]: withSpec({}).deployment.id,
  },
});

const APPS = [
  'Deployment/hello',
  'Deployment/hello-queue',
  'Deployment/hello-orchestrator',
  'PodTemplate/hello-executor',
];
const STORES = ['StatefulSet/hello-db', 'StatefulSet/hello-kvstore'];

describe('render.scheduling', () => {
  it('sets nothing by default: no pod gets a scheduling field it did not have', () => {
    for (const [name, placement] of Object.entries(placements(render(undefined)))) {
      expect(placement, name).toEqual({});
    }
  });

  it('puts `apps` on every application pod and `stores` on the database and the key-value store, apart', () => {
    const apps = {
      nodeSelector: { pool: 'agents' },
      tolerations: [
        { key: 'dedicated', operator: 'Equal' as const, value: 'agents', effect: 'NoSchedule' as const },
      ],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'arch', operator: 'In', values: ['amd64'] }] }],
          },
        },
      },
      priorityClassName: 'agent-apps',
    };
    const stores = { nodeSelector: { pool: 'data' }, priorityClassName: 'agent-stores' };
    const placed = placements(render({ default: { apps, stores } }));
    expect(Object.keys(placed).sort()).toEqual([...APPS, ...STORES].sort());
    for (const name of APPS) expect(placed[name], name).toEqual(apps);
    for (const name of STORES) expect(placed[name], name).toEqual(stores);
  });

  it.each<[string, DeploymentType, string, Json, Json]>([
    // [case, deployment_type, namespace, apps placement expected, stores placement expected]
    [
      'default only',
      'dev_free',
      'apps-staging',
      { nodeSelector: { pool: 'shared' }, priorityClassName: 'low' },
      { nodeSelector: { pool: 'data' } },
    ],
    [
      'the type, where its namespace gives it, over the default, field by field',
      'prod',
      'apps-staging',
      { nodeSelector: { pool: 'prod' }, priorityClassName: 'low' },
      { nodeSelector: { pool: 'data' }, priorityClassName: 'stores-prod' },
    ],
    [
      'dev_zero as dev',
      'dev_zero',
      'apps-staging',
      {
        nodeSelector: { pool: 'shared' },
        priorityClassName: 'low',
        tolerations: [{ key: 'spot', operator: 'Exists' }],
      },
      { nodeSelector: { pool: 'data' } },
    ],
    [
      'the namespace over the default',
      'dev',
      'apps',
      { nodeSelector: { pool: 'team-a' }, priorityClassName: 'low' },
      { nodeSelector: { pool: 'data' } },
    ],
    [
      // deployment_type is the tenant's: prod where the platform gives prod nothing is no tier.
      "a type its namespace gives nothing: neither another namespace's prod pool nor its priority class",
      'prod',
      'apps',
      { nodeSelector: { pool: 'team-a' }, priorityClassName: 'low' },
      { nodeSelector: { pool: 'data' } },
    ],
    [
      'a cleared field: {} and null',
      'dev',
      'apps-staging',
      { tolerations: [{ key: 'spot', operator: 'Exists' }] },
      { nodeSelector: { pool: 'data' } },
    ],
  ])('%s', (caseName, type, namespace, apps, stores) => {
    const spot = { tolerations: [{ key: 'spot', operator: 'Exists' as const }] };
    const scheduling: RenderConfigInput['scheduling'] = {
      default: {
        apps: { nodeSelector: { pool: 'shared' }, priorityClassName: 'low' },
        stores: { nodeSelector: { pool: 'data' } },
      },
      byNamespace: {
        'apps-staging': {
          byDeploymentType: {
            prod: { apps: { nodeSelector: { pool: 'prod' } }, stores: { priorityClassName: 'stores-prod' } },
            dev: {
              apps: caseName.startsWith('a cleared')
                ? { ...spot, nodeSelector: {}, priorityClassName: null }
                : spot,
            },
          },
        },
        apps: { apps: { nodeSelector: { pool: 'team-a' } } },
      },
    };
    const placed = placements(render(scheduling, { type, namespace, prod: { topologySpread: false } }));
    for (const name of APPS) expect(placed[name], name).toEqual(apps);
    for (const name of STORES) expect(placed[name], name).toEqual(stores);
  });

  it("refuses the former top-level byDeploymentType at load, naming where a type's placement goes now", async () => {
    await expect(
      loadAgentConfig({
        overrides: {
          listenerId: listener.id,
          controlPlane: { baseUrl: 'https://cp.example.test', apiKey: 'k' },
          namespaces: ['apps'],
          render: { scheduling: { byDeploymentType: { prod: { apps: { priorityClassName: 'high' } } } } },
        },
      }),
    ).rejects.toThrow(
      'unknown key render.scheduling.byDeploymentType (replaced by render.scheduling.byNamespace: by namespace: byNamespace.<namespace>.byDeploymentType.<type>',
    );
  });

  it("replaces prod's built-in spread with the platform's, filling in each workload's own pods as the selector", () => {
    const builtIn = placements(render(undefined, { type: 'prod' }));
    expect(builtIn['Deployment/hello']?.topologySpreadConstraints).toHaveLength(2);
    expect(builtIn['PodTemplate/hello-executor']).toEqual({});

    const zone = {
      maxSkew: 2,
      topologyKey: 'topology.kubernetes.io/zone',
      whenUnsatisfiable: 'DoNotSchedule' as const,
    };
    const spread = [zone];
    const selected = { ...zone, labelSelector: { matchLabels: { team: 'a' } } };
    const placed = placements(
      render(
        {
          byNamespace: {
            apps: {
              byDeploymentType: { prod: { apps: { topologySpreadConstraints: [...spread, selected] } } },
            },
          },
        },
        { type: 'prod' },
      ),
    );
    for (const [name, component] of [
      ['Deployment/hello', 'main'],
      ['Deployment/hello-queue', 'queue'],
      ['PodTemplate/hello-executor', 'executor'],
    ] as const) {
      // The platform's own selector is kept as it wrote it.
      expect(placed[name]?.topologySpreadConstraints, name).toEqual([
        { ...zone, labelSelector: own(component) },
        selected,
      ]);
    }
    // `[]` clears both the platform's and the built-in spread.
    const cleared = placements(
      render({ default: { apps: { topologySpreadConstraints: [] } } }, { type: 'prod' }),
    );
    expect(cleared['Deployment/hello']).toEqual({});
    // The stores' spread is their own: the database counts database pods.
    const stores = placements(render({ default: { stores: { topologySpreadConstraints: spread } } }));
    expect(stores['StatefulSet/hello-db']?.topologySpreadConstraints).toEqual([
      { ...zone, labelSelector: own('database') },
    ]);
    expect(stores['Deployment/hello']).toEqual({});
  });

  it('keeps the built-in spread when only render.prod.topologySpread asks for it', () => {
    const off = placements(
      render(
        { default: { apps: { nodeSelector: { pool: 'x' } } } },
        { type: 'prod', prod: { topologySpread: false } },
      ),
    );
    expect(off['Deployment/hello']).toEqual({ nodeSelector: { pool: 'x' } });
  });
});

describe('the Placement example of docs/configuration.md', () => {
  it('loads, and places pods as its prose says', async () => {
    const example = parseYaml(await docBlock('docs/configuration.md', 'Placement', 'yaml'));
    const loaded = await loadAgentConfig({
      overrides: {
        listenerId: listener.id,
        controlPlane: { baseUrl: 'https://cp.example.test', apiKey: 'k' },
        namespaces: ['apps', 'apps-staging'],
        render: example.render,
      },
    });
    const placedIn = (type: DeploymentType, namespace: string) => {
      const input = withSpec(EVERY_WORKLOAD);
      input.deployment.source_config.deployment_type = type;
      input.deployment.source_config.listener_config = { k8s_namespace: namespace };
      const result = renderDeployment(input, loaded.render);
      if (!result.ok) throw result.error;
      return placements(result.value.objects);
    };
    const pool = (name: string) => ({ 'node.example.com/pool': name });
    const toleration = [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }];
    const zone = {
      maxSkew: 1,
      topologyKey: 'topology.kubernetes.io/zone',
      whenUnsatisfiable: 'DoNotSchedule',
    };
    const stores = { nodeSelector: pool('data'), priorityClassName: 'agent-data' };
    // Where the platform gives prod no spread of its own, prod keeps the built-in one.
    const builtInSpread = placements(render(undefined, { type: 'prod' }))['Deployment/hello']
      ?.topologySpreadConstraints;
    const spreads = {
      apps: [{ ...zone, labelSelector: own('main') }],
      'apps-staging': builtInSpread,
    };
    for (const [type, namespace, appPool] of [
      ['prod', 'apps', 'agents-prod'],
      ['prod', 'apps-staging', 'staging'],
      ['dev', 'apps', 'agents'],
      ['dev_free', 'apps-staging', 'staging'],
    ] as const) {
      const placed = placedIn(type, namespace);
      const where = `${type} in ${namespace}`;
      expect(placed['Deployment/hello'], where).toEqual({
        nodeSelector: pool(appPool),
        tolerations: toleration,
        priorityClassName: 'agent-apps',
        ...(type === 'prod' ? { topologySpreadConstraints: spreads[namespace] } : {}),
      });
      expect(placed['StatefulSet/hello-db'], where).toEqual(stores);
      expect(placed['StatefulSet/hello-kvstore'], where).toEqual(stores);
    }
  });
});

describe('a deployment cannot place its own pods', () => {
  // Scheduling fields wherever the control plane's payload could carry them: beside the resource
  // spec's fields, in a sidecar or init container, as the deployment's own top-level fields.
  const hostile = structuredClone(maximalDeployment) as unknown as Json;
  const injected = {
    nodeSelector: { 'kubernetes.io/hostname': 'control-plane' },
    tolerations: [{ operator: 'Exists' }],
    affinity: { nodeAffinity: {} },
    priorityClassName: 'system-node-critical',
    topologySpreadConstraints: [],
    node_selector: { pool: 'gpu' },
    priority_class_name: 'system-cluster-critical',
    nodeName: 'control-plane',
    schedulerName: 'tenant-scheduler',
    hostNetwork: true,
  };
  Object.assign(hostile, injected);
  Object.assign(hostile.source_config, injected);
  Object.assign(hostile.source_config.resource_spec, injected);
  for (const container of [
    ...hostile.source_config.resource_spec.sidecars,
    ...hostile.source_config.resource_spec.init_containers,
  ])
    Object.assign(container, injected);
  const goldenLike = RenderConfig.parse({
    ingress: { className: 'nginx', allowedHostSuffixes: ['example.test'] },
    policy: {
      podSecurity: 'baseline',
      serviceAccounts: ['agent-*'],
      serviceAccountTokens: true,
      csiDrivers: ['secrets-store.csi.k8s.io'],
    },
  });

  it('renders no scheduling field from the deployment: the schema has none, and render builds pods from named fields', () => {
    const result = renderFromJson({ deployment: hostile, listener }, goldenLike);
    if (!result.ok) throw result.error;
    const specs = podSpecs(result.value.objects);
    expect(Object.keys(specs).length).toBeGreaterThan(3);
    const text = JSON.stringify(result.value.objects);
    for (const word of [
      'control-plane',
      'system-node-critical',
      'system-cluster-critical',
      'tenant-scheduler',
      'gpu',
      'nodeName',
      'hostNetwork',
      'nodeSelector',
      'tolerations',
      'affinity',
      'priorityClassName',
    ])
      expect(text, word).not.toContain(word);
  });

  it("gets the platform's placement and only that, whatever it sent", () => {
    const platform = { nodeSelector: { pool: 'agents' }, priorityClassName: 'agent-apps' };
    const result = renderFromJson(
      { deployment: hostile, listener },
      RenderConfig.parse({
        ...goldenLike,
        scheduling: { default: { apps: platform, stores: platform } },
        prod: { topologySpread: false },
      }),
    );
    if (!result.ok) throw result.error;
    for (const [name, placement] of Object.entries(placements(result.value.objects)))
      expect(placement, name).toEqual(platform);
  });
});

describe('render.scheduling configuration', () => {
  const invalid = (scheduling: unknown) => {
    const result = RenderConfig.safeParse({ scheduling });
    expect(result.success).toBe(false);
    return (result.error?.issues ?? []).map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  };

  it.each<[string, unknown, string]>([
    [
      'an unknown deployment type',
      { byNamespace: { apps: { byDeploymentType: { staging: {} } } } },
      'scheduling.byNamespace.apps.byDeploymentType',
    ],
    ['an unknown part', { default: { workers: {} } }, 'scheduling.default'],
    ['an unknown placement field', { default: { apps: { nodeName: 'n1' } } }, 'scheduling.default.apps'],
    [
      'a bad node selector key',
      { default: { apps: { nodeSelector: { 'a/b/c': 'x' } } } },
      'scheduling.default.apps.nodeSelector.a/b/c: is not a valid label key',
    ],
    [
      'a bad node selector value',
      { default: { stores: { nodeSelector: { pool: 'has space' } } } },
      'scheduling.default.stores.nodeSelector.pool: is not a valid label value',
    ],
    [
      'a toleration without key or Exists',
      { default: { apps: { tolerations: [{ value: 'x' }] } } },
      'scheduling.default.apps.tolerations.0.operator: a toleration without a key needs operator Exists',
    ],
    [
      'Exists with a value',
      { default: { apps: { tolerations: [{ key: 'k', operator: 'Exists', value: 'v' }] } } },
      'operator Exists takes no value',
    ],
    [
      'tolerationSeconds without NoExecute',
      { default: { apps: { tolerations: [{ key: 'k', operator: 'Exists', tolerationSeconds: 5 }] } } },
      'tolerationSeconds applies only to effect NoExecute',
    ],
    [
      'a bad effect',
      { default: { apps: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'Sometimes' }] } } },
      'scheduling.default.apps.tolerations.0.effect',
    ],
    [
      'a bad priority class',
      { byNamespace: { apps: { apps: { priorityClassName: 'Not_A_Name' } } } },
      'scheduling.byNamespace.apps.apps.priorityClassName: is not a valid PriorityClass name',
    ],
    [
      'a spread without a skew',
      {
        default: {
          apps: { topologySpreadConstraints: [{ topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' }] },
        },
      },
      'scheduling.default.apps.topologySpreadConstraints.0.maxSkew',
    ],
    [
      'an affinity of an unknown kind',
      { default: { apps: { affinity: { nodeAntiAffinity: {} } } } },
      'scheduling.default.apps.affinity',
    ],
    [
      'a namespace key that is no namespace name',
      { byNamespace: { Apps_1: {} } },
      'scheduling.byNamespace.Apps_1',
    ],
  ])('refuses %s', (_case, scheduling, expected) => {
    expect(invalid(scheduling).join('\n')).toContain(expected);
  });

  it('refuses at load a byNamespace key that is not one of the agent’s namespaces', async () => {
    const base = {
      listenerId: listener.id,
      controlPlane: { baseUrl: 'https://cp.example.test', apiKey: 'k' },
      namespaces: ['apps', 'apps-staging'],
    };
    await expect(
      loadAgentConfig({
        overrides: { ...base, render: { scheduling: { byNamespace: { apps: {}, app: {} } } } },
      }),
    ).rejects.toThrow(
      "render.scheduling.byNamespace.app: app is not one of the agent's namespaces (apps, apps-staging): it would apply to no deployment",
    );
    const loaded = await loadAgentConfig({
      overrides: {
        ...base,
        render: { scheduling: { byNamespace: { apps: { stores: { priorityClassName: 'data' } } } } },
      },
    });
    expect(loaded.render.scheduling.byNamespace.apps?.stores?.priorityClassName).toBe('data');
  });
});
