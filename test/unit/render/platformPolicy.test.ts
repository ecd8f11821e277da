// What the platform lets a deployment set on its pods beyond its own containers: annotation and
// label keys (none that makes the cluster attach networks, skip the mesh or inject credentials),
// inline CSI drivers (only those the platform lists), and the extra network sources of the
// application pods (never satisfiable by a tenant's own pod labels).
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadAgentConfig } from '../../../src/config/agentConfig.ts';
import type { ResourceSpec } from '../../../src/controlplane/schemas/index.ts';
import { RenderConfig, type RenderConfigInput, renderDeployment } from '../../../src/render/index.ts';
import { config, withSpec } from '../../support/renderFixtures.ts';

const SPEC = 'source_config.resource_spec';

function problems(spec: ResourceSpec, overrides: RenderConfigInput = {}): Record<string, string> {
  const result = renderDeployment(withSpec(spec), config(overrides));
  expect(result.ok).toBe(false);
  if (result.ok) return {};
  return Object.fromEntries(result.error.problems.map((p) => [p.path, p.message]));
}

function podMetadata(spec: ResourceSpec, overrides: RenderConfigInput = {}) {
  const result = renderDeployment(withSpec(spec), config(overrides));
  if (!result.ok) throw result.error;
  const main = result.value.objects.find((o) => o.kind === 'Deployment') as
    | { spec: { template: { metadata: { labels: object; annotations: object } } } }
    | undefined;
  return main?.spec.template.metadata;
}

describe('pod annotations', () => {
  it.each([
    ['k8s.v1.cni.cncf.io/networks', 'k8s.v1.cni.cncf.io/*', 'a Multus network no NetworkPolicy covers'],
    ['v1.multus-cni.io/default-network', 'v1.multus-cni.io/*', 'another default network'],
    ['cni.projectcalico.org/ipAddrs', 'cni.projectcalico.org/*', 'an address of its choice'],
    ['sidecar.istio.io/inject', '*.istio.io/*', 'out of the mesh and its mTLS'],
    ['traffic.sidecar.istio.io/excludeOutboundPorts', '*.istio.io/*', 'traffic past the proxy'],
    ['linkerd.io/inject', 'linkerd.io/*', 'out of the mesh'],
    ['config.linkerd.io/skip-outbound-ports', '*.linkerd.io/*', 'traffic past the proxy'],
    ['consul.hashicorp.com/connect-inject', 'consul.hashicorp.com/*', 'out of the mesh'],
    ['vault.hashicorp.com/agent-inject', 'vault.hashicorp.com/*', 'a Vault agent with the role below'],
    ['vault.hashicorp.com/role', 'vault.hashicorp.com/*', "another team's Vault role"],
    ['example.com/Agent-Inject', '*agent-inject*', 'any injector, whatever the case'],
    ['akeyless/enabled', 'akeyless/*', 'Akeyless secrets'],
    ['secrets.doppler.com/reload', 'secrets.doppler.com/*', 'Doppler secrets'],
    ['azure.workload.identity/inject-proxy-sidecar', 'azure.workload.identity/*', 'a workload identity'],
  ])('refuses %s by default (%s: %s), naming the field and key', (key, pattern) => {
    expect(problems({ annotations: { [key]: 'x', owner: 'team' } })).toEqual({
      [`${SPEC}.annotations.${key}`]: `annotation ${key} is refused by render.policy.podAnnotations.deny (${pattern}): it changes what the cluster does to the pod`,
    });
  });

  // What the cluster does for these: a cloud role, another app's identity, code from another
  // namespace, a collector sidecar, another network, a node pinned against scale-down, an identity.
  const CLUSTER_KEYS = [
    ['iam.amazonaws.com/role', 'iam.amazonaws.com/*'],
    ['eks.amazonaws.com/role-arn', 'eks.amazonaws.com/*'],
    ['dapr.io/app-id', 'dapr.io/*'],
    ['dapr.io/enabled', 'dapr.io/*'],
    ['instrumentation.opentelemetry.io/inject-java', 'instrumentation.opentelemetry.io/*'],
    ['sidecar.opentelemetry.io/inject', 'sidecar.opentelemetry.io/*'],
    ['networking.gke.io/interfaces', 'networking.gke.io/*'],
    ['iam.gke.io/gcp-service-account', 'iam.gke.io/*'],
    ['karpenter.sh/do-not-disrupt', 'karpenter.sh/*'],
    ['cluster-autoscaler.kubernetes.io/safe-to-evict', 'cluster-autoscaler.kubernetes.io/*'],
    ['spiffe.io/spiffe-id', 'spiffe.io/*'],
    ['ad.datadoghq.com/app.checks', 'ad.datadoghq.com/*'],
    ['fluentbit.io/exclude', 'fluentbit.io/*'],
  ] as const;

  it.each(CLUSTER_KEYS)('refuses %s by default (%s), naming the field and key', (key, pattern) => {
    expect(problems({ annotations: { [key]: 'x', owner: 'team' } })).toEqual({
      [`${SPEC}.annotations.${key}`]: `annotation ${key} is refused by render.policy.podAnnotations.deny (${pattern}): it changes what the cluster does to the pod`,
    });
  });

  it.each(CLUSTER_KEYS)(
    'refuses %s by its deny pattern (%s) when the platform allows every key',
    (key, pattern) => {
      expect(
        problems({ annotations: { [key]: 'x' } }, { policy: { podAnnotations: { allow: ['*'] } } }),
      ).toEqual({
        [`${SPEC}.annotations.${key}`]: `annotation ${key} is refused by render.policy.podAnnotations.deny (${pattern}): it changes what the cluster does to the pod`,
      });
    },
  );

  it('refuses by default a prefixed key no allow pattern takes, scrape hints and a tenant domain among them', () => {
    expect(
      problems({
        annotations: { owner: 'team', 'prometheus.io/scrape': 'true', 'example.test/owner': 'team' },
      }),
    ).toEqual({
      [`${SPEC}.annotations.prometheus.io/scrape`]:
        'annotation prometheus.io/scrape is not allowed by render.policy.podAnnotations.allow (kubectl.kubernetes.io/default-container)',
      [`${SPEC}.annotations.example.test/owner`]:
        'annotation example.test/owner is not allowed by render.policy.podAnnotations.allow (kubectl.kubernetes.io/default-container)',
    });
  });

  it("takes by default the owner's unprefixed keys and kubectl's default container", () => {
    const annotations = {
      owner: 'team',
      runbook: 'https://wiki.example.test/agents',
      'kubectl.kubernetes.io/default-container': 'app',
    };
    expect(podMetadata({ annotations })?.annotations).toMatchObject(annotations);
  });

  it('follows the platform: an allow-list widened by family, unprefixed keys off, and an emptied deny list', () => {
    const widened = { policy: { podAnnotations: { allow: ['example.test/*', 'prometheus.io/*'] } } };
    expect(problems({ annotations: { 'example.test/owner': 'team', 'other.test/x': 'y' } }, widened)).toEqual(
      {
        [`${SPEC}.annotations.other.test/x`]:
          'annotation other.test/x is not allowed by render.policy.podAnnotations.allow (example.test/*, prometheus.io/*)',
      },
    );
    const taken = { 'example.test/owner': 'team', 'prometheus.io/scrape': 'true', owner: 'team' };
    expect(podMetadata({ annotations: taken }, widened)?.annotations).toMatchObject(taken);
    expect(
      problems(
        { annotations: { owner: 'team' } },
        { policy: { podAnnotations: { allowUnprefixed: false } } },
      ),
    ).toEqual({
      [`${SPEC}.annotations.owner`]:
        'annotation owner is not allowed by render.policy.podAnnotations.allow (kubectl.kubernetes.io/default-container)',
    });
    expect(
      podMetadata(
        { annotations: { 'sidecar.istio.io/inject': 'false' } },
        { policy: { podAnnotations: { allow: ['*'], deny: [] } } },
      )?.annotations,
    ).toMatchObject({ 'sidecar.istio.io/inject': 'false' });
  });
});

describe('pod labels', () => {
  it.each([
    ['sidecar.istio.io/inject', '*.istio.io/*'],
    ['security.istio.io/tlsMode', '*.istio.io/*'],
    ['istio.io/rev', 'istio.io/*'],
    ['azure.workload.identity/use', 'azure.workload.identity/*'],
    ['aadpodidbinding', 'aadpodidbinding'],
    ['AadPodIdBinding', 'aadpodidbinding'],
    ['kubernetes.io/metadata.name', 'kubernetes.io/*'],
    ['node-role.kubernetes.io/control-plane', '*.kubernetes.io/*'],
    ['k8s.io/cluster-service', 'k8s.io/*'],
  ])('refuses %s by default (%s), naming the field and key', (key, pattern) => {
    expect(problems({ labels: { [key]: 'x', team: 'agents' } })).toEqual({
      [`${SPEC}.labels.${key}`]: `label ${key} is refused by render.policy.podLabels.deny (${pattern}): it changes what the cluster does to the pod`,
    });
  });

  it('refuses by default every other prefixed key: none is allowed unless the platform says so', () => {
    expect(problems({ labels: { team: 'agents', 'example.test/tier': 'gold' } })).toEqual({
      [`${SPEC}.labels.example.test/tier`]:
        'label example.test/tier is not allowed by render.policy.podLabels.allow (none)',
    });
  });

  it("still refuses the agent's own labels as reserved, whatever the policy", () => {
    expect(
      problems(
        { labels: { 'app.kubernetes.io/instance': 'victim' } },
        { policy: { podLabels: { allow: ['*'], deny: [] } } },
      ),
    ).toEqual({ [`${SPEC}.labels.app.kubernetes.io/instance`]: 'is reserved for the agent' });
  });

  it("takes the owner's unprefixed keys, and the families the platform allows", () => {
    expect(podMetadata({ labels: { team: 'agents', tier: 'web', version: 'v2' } })?.labels).toMatchObject({
      team: 'agents',
      tier: 'web',
      version: 'v2',
    });
    expect(
      podMetadata(
        { labels: { team: 'agents', 'example.test/tier': 'gold' } },
        { policy: { podLabels: { allow: ['example.test/*'] } } },
      )?.labels,
    ).toMatchObject({ team: 'agents', 'example.test/tier': 'gold' });
  });
});

describe('inline CSI volumes', () => {
  const csi = (driver: unknown): ResourceSpec => ({
    volumes: [{ name: 'v', csi: { driver, readOnly: true } }],
    volume_mounts: [{ name: 'v', mountPath: '/mnt' }],
  });

  it('are refused unless the platform lists the driver (none by default), naming the field', () => {
    expect(problems(csi('secrets-store.csi.k8s.io'))).toEqual({
      [`${SPEC}.volumes[0].csi.driver`]:
        'CSI driver secrets-store.csi.k8s.io is not allowed by render.policy.csiDrivers (none)',
    });
    expect(problems(csi(undefined), { policy: { csiDrivers: ['*'] } })).toEqual({
      [`${SPEC}.volumes[0].csi.driver`]: 'a CSI driver name is required',
    });
  });

  it('are taken for a listed driver, by name or pattern', () => {
    for (const csiDrivers of [['secrets-store.csi.k8s.io'], ['*.csi.k8s.io']]) {
      const result = renderDeployment(
        withSpec(csi('secrets-store.csi.k8s.io')),
        config({ policy: { csiDrivers } }),
      );
      expect(result.ok).toBe(true);
    }
    expect(
      problems(csi('files.csi.example.test'), { policy: { csiDrivers: ['*.csi.k8s.io'] } }),
    ).toHaveProperty([`${SPEC}.volumes[0].csi.driver`]);
  });
});

describe('render.networkPolicy.allowFrom', () => {
  const issues = (allowFrom: Record<string, unknown>[]) => {
    const parsed = RenderConfig.safeParse({ networkPolicy: { allowFrom } });
    return parsed.success ? [] : parsed.error.issues.map((i) => ({ path: i.path, message: i.message }));
  };

  it.each([
    [
      'a pod selector alone (pods of the tenant namespace)',
      { podSelector: { matchLabels: { app: 'prometheus' } } },
      [],
    ],
    [
      'an empty namespace selector (every namespace)',
      { namespaceSelector: {}, podSelector: {} },
      ['namespaceSelector'],
    ],
    [
      'a namespace selector that only excludes',
      {
        namespaceSelector: {
          matchExpressions: [
            { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] },
          ],
        },
      },
      ['namespaceSelector'],
    ],
  ])('refuses %s, naming the peer', (_what, peer, at) => {
    const found = issues([{ ipBlock: { cidr: '10.1.0.0/16' } }, peer]);
    expect(found).toHaveLength(1);
    expect(found[0]?.path).toEqual(['networkPolicy', 'allowFrom', 1, ...at]);
  });

  it('takes peers that name their namespaces, and address blocks', () => {
    expect(
      issues([
        { namespaceSelector: { matchLabels: { team: 'observability' } } },
        {
          namespaceSelector: { matchExpressions: [{ key: 'monitoring', operator: 'Exists' }] },
          podSelector: { matchLabels: { app: 'prometheus' } },
        },
        { ipBlock: { cidr: '10.1.0.0/16' } },
      ]),
    ).toEqual([]);
  });

  const LISTENER = '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11';
  async function load(render: string): Promise<unknown> {
    const path = join(await mkdtemp(join(tmpdir(), 'config-')), 'config.yaml');
    await writeFile(
      path,
      `listenerId: ${LISTENER}\ncontrolPlane:\n  baseUrl: http://cp.example.test\n  apiKey: k\nnamespaces: [apps, apps-staging]\nrender:\n${render}`,
    );
    return loadAgentConfig({ file: path, env: {} }).catch((error: unknown) => error);
  }

  it('is refused at load when a peer names one of the agent’s namespaces, or has no namespace selector', async () => {
    const named = await load(
      '  networkPolicy:\n    allowFrom:\n      - namespaceSelector:\n          matchLabels:\n            kubernetes.io/metadata.name: apps-staging\n',
    );
    expect(named).toBeInstanceOf(ConfigError);
    expect((named as ConfigError).fields).toEqual(['render.networkPolicy.allowFrom[0].namespaceSelector']);
    expect((named as ConfigError).message).toContain("admits apps-staging, of the agent's namespaces");

    const bare = await load(
      '  networkPolicy:\n    allowFrom:\n      - podSelector:\n          matchLabels:\n            app: prometheus\n',
    );
    expect(bare).toBeInstanceOf(ConfigError);
    expect((bare as ConfigError).fields).toEqual(['render.networkPolicy.allowFrom[0]']);
    expect((bare as ConfigError).message).toContain('a peer without a namespaceSelector');

    const ingress = await load('  networkPolicy:\n    ingressControllerNamespace: apps\n');
    expect((ingress as ConfigError).fields).toEqual(['render.networkPolicy.ingressControllerNamespace']);

    const fine = await load(
      '  networkPolicy:\n    ingressControllerNamespace: ingress-nginx\n    allowFrom:\n      - namespaceSelector:\n          matchExpressions:\n            - { key: kubernetes.io/metadata.name, operator: In, values: [monitoring] }\n',
    );
    expect(fine).not.toBeInstanceOf(Error);
  });
});
