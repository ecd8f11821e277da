import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { parseResource, SchemaValidationError, safeParseResource } from '../../../src/controlplane/parse.ts';
import {
  AgentConnection,
  AgentConnectionList,
  Deployment,
  DeploymentIdentity,
  DeploymentPatch,
  Listener,
  OAuthProvider,
  Repository,
  Revision,
  SecretReference,
  StatusReportBatch,
  VOLUME_SOURCES,
} from '../../../src/controlplane/schemas/index.ts';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8'));
const maximalDeployment = fixture('deployment-maximal.json') as Record<string, unknown>;

const now = '2026-11-01T09:00:00.000Z';
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

const examples: [string, z.ZodType, unknown, unknown][] = [
  ['Deployment', Deployment, fixture('deployment-minimal.json'), maximalDeployment],
  [
    'Listener',
    Listener,
    { id: uuid(1), compute_type: 'k8s', compute_id: 'c', created_at: now, updated_at: now },
    fixture('listener.json'),
  ],
  [
    'Revision',
    Revision,
    {
      id: uuid(2),
      created_at: now,
      updated_at: now,
      status: 'QUEUED',
      source: 'external_container',
      source_revision_config: {},
    },
    {
      id: uuid(2),
      created_at: now,
      updated_at: now,
      status: 'DEPLOYED',
      source: 'repohost',
      source_revision_config: {
        repo_ref: 'main',
        graph_config_path: 'g.json',
        image_uri: 'img:1',
        source_tarball_path: 't.tgz',
        repo_commit_sha: 'abc',
      },
    },
  ],
  [
    'OAuthProvider',
    OAuthProvider,
    { id: 'p' },
    {
      id: 'p',
      organization_id: 'o',
      provider_id: 'pid',
      name: 'n',
      client_id: 'c',
      auth_url: 'https://a',
      token_url: 'https://t',
      uses_pkce: true,
      code_challenge_method: 'S256',
      created_at: now,
      updated_at: now,
      provider_type: 'oauth2',
      mcp_server_url: 'https://m',
      token_endpoint_auth_method: 'client_secret_post',
      is_dynamic_client: false,
    },
  ],
  [
    'AgentConnection',
    AgentConnection,
    { id: 'c' },
    {
      id: 'c',
      agent_id: 'a',
      oauth_token_id: 't',
      provider_id: 'p',
      provider_account_label: 'l',
      scopes: ['x'],
      expires_at: now,
      created_by: 'u',
      created_at: now,
    },
  ],
  ['AgentConnectionList', AgentConnectionList, { data: [] }, { data: [{ id: 'c', scopes: ['a', 'b'] }] }],
  [
    'Repository',
    Repository,
    { host_integration_id: uuid(3), id: 1, name: 'r', owner: 'o', url: 'https://r', default_branch: 'main' },
    {
      host_integration_id: uuid(3),
      id: 2,
      name: 'r2',
      owner: 'o2',
      url: 'https://r2',
      default_branch: 'trunk',
    },
  ],
  [
    'SecretReference',
    SecretReference,
    { name: 'A', secret_name: 's', secret_key: 'k' },
    { name: 'B', secret_name: 's2', secret_key: 'k2' },
  ],
  [
    'DeploymentPatch',
    DeploymentPatch,
    {},
    {
      source_config: { custom_url: 'x' },
      source_revision_config: { image_uri: 'i' },
      secrets: [{ name: 'A', value: 'v' }],
      secret_references: [],
    },
  ],
  [
    'StatusReportBatch',
    StatusReportBatch,
    { reports: [{ deployment_id: uuid(4), observed_at: now }] },
    {
      reports: [
        {
          deployment_id: uuid(4),
          deployment_status: 'READY',
          revision_id: uuid(5),
          revision_status: 'DEPLOYED',
          message: 'all workloads available',
          deleted: false,
          observed_at: now,
        },
      ],
    },
  ],
];

describe.each(examples)('%s schema', (_name, schema, minimal, maximal) => {
  it.each([
    ['minimal', minimal],
    ['maximal', maximal],
  ])('round-trips a %s example', (_kind, example) => {
    const parsed = schema.parse(example);
    expect(schema.parse(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
    // Nothing of the example was dropped on the way in.
    expect(parsed).toEqual(example);
  });
});

describe('Deployment schema', () => {
  it('keeps every field of the interface from the maximal example', () => {
    const parsed = Deployment.parse(maximalDeployment);
    const spec = parsed.source_config.resource_spec;
    expect(spec?.volumes?.map((v) => VOLUME_SOURCES.find((s) => v[s] != null)).sort()).toEqual(
      [...VOLUME_SOURCES].sort(),
    );
    expect(Object.keys(spec ?? {})).toHaveLength(40);
    expect(parsed.source_revision_config.repo_commit_sha).toBe('0123456789abcdef0123456789abcdef01234567');
  });

  it('tolerates unknown extra fields from the server', () => {
    const parsed = parseResource(
      Deployment,
      { ...maximalDeployment, brand_new_field: { x: 1 } },
      'deployment',
    );
    expect(parsed.name).toBe(maximalDeployment.name);
  });

  it('rejects a wrong type with an error naming the JSON path and the deployment id', () => {
    const bad = structuredClone(maximalDeployment) as {
      source_config: { resource_spec: { min_scale: unknown } };
    };
    bad.source_config.resource_spec.min_scale = 'two';
    const result = safeParseResource(Deployment, bad, 'deployment');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toBeInstanceOf(SchemaValidationError);
    expect(result.id).toBe(maximalDeployment.id);
    expect(result.error.issues.map((i) => i.path)).toEqual(['source_config.resource_spec.min_scale']);
    expect(result.error.message).toContain(`deployment ${String(maximalDeployment.id)}`);
    expect(result.error.message).toContain('source_config.resource_spec.min_scale');
  });

  it('rejects a volume source outside the interface list, naming it', () => {
    const bad = structuredClone(maximalDeployment) as {
      source_config: { resource_spec: { volumes: unknown[] } };
    };
    bad.source_config.resource_spec.volumes = [{ name: 'host', hostPath: { path: '/' } }];
    const result = safeParseResource(Deployment, bad, 'deployment');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.message).toContain('source_config.resource_spec.volumes[0]');
    expect(result.error.message).toContain('hostPath');
  });

  it('rejects a volume with two sources', () => {
    const bad = structuredClone(maximalDeployment) as {
      source_config: { resource_spec: { volumes: unknown[] } };
    };
    bad.source_config.resource_spec.volumes = [{ name: 'two', emptyDir: {}, secret: { secretName: 's' } }];
    expect(safeParseResource(Deployment, bad, 'deployment').ok).toBe(false);
  });

  it('never echoes a value in its error message', () => {
    const bad = structuredClone(maximalDeployment) as { secrets: unknown[] };
    bad.secrets = [
      { name: 'TOKEN', value: 12345678 },
      { name: 'OTHER', value: 'super-secret-value' },
      { value: 'x' },
    ];
    const result = safeParseResource(Deployment, bad, 'deployment');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.message).not.toContain('12345678');
    expect(result.error.message).not.toContain('super-secret-value');
  });

  it('rejects unknown enum values of status and source', () => {
    for (const [field, value] of [
      ['status', 'SOMETHING'],
      ['source', 'ftp'],
    ] as const) {
      const result = safeParseResource(Deployment, { ...maximalDeployment, [field]: value }, 'deployment');
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error.issues[0]?.path).toBe(field);
    }
  });
});

describe('both dialects and values this agent does not know', () => {
  const minimal = () => structuredClone(fixture('deployment-minimal.json')) as Record<string, unknown>;

  it.each(['external_docker', 'internal_docker', 'external_container'])(
    'reads source %s as sent',
    (source) => {
      expect(Deployment.parse({ ...minimal(), source }).source).toBe(source);
    },
  );

  it('an unknown source, deployment type or status fails validation naming each field, and its identity still reads', () => {
    const raw = minimal();
    raw.source = 'external_oci';
    raw.status = 'PAUSED';
    (raw.source_config as Record<string, unknown>).deployment_type = 'dev_turbo';
    const parsed = safeParseResource(Deployment, raw, 'deployment', undefined, (data) =>
      DeploymentIdentity.parse(data),
    );
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error.issues.map((i) => i.path).sort()).toEqual([
      'source',
      'source_config.deployment_type',
      'status',
    ]);
    const deployment = Deployment.parse(minimal());
    expect(parsed.identity).toEqual({
      name: deployment.name,
      listenerId: deployment.source_config.listener_id ?? undefined,
      namespace: deployment.source_config.listener_config?.k8s_namespace ?? undefined,
      latestRevisionId: deployment.latest_revision_id ?? undefined,
    });
  });

  it('reads what it can of an identity, field by field', () => {
    expect(
      DeploymentIdentity.parse({ name: 7, source_config: { listener_id: 'l', listener_config: 'x' } }),
    ).toEqual({
      name: undefined,
      listenerId: 'l',
      namespace: undefined,
      latestRevisionId: undefined,
    });
    expect(DeploymentIdentity.safeParse('not an object').success).toBe(false);
  });
});
