// The chart's values, one by one: values.schema.json refuses bad values naming the key; every
// optional value lands where it belongs and the API server accepts the result (strict server-side
// dry run); the configuration checksum restarts the agent; NOTES print check and status.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { adminKube, createNamespace, kubectlWithInput, uniqueNamespace } from '../../support/adminKube.ts';

const run = promisify(execFile);
const kubeconfigPath = inject('kubeconfigPath');
const binDir = inject('clusterBinDir');
const chart = new URL('../../../charts/k8s-listener', import.meta.url).pathname;
const exampleValues = new URL('../../../deploy/values-example.yaml', import.meta.url).pathname;
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

interface Container {
  name: string;
  image: string;
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  volumes?: { name: string }[];
  imagePullSecrets?: { name: string }[];
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  affinity?: unknown;
  topologySpreadConstraints?: { topologyKey: string; maxSkew: number }[];
  priorityClassName?: string;
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: {
    template?: {
      metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: PodSpec;
    };
    ingress?: { ports: { port: number | string }[]; from?: unknown[] }[];
    egress?: { to?: unknown[]; ports: { port: number; protocol: string }[] }[];
    policyTypes?: string[];
  };
}

const helm = (args: string[]) => run(join(binDir, 'helm'), args, { maxBuffer: 16 * 1024 * 1024 });

async function template(
  sets: readonly string[],
  namespace = 'listener',
): Promise<{ text: string; manifests: Manifest[] }> {
  const args = ['template', 'agent', chart, '-n', namespace, '-f', exampleValues];
  for (const set of sets) args.push('--set', set);
  const { stdout } = await helm(args);
  const manifests = parseAllDocuments(stdout)
    .map((doc) => doc.toJSON() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
  return { text: stdout, manifests };
}

function deploymentOf(manifests: Manifest[]): NonNullable<NonNullable<Manifest['spec']>['template']> {
  const template = manifests.find((m) => m.kind === 'Deployment')?.spec?.template;
  if (!template) throw new Error('no Deployment rendered');
  return template;
}

/** Bad values, each with the key helm's schema error must name. */
const BAD_VALUES: readonly [set: string, names: string][] = [
  ['replicaCount=two', '/replicaCount'],
  ['replicaCount=0', '/replicaCount'],
  ['unknownKey=1', "'unknownKey'"],
  ['image.tags=1.0', "'tags'"],
  ['image.digest=sha256:abc', '/image/digest'],
  ['image.digest=md5:0123', '/image/digest'],
  ['image.tag=bad tag', '/image/tag'],
  ['image.pullPolicy=Sometimes', '/image/pullPolicy'],
  ['logLevel=verbose', '/logLevel'],
  ['logFormat=xml', '/logFormat'],
  ['listenerId=not-a-uuid', '/listenerId'],
  ['controlPlane.url=ftp://cp', '/controlPlane/url'],
  ['controlPlane.apikey=k', "'apikey'"],
  ['controlPlane.timeoutMs=10', '/controlPlane/timeoutMs'],
  ['namespaces={Bad_Namespace}', '/namespaces/0'],
  ['metrics.port=70000', '/metrics/port'],
  ['metrics.serviceMonitor.interval=often', '/metrics/serviceMonitor/interval'],
  ['createNamespaces=maybe', '/createNamespaces'],
  ['commonLabels.team=null', '/commonLabels/team'],
  ['podLabels=x', '/podLabels'],
  ['tolerations=x', '/tolerations'],
  ['imagePullSecrets[0].nam=x', '/imagePullSecrets/0'],
  ['extraEnv[0].value=x', '/extraEnv/0'],
  ['extraVolumeMounts[0].name=x', '/extraVolumeMounts/0'],
  ['topologySpreadConstraints[0].maxSkew=1', '/topologySpreadConstraints/0'],
  ['defaultTopologySpread=no', '/defaultTopologySpread'],
  ['networkPolicy.enabled=yes', '/networkPolicy/enabled'],
  ['networkPolicy.apiServer.cidrs={10.0.0.1}', '/networkPolicy/apiServer/cidrs/0'],
  ['networkPolicy.apiServer.ports={https}', '/networkPolicy/apiServer/ports/0'],
  ['networkPolicy.egress=x', '/networkPolicy/egress'],
  // The API key belongs in a Secret, not in the ConfigMap `config` becomes.
  ['config.controlPlane.apiKey=k', '/config/controlPlane'],
  ['config.controlPlane.apiKeyFile=/k', '/config/controlPlane'],
  ['serviceAccount.create=sure', '/serviceAccount/create'],
  ['terminationGracePeriodSeconds=-1', '/terminationGracePeriodSeconds'],
];

describe('chart values', () => {
  it('lints strictly, with the defaults and with every optional value set', async () => {
    for (const extra of [[], EVERY_VALUE('listener', ['apps'])]) {
      const args = ['lint', '--strict', chart, '-f', exampleValues];
      for (const set of extra) args.push('--set', set);
      const { stdout } = await helm(args);
      expect(stdout).toContain('0 chart(s) failed');
      expect(stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });

  it.each(BAD_VALUES)('values.schema.json refuses %s, naming %s', async (set, names) => {
    const failure = await template([set]).then(
      () => 'rendered',
      (error: { stderr: string }) => error.stderr,
    );
    expect(failure).toContain("values don't meet the specifications of the schema");
    expect(failure).toContain(names);
  });

  it('refuses a NetworkPolicy without the API server CIDRs, saying how to find them', async () => {
    const failure = await template(['networkPolicy.enabled=true']).then(
      () => 'rendered',
      (error: { stderr: string }) => error.stderr,
    );
    expect(failure).toContain('networkPolicy.apiServer.cidrs is required');
    expect(failure).toContain('kubernetes.io/service-name=kubernetes');
  });

  it('fences the metrics and probe port alone with egress off: an ingress-only policy, no addresses needed', async () => {
    const { manifests } = await template(['networkPolicy.enabled=true', 'networkPolicy.egress=false']);
    const policy = manifests.find((m) => m.kind === 'NetworkPolicy') as
      | { spec?: { policyTypes?: string[]; ingress?: unknown[]; egress?: unknown } }
      | undefined;
    expect(policy?.spec?.policyTypes).toEqual(['Ingress']);
    expect(policy?.spec?.egress).toBeUndefined();
    expect(policy?.spec?.ingress).toEqual([{ ports: [{ port: 'metrics', protocol: 'TCP' }] }]);
  });

  it('renders nothing optional by default: no NetworkPolicy, the image by tag, a spread only with two replicas', async () => {
    const { manifests } = await template([]);
    expect(manifests.map((m) => m.kind)).not.toContain('NetworkPolicy');
    const pod = deploymentOf(manifests).spec;
    expect(pod.containers[0]?.image).toBe('k8s-listener:0.1.0');
    expect(pod.topologySpreadConstraints).toEqual([
      expect.objectContaining({ topologyKey: 'kubernetes.io/hostname', maxSkew: 1 }),
    ]);
    expect(pod.affinity).toBeUndefined();
    const single = deploymentOf((await template(['replicaCount=1'])).manifests).spec;
    expect(single.topologySpreadConstraints).toBeUndefined();
    const off = deploymentOf((await template(['defaultTopologySpread=false'])).manifests).spec;
    expect(off.topologySpreadConstraints).toBeUndefined();
  });

  it('puts every optional value where it belongs, and the API server accepts the objects', async () => {
    const kube = adminKube(kubeconfigPath);
    const release = uniqueNamespace('values');
    const target = uniqueNamespace('apps');
    for (const ns of [release, target]) await createNamespace(kube, ns);
    const { manifests } = await template(EVERY_VALUE(release, [target]), release);

    // commonLabels on every object and on the pod template.
    for (const m of manifests)
      expect(m.metadata.labels, `${m.kind}/${m.metadata.name}`).toMatchObject({ team: 'platform' });
    const template_ = deploymentOf(manifests);
    expect(template_.metadata.labels).toMatchObject({ team: 'platform', tier: 'agents' });
    expect(template_.metadata.annotations).toMatchObject({ 'example.com/owner': 'platform' });
    expect(template_.metadata.annotations?.['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
    expect(template_.metadata.annotations?.['checksum/secret']).toMatch(/^[0-9a-f]{64}$/);
    const pod = template_.spec;
    const agent = pod.containers[0];
    // The digest wins over the tag; the registry prefixes the repository.
    expect(agent?.image).toBe(`registry.example.internal:5000/platform/k8s-listener@${DIGEST}`);
    expect(pod.imagePullSecrets).toEqual([{ name: 'registry-credentials' }]);
    expect(pod.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(pod.tolerations).toEqual([
      { key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' },
    ]);
    expect(pod.affinity).toMatchObject({ nodeAffinity: expect.anything() });
    expect(pod.topologySpreadConstraints).toEqual([
      expect.objectContaining({ topologyKey: 'topology.kubernetes.io/zone', maxSkew: 2 }),
    ]);
    expect(pod.priorityClassName).toBe('agents-critical');
    expect(agent?.env).toContainEqual({ name: 'NODE_EXTRA_CA_CERTS', value: '/etc/ca/ca.crt' });
    expect(agent?.env?.map((e) => e.name)).toContain('POD_NAME');
    expect(agent?.volumeMounts).toContainEqual({ name: 'ca', mountPath: '/etc/ca', readOnly: true });
    expect(pod.volumes?.map((v) => v.name)).toEqual(['config', 'api-key', 'ca']);

    const policy = manifests.find((m) => m.kind === 'NetworkPolicy');
    expect(policy?.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy?.spec?.ingress).toEqual([
      {
        ports: [{ port: 'metrics', protocol: 'TCP' }],
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      },
    ]);
    expect(policy?.spec?.egress).toEqual([
      {
        to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
      {
        to: [{ ipBlock: { cidr: '10.96.0.1/32' } }, { ipBlock: { cidr: '172.18.0.2/32' } }],
        ports: [{ port: 6443, protocol: 'TCP' }],
      },
      // The port of controlPlane.url.
      { to: [{ ipBlock: { cidr: '10.20.0.0/16' } }], ports: [{ port: 8443, protocol: 'TCP' }] },
    ]);

    // Everything but the monitoring CRDs' objects (not installed here; chart/monitoring.test.ts
    // checks them by structure) passes a strict server-side dry run.
    const servable = manifests.filter((m) => m.kind !== 'PrometheusRule' && m.kind !== 'ServiceMonitor');
    expect(manifests.length - servable.length).toBe(2);
    const applied = await kubectlWithInput(
      binDir,
      kubeconfigPath,
      ['apply', '--dry-run=server', '--validate=strict', '-f', '-'],
      servable.map((m) => JSON.stringify(m)).join('\n'),
    );
    expect(applied.trim().split('\n')).toHaveLength(servable.length);
    expect(applied).toContain('networkpolicy.networking.k8s.io/agent-k8s-listener created (server dry run)');
    expect(applied).toContain('deployment.apps/agent-k8s-listener created (server dry run)');
  });

  it.each([
    ['http://cp.example.internal', 80],
    ['https://cp.example.internal/api', 443],
    ['https://cp.example.internal:9443', 9443],
  ])(
    'allows egress to the control plane %s on port %i (any address when no CIDR is given)',
    async (url, port) => {
      const { manifests } = await template([
        'networkPolicy.enabled=true',
        'networkPolicy.apiServer.cidrs={10.96.0.1/32}',
        `controlPlane.url=${url}`,
      ]);
      const egress = manifests.find((m) => m.kind === 'NetworkPolicy')?.spec?.egress;
      expect(egress?.at(-1)).toEqual({ ports: [{ port, protocol: 'TCP' }] });
      expect(egress?.[1]?.ports.map((p) => p.port)).toEqual([443, 6443]);
    },
  );

  it('changes the pod template checksum when the configuration or the chart-made Secret changes, and only then', async () => {
    const annotations = async (sets: string[]) =>
      deploymentOf(
        (await template(['controlPlane.existingSecret.name=', 'controlPlane.apiKey=k1', ...sets])).manifests,
      ).metadata.annotations ?? {};
    const base = await annotations([]);
    expect(await annotations([])).toEqual(base);
    expect(await annotations(['replicaCount=3'])).toEqual(base);
    const config = await annotations(['config.reconcile.pollIntervalMs=5000']);
    expect(config['checksum/config']).not.toBe(base['checksum/config']);
    expect(config['checksum/secret']).toBe(base['checksum/secret']);
    const secret = await annotations(['controlPlane.apiKey=k2']);
    expect(secret['checksum/secret']).not.toBe(base['checksum/secret']);
    expect(secret['checksum/config']).toBe(base['checksum/config']);
    // An existing Secret is the user's: no checksum of it (the mounted file follows a rotation).
    const existing = deploymentOf((await template([])).manifests).metadata.annotations ?? {};
    expect(Object.keys(existing)).toEqual(['checksum/config']);
  });

  it('prints the check and status commands for the installed release in its NOTES', async () => {
    const { stdout } = await helm([
      'install',
      'team-agent',
      chart,
      '-n',
      'platform',
      '-f',
      exampleValues,
      '--dry-run=client',
      '--kubeconfig',
      kubeconfigPath,
    ]);
    const notes = stdout.slice(stdout.indexOf('NOTES:'));
    for (const command of ['check', 'status']) {
      expect(notes).toContain(
        `kubectl -n platform exec deploy/team-agent-k8s-listener -- node /app/dist/cli/main.js ${command} --config /etc/k8s-listener/config.yaml`,
      );
    }
  });
});

/** Every optional value of the chart, set (the target namespaces exist: createNamespaces=false). */
function EVERY_VALUE(release: string, targets: readonly string[]): string[] {
  return [
    'createNamespaces=false',
    `namespaces={${targets.join(',')}}`,
    'controlPlane.url=https://cp.example.internal:8443',
    'controlPlane.existingSecret.name=',
    'controlPlane.apiKey=not-a-real-key',
    'commonLabels.team=platform',
    'podLabels.tier=agents',
    'podAnnotations.example\\.com/owner=platform',
    'image.registry=registry.example.internal:5000',
    'image.repository=platform/k8s-listener',
    'image.tag=1.2.3',
    `image.digest=${DIGEST}`,
    'imagePullSecrets[0].name=registry-credentials',
    'nodeSelector.kubernetes\\.io/os=linux',
    'tolerations[0].key=dedicated',
    'tolerations[0].operator=Equal',
    'tolerations[0].value=agents',
    'tolerations[0].effect=NoSchedule',
    'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=kubernetes\\.io/arch',
    'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=In',
    'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values={amd64,arm64}',
    'topologySpreadConstraints[0].maxSkew=2',
    'topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone',
    'topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway',
    'topologySpreadConstraints[0].labelSelector.matchLabels.app\\.kubernetes\\.io/name=k8s-listener',
    'priorityClassName=agents-critical',
    'extraEnv[0].name=NODE_EXTRA_CA_CERTS',
    'extraEnv[0].value=/etc/ca/ca.crt',
    'extraVolumes[0].name=ca',
    'extraVolumes[0].configMap.name=company-ca',
    'extraVolumeMounts[0].name=ca',
    'extraVolumeMounts[0].mountPath=/etc/ca',
    'extraVolumeMounts[0].readOnly=true',
    'networkPolicy.enabled=true',
    'networkPolicy.apiServer.cidrs={10.96.0.1/32,172.18.0.2/32}',
    'networkPolicy.apiServer.ports={6443}',
    'networkPolicy.controlPlane.cidrs={10.20.0.0/16}',
    'networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring',
    'metrics.serviceMonitor.enabled=true',
    'monitoring.prometheusRule.enabled=true',
    'monitoring.grafanaDashboard.enabled=true',
    `monitoring.grafanaDashboard.namespace=${release}`,
    'serviceAccount.annotations.example\\.com/role=agent',
  ];
}
