// A namespace set up as platform teams set them — Pod Security `restricted` enforced, a
// ResourceQuota on cpu, memory and ephemeral storage (which refuses a pod any container of which,
// init containers and native sidecars included, lacks a memory limit), and an admission policy
// that refuses one any container of which lacks a memory or an ephemeral-storage limit — admits
// every pod the agent renders. Each pod template is created as a Pod with dryRun=All, which runs
// the same admission the ReplicaSet's pods meet.
import * as k8s from '@kubernetes/client-node';
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { KubeClient, type KubeObject } from '../../../src/kube/index.ts';
import { RenderConfig, type RenderResult, renderDeployment } from '../../../src/render/index.ts';
import { adminKube, uniqueNamespace } from '../../support/adminKube.ts';
import { eventually } from '../../support/eventually.ts';
import { listener, maximalDeployment, minimalDeployment } from '../../support/renderFixtures.ts';
import { hostilePodSettings, validDeployment } from '../../support/specArbitraries.ts';

const admin = adminKube(inject('kubeconfigPath'));
/**
 * The agent's defaults (Pod Security restricted), with what the maximal example names allowed, the
 * CSI drivers of the examples and of the generated volumes, and the AppArmor and seccomp
 * annotations the generated deployments set (none of either is allowed by default), so that Pod
 * Security admission judges their values.
 */
const RESTRICTED = RenderConfig.parse({
  ingress: { className: 'nginx', allowedHostSuffixes: ['example.test'] },
  policy: {
    serviceAccounts: ['agent-platform'],
    serviceAccountTokens: true,
    csiDrivers: ['secrets-store.csi.k8s.io', 'files.csi.example.test'],
    podAnnotations: {
      allow: ['container.apparmor.security.beta.kubernetes.io/*', 'seccomp.security.alpha.kubernetes.io/*'],
    },
  },
});
const namespace = uniqueNamespace('admission');
let kube: KubeClient;
const admission = admin.config.makeApiClient(k8s.AdmissionregistrationV1Api);
const LIMITS_POLICY = `container-limits-${namespace}`;
/** CEL: every container of a list has a memory and an ephemeral-storage limit. */
const limited = (list: string) =>
  `${list}.all(c, has(c.resources) && has(c.resources.limits) && 'memory' in c.resources.limits && 'ephemeral-storage' in c.resources.limits)`;

/** Every container of every kind must have a memory and an ephemeral-storage limit (test policy). */
async function requireContainerLimits(): Promise<void> {
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name: LIMITS_POLICY },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
          ],
        },
        validations: [
          {
            expression: `${limited('object.spec.containers')} && (!has(object.spec.initContainers) || ${limited('object.spec.initContainers')})`,
            message: 'every container needs a memory and an ephemeral-storage limit (test policy)',
          },
        ],
      },
    },
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name: LIMITS_POLICY },
      spec: {
        policyName: LIMITS_POLICY,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } },
      },
    },
  });
  // In force once a pod with a container without limits meets it.
  await eventually('the container-limits policy in force', async () => {
    const bare: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'bare', namespace, labels: {}, annotations: {} },
      spec: {
        containers: [
          {
            name: 'app',
            image: 'busybox:1.36',
            resources: { requests: { cpu: '10m', memory: '1Mi' }, limits: { memory: '1Mi' } },
            securityContext: {
              allowPrivilegeEscalation: false,
              capabilities: { drop: ['ALL'] },
              runAsNonRoot: true,
              seccompProfile: { type: 'RuntimeDefault' },
            },
          },
        ],
      },
    };
    const refused = await kube.create(bare, { dryRun: true }).then(
      () => false,
      (error: unknown) => String(error).includes('test policy'),
    );
    return refused ? true : undefined;
  });
}

beforeAll(async () => {
  kube = await KubeClient.fromKubeconfig(inject('kubeconfigPath'), { logger: pino({ level: 'silent' }) });
  await admin.core.createNamespace({
    body: {
      metadata: {
        name: namespace,
        labels: {
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
      },
    },
  });
  // The service account the maximal deployment names, as a platform team would have made it.
  await admin.core.createNamespacedServiceAccount({
    namespace,
    body: { metadata: { name: 'agent-platform' } },
  });
  await admin.core.createNamespacedResourceQuota({
    namespace,
    body: {
      metadata: { name: 'compute' },
      spec: {
        hard: {
          'requests.cpu': '64',
          'requests.memory': '256Gi',
          'limits.memory': '256Gi',
          'requests.ephemeral-storage': '1Ti',
          'limits.ephemeral-storage': '1Ti',
        },
      },
    },
  });
  await requireContainerLimits();
});

afterAll(async () => {
  await admission.deleteValidatingAdmissionPolicyBinding({ name: LIMITS_POLICY }).catch(() => undefined);
  await admission.deleteValidatingAdmissionPolicy({ name: LIMITS_POLICY }).catch(() => undefined);
  await kube?.close();
  await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

/** A deployment rendered by the agent's defaults, moved into the test namespace. */
function renderHere(deployment: Deployment): RenderResult {
  const moved = structuredClone(deployment);
  moved.source_config.listener_config = { k8s_namespace: namespace };
  return renderDeployment(
    {
      deployment: moved,
      revision: undefined,
      listener: { ...listener, compute_config: { k8s_namespaces: [namespace] } },
      allowedNamespaces: undefined,
    },
    RESTRICTED,
  );
}

/** The pod templates of a render, moved into the test namespace. */
function podTemplates(deployment: Deployment): { name: string; template: Record<string, unknown> }[] {
  const result = renderHere(deployment);
  if (!result.ok) throw result.error;
  return templatesOf(result.value.objects);
}

function templatesOf(objects: readonly KubeObject[]): { name: string; template: Record<string, unknown> }[] {
  return objects.flatMap((object: KubeObject) => {
    const spec = object.spec as
      | {
          template?: { spec: { volumes?: unknown[] } };
          volumeClaimTemplates?: { metadata: { name: string } }[];
        }
      | undefined;
    const template =
      object.kind === 'PodTemplate' ? (object.template as Record<string, unknown>) : spec?.template;
    if (!template) return [];
    // A StatefulSet's pods get a volume per claim template; the probe Pod stands in an emptyDir.
    const claims = (spec?.volumeClaimTemplates ?? []).map((claim) => ({
      name: claim.metadata.name,
      emptyDir: {},
    }));
    const withClaims =
      claims.length === 0 || !spec?.template
        ? template
        : {
            ...spec.template,
            spec: { ...spec.template.spec, volumes: [...(spec.template.spec.volumes ?? []), ...claims] },
          };
    return [
      { name: `${object.kind}/${object.metadata.name}`, template: withClaims as Record<string, unknown> },
    ];
  });
}

async function admitted(name: string, template: Record<string, unknown>): Promise<string> {
  const metadata = (template.metadata ?? {}) as Record<string, unknown>;
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `probe-${Math.random().toString(36).slice(2, 10)}`,
      namespace,
      labels: (metadata.labels ?? {}) as Record<string, string>,
      // The template's own: AppArmor and seccomp annotations are part of what admission checks.
      annotations: (metadata.annotations ?? {}) as Record<string, string>,
    },
    spec: template.spec,
  };
  await kube.create(pod, { dryRun: true });
  return name;
}

/**
 * The maximal fixture without its nfs volume: `restricted` forbids nfs for every pod, so that is
 * the deployment's own choice of volume, not anything the agent adds.
 */
function withoutNfs(deployment: Deployment): Deployment {
  const copy = structuredClone(deployment);
  const spec = copy.source_config.resource_spec;
  if (!spec) return copy;
  const nfs = new Set((spec.volumes ?? []).filter((v) => v.nfs).map((v) => v.name));
  spec.volumes = spec.volumes?.filter((v) => !nfs.has(v.name));
  spec.volume_mounts = spec.volume_mounts?.filter((m) => !nfs.has(m.name));
  for (const container of [...(spec.sidecars ?? []), ...(spec.init_containers ?? [])])
    container.volumeMounts = container.volumeMounts?.filter((m) => !nfs.has(m.name));
  expect(nfs.size).toBeGreaterThan(0);
  return copy;
}

describe('a restricted namespace with a cpu, memory and ephemeral-storage quota', () => {
  it.each([
    ['minimal', minimalDeployment],
    ['maximal (sidecars, init containers, database, key-value store)', withoutNfs(maximalDeployment)],
  ])('admits every pod of the %s deployment', async (_name, deployment) => {
    const templates = podTemplates(deployment);
    expect(templates.length).toBeGreaterThan(0);
    for (const { name, template } of templates) expect(await admitted(name, template)).toBe(name);
  });

  it('admits the pods of random valid deployments', async () => {
    await fc.assert(
      fc.asyncProperty(validDeployment, async (deployment) => {
        for (const { name, template } of podTemplates(deployment))
          expect(await admitted(name, template)).toBe(name);
      }),
      { numRuns: 15 },
    );
  });
});

// Pod Security is the agent's to enforce, not an accident of friendly input.
// Every generated deployment is either refused by render or admitted, every pod of it, by the real
// Pod Security admission of a restricted namespace: never rendered and then refused.
describe('free-form pod settings from a control-plane user', () => {
  it('are refused by render or admitted by Pod Security restricted: zero admitted by render but rejected', async () => {
    const counts = { cases: 0, refused: 0, admitted: 0 };
    await fc.assert(
      fc.asyncProperty(hostilePodSettings, async (deployment) => {
        counts.cases++;
        const result = renderHere(deployment);
        if (!result.ok) {
          counts.refused++;
          expect(result.error.problems.every((p) => p.message.includes('Pod Security restricted'))).toBe(
            true,
          );
          return;
        }
        for (const { name, template } of templatesOf(result.value.objects))
          expect(await admitted(name, template)).toBe(name);
        counts.admitted++;
      }),
      { numRuns: Number(process.env.POD_SECURITY_RUNS ?? 300) },
    );
    console.log(
      `pod security property: ${counts.cases} generated deployments, ${counts.refused} refused by render, ${counts.admitted} admitted by Pod Security restricted`,
    );
    expect(counts.refused).toBeGreaterThan(0);
    expect(counts.admitted).toBeGreaterThan(0);
  }, 300_000);
});
