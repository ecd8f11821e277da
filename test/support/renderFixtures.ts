// Fixtures for render tests: the shared JSON fixtures, parsed, and a builder for variations.
import { readFileSync } from 'node:fs';
import type { ResourceSpec } from '../../src/controlplane/schemas/index.ts';
import { Deployment, Listener } from '../../src/controlplane/schemas/index.ts';
import { RenderConfig, type RenderConfigInput, type RenderInput } from '../../src/render/index.ts';

const read = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8'));

export const maximalDeployment = Deployment.parse(read('deployment-maximal.json'));
export const minimalDeployment = Deployment.parse(read('deployment-minimal.json'));
export const listener = Listener.parse(read('listener.json'));
/**
 * The golden files' configuration. Pod Security baseline: the maximal example uses every volume
 * type of the interface, nfs included, which restricted (the default) refuses; and its inline CSI
 * volume's driver, which no platform allows by default.
 */
export const goldenConfig = RenderConfig.parse({
  ingress: { className: 'nginx', allowedHostSuffixes: ['example.test'] },
  policy: {
    podSecurity: 'baseline',
    serviceAccounts: ['agent-*'],
    serviceAccountTokens: true,
    csiDrivers: ['secrets-store.csi.k8s.io'],
  },
});

/**
 * The golden configuration with `custom_url` as an HTTPRoute on a platform Gateway instead of an
 * Ingress, and queue workers scaled by KEDA on the runs that need them.
 */
export const gatewayKedaConfig = RenderConfig.parse({
  gateway: {
    parentRefs: [{ name: 'shared', namespace: 'gateways', sectionName: 'https' }],
    annotations: { 'gateway.example.test/tier': 'public' },
  },
  ingress: { allowedHostSuffixes: ['example.test'] },
  autoscaling: { queue: 'keda' },
  policy: {
    podSecurity: 'baseline',
    serviceAccounts: ['agent-*'],
    serviceAccountTokens: true,
    csiDrivers: ['secrets-store.csi.k8s.io'],
  },
});

/** The maximal deployment placed by the platform: every scheduling field, apps and stores apart. */
export const scheduledConfig = RenderConfig.parse({
  ...goldenConfig,
  scheduling: {
    default: {
      apps: {
        nodeSelector: { 'node.example.test/pool': 'agents' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] },
              ],
            },
          },
        },
        priorityClassName: 'agent-apps',
      },
      stores: { nodeSelector: { 'node.example.test/pool': 'data' }, priorityClassName: 'agent-stores' },
    },
    // The maximal deployment's namespace gives its prod deployments a spread and their stores a toleration.
    byNamespace: {
      apps: {
        byDeploymentType: {
          prod: {
            apps: {
              topologySpreadConstraints: [
                {
                  maxSkew: 1,
                  topologyKey: 'topology.kubernetes.io/zone',
                  whenUnsatisfiable: 'DoNotSchedule',
                },
              ],
            },
            stores: {
              tolerations: [
                { key: 'storage', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
              ],
            },
          },
        },
      },
    },
  },
});

export function config(overrides: RenderConfigInput = {}): RenderConfig {
  return RenderConfig.parse(overrides);
}

/** The minimal deployment with a resource spec and other fields replaced. */
export function withSpec(spec: ResourceSpec, extra: Partial<Deployment> = {}): RenderInput {
  const deployment = structuredClone(minimalDeployment);
  deployment.source_config.resource_spec = spec;
  return {
    deployment: { ...deployment, ...extra },
    revision: undefined,
    listener,
    allowedNamespaces: undefined,
  };
}
