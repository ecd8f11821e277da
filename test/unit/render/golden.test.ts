import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import {
  gatewayKedaConfig,
  goldenConfig,
  listener,
  maximalDeployment,
  minimalDeployment,
  scheduledConfig,
} from '../../support/renderFixtures.ts';

/** The minimal deployment with its own PostgreSQL and Redis, by LangGraph's names for them. */
const externalStores: Deployment = {
  ...minimalDeployment,
  secrets: [{ name: 'POSTGRES_URI_CUSTOM', value: 'postgresql://agent:golden@db.example.test:5432/agent' }],
  secret_references: [{ name: 'REDIS_URI_CUSTOM', secret_name: 'shared-redis', secret_key: 'uri' }],
};
const alwaysStores = RenderConfig.parse({
  ...goldenConfig,
  database: { ...goldenConfig.database, provision: 'always' },
  kvstore: { ...goldenConfig.kvstore, provision: 'always' },
});

// Golden files show what a deployment becomes; they are reviewed like code.
// Regenerate after an intended change: UPDATE_GOLDEN=1 npx vitest run test/unit/render/golden.test.ts
describe.each([
  ['minimal', minimalDeployment, goldenConfig],
  ['maximal', maximalDeployment, goldenConfig],
  ['scheduled', maximalDeployment, scheduledConfig],
  ['external-stores', externalStores, alwaysStores],
])('golden render of the %s deployment', (name, deployment, config) => {
  it('matches testdata', () => {
    const result = renderDeployment(
      { deployment, revision: undefined, listener, allowedNamespaces: undefined },
      config,
    );
    if (!result.ok) throw result.error;
    const yaml = result.value.objects
      .map((o) => stringify(o, { lineWidth: 0, version: '1.1' }))
      .join('---\n');
    const path = new URL(`testdata/${name}.yaml`, import.meta.url);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(path, yaml);
    expect(yaml).toBe(readFileSync(path, 'utf8'));
  });
});

describe('the maximal golden render', () => {
  it('uses every field of the interface', () => {
    const yaml = readFileSync(new URL('testdata/maximal.yaml', import.meta.url), 'utf8');
    const spec = maximalDeployment.source_config.resource_spec ?? {};
    // Every resource value, label, annotation, volume, mount and container of the fixture shows up.
    for (const value of [
      '1024Mi',
      '2048Mi',
      '512Mi',
      '250m',
      '10Gi',
      'max_connections=200',
      'registry-credentials',
      'agent-platform',
      'agents-team',
      'r-and-d',
      'secrets-store.csi.k8s.io',
      'agent-shared',
      'nfs.example.test',
      'metadata.labels',
      'migrate',
      'proxy',
      'log-shipper',
      'subPathExpr',
      'mountPropagation',
      'workingDir',
      'envFrom',
      'imagePullPolicy',
      'restartPolicy',
      'SEARCH_TOKEN',
      'MODEL_API_KEY',
      'WEBHOOK_SIGNING_KEY',
      'agents.example.test',
      'registry.example.test/agents/platform:2.4.1',
      'minReplicas: 2',
      'maxReplicas: 6',
      'maxReplicas: 4',
      'maxReplicas: 2',
      'PodDisruptionBudget',
      'PodTemplate',
      'redis',
      'postgres',
    ]) {
      expect(yaml, value).toContain(value);
    }
    expect(Object.keys(spec)).toHaveLength(40);
    // No secret value in clear text: only base64 data.
    expect(yaml).not.toContain('maximal-secret-value-1');
  });
});

// The maximal deployment, its custom_url with a path, on a platform Gateway and with its queue
// workers scaled by KEDA on the runs that need them.
describe('golden render on a Gateway with KEDA queue scaling', () => {
  it('matches testdata', () => {
    const deployment = structuredClone(maximalDeployment);
    deployment.source_config.custom_url = 'https://agents.example.test/platform/';
    const result = renderDeployment(
      { deployment, revision: undefined, listener, allowedNamespaces: undefined },
      gatewayKedaConfig,
    );
    if (!result.ok) throw result.error;
    const yaml = result.value.objects
      .map((o) => stringify(o, { lineWidth: 0, version: '1.1' }))
      .join('---\n');
    const path = new URL('testdata/gateway-keda.yaml', import.meta.url);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(path, yaml);
    expect(yaml).toBe(readFileSync(path, 'utf8'));
    for (const value of [
      'kind: HTTPRoute',
      'kind: ScaledObject',
      'kind: TriggerAuthentication',
      'value: /platform',
      'replacePrefixMatch: /',
      'targetQueryValue: "10"',
    ])
      expect(yaml, value).toContain(value);
    expect(yaml).not.toContain('kind: Ingress');
  });
});
