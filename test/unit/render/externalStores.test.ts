// A deployment's own PostgreSQL and Redis, by the names LangGraph users know (POSTGRES_URI_CUSTOM,
// REDIS_URI_CUSTOM) or the server's own: nothing in-cluster is rendered for them, and the server
// reads them under the variables it knows.
import { describe, expect, it } from 'vitest';
import type { Secret, SecretReference } from '../../../src/controlplane/schemas/index.ts';
import {
  type KubeObject,
  RenderConfig,
  type RenderInput,
  renderDeployment,
} from '../../../src/render/index.ts';
import type { RenderConfigInput } from '../../../src/render/renderConfig.ts';
import { withSpec } from '../../support/renderFixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered objects freely
type Json = Record<string, any>;

const DB_SPEC = { db_storage_gi: 2, kvstore_memory_mb: 64 };
const ALWAYS: RenderConfigInput = { database: { provision: 'always' }, kvstore: { provision: 'always' } };

function rendered(input: RenderInput, overrides: RenderConfigInput = {}) {
  const result = renderDeployment(input, RenderConfig.parse(overrides));
  if (!result.ok) throw result.error;
  return result.value;
}

const kinds = (objects: readonly KubeObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);

/** The application container's variables of each workload, by workload name. */
function appEnv(objects: readonly KubeObject[]): Record<string, Json[]> {
  const env: Record<string, Json[]> = {};
  for (const object of objects as unknown as Json[]) {
    const spec = object.spec?.template?.spec ?? object.template?.spec;
    if (!spec || object.metadata.labels['app.kubernetes.io/component'] === 'database') continue;
    if (object.metadata.labels['app.kubernetes.io/component'] === 'kvstore') continue;
    env[object.metadata.name] = spec.containers[0].env;
  }
  return env;
}

const fromSecret = (name: string, key: string) => ({ secretKeyRef: { name, key } });
const entriesNamed = (env: Json[] | undefined, name: string) => env?.filter((e) => e.name === name);

describe('external stores by the names LangGraph users know', () => {
  const postgres: Secret = { name: 'POSTGRES_URI_CUSTOM', value: 'postgresql://u:p@db.example.test/agent' };
  const redis: SecretReference = { name: 'REDIS_URI_CUSTOM', secret_name: 'shared-redis', secret_key: 'uri' };

  it('are among the default bring-your-own names', () => {
    const config = RenderConfig.parse({});
    expect(config.database.bringYourOwnNames).toContain('POSTGRES_URI_CUSTOM');
    expect(config.kvstore.bringYourOwnNames).toContain('REDIS_URI_CUSTOM');
  });

  it.each<[string, RenderConfigInput, Record<string, unknown>]>([
    ['db_* and kvstore_* fields set', {}, DB_SPEC],
    ['provision always', ALWAYS, {}],
  ])('make nothing in-cluster (%s), and say so', (_case, overrides, spec) => {
    const value = rendered(withSpec(spec, { secrets: [postgres], secret_references: [redis] }), overrides);
    expect(kinds(value.objects)).toEqual([
      'Secret/hello-secrets',
      'Service/hello',
      'Deployment/hello',
      'NetworkPolicy/hello',
    ]);
    expect(value.notes).toEqual([
      'no database provisioned: the deployment brings its own (POSTGRES_URI_CUSTOM)',
      'no key-value store provisioned: the deployment brings its own (REDIS_URI_CUSTOM)',
    ]);
    // And an in-cluster one for the same deployment without them, to show the difference is theirs.
    expect(kinds(rendered(withSpec(spec), overrides).objects)).toEqual(
      expect.arrayContaining([
        'StatefulSet/hello-db',
        'StatefulSet/hello-kvstore',
        'Secret/hello-db-credentials',
      ]),
    );
  });

  it('reach every application container as the variables the server reads, from where the deployment keeps them', () => {
    const spec = {
      queue_min_scale: 1,
      orchestrator_min_scale: 1,
      executor_cpu: 0.1,
      sidecars: [{ name: 'proxy', image: 'proxy:1' }],
    };
    const value = rendered(withSpec(spec, { secrets: [postgres], secret_references: [redis] }), ALWAYS);
    const env = appEnv(value.objects);
    expect(Object.keys(env).sort()).toEqual(['hello', 'hello-executor', 'hello-orchestrator', 'hello-queue']);
    for (const [workload, variables] of Object.entries(env)) {
      for (const name of ['DATABASE_URI', 'POSTGRES_URI'])
        expect(entriesNamed(variables, name), `${workload} ${name}`).toEqual([
          { name, valueFrom: fromSecret('hello-secrets', 'POSTGRES_URI_CUSTOM') },
        ]);
      expect(entriesNamed(variables, 'REDIS_URI'), workload).toEqual([
        { name: 'REDIS_URI', valueFrom: fromSecret('shared-redis', 'uri') },
      ]);
      // The deployment's own variables stay, and no password of a store the agent did not make.
      expect(entriesNamed(variables, 'POSTGRES_URI_CUSTOM'), workload).toHaveLength(1);
      expect(variables.map((e) => e.name)).not.toContain('DATABASE_PASSWORD');
      expect(variables.map((e) => e.name)).not.toContain('REDIS_PASSWORD');
      expect(new Set(variables.map((e) => e.name)).size, `${workload}: a variable twice`).toBe(
        variables.length,
      );
    }
    // A sidecar is the deployment's own: it gets only what the deployment gives it.
    const main = (value.objects as Json[]).find(
      (o) => o.kind === 'Deployment' && o.metadata.name === 'hello',
    );
    expect(main?.spec.template.spec.containers[1].env).toBeUndefined();
  });

  it('are mapped without a db_* field and without provisioning: the server reads them either way', () => {
    const value = rendered(withSpec({}, { secrets: [postgres] }));
    expect(value.notes).toEqual([]);
    expect(entriesNamed(appEnv(value.objects).hello, 'DATABASE_URI')).toEqual([
      { name: 'DATABASE_URI', valueFrom: fromSecret('hello-secrets', 'POSTGRES_URI_CUSTOM') },
    ]);
  });

  it.each<[string, Secret[], Record<string, ReturnType<typeof fromSecret>>]>([
    // The pg runtime reads DATABASE_URI only: a deployment that gives POSTGRES_URI gets it too.
    [
      'POSTGRES_URI alone',
      [{ name: 'POSTGRES_URI', value: 'postgresql://a' }],
      { DATABASE_URI: fromSecret('hello-secrets', 'POSTGRES_URI') },
    ],
    [
      'DATABASE_URI alone',
      [{ name: 'DATABASE_URI', value: 'postgresql://a' }],
      { POSTGRES_URI: fromSecret('hello-secrets', 'DATABASE_URI') },
    ],
    // Its own DATABASE_URI is kept; the other name follows the first bring-your-own name it carries.
    [
      'DATABASE_URI and POSTGRES_URI_CUSTOM',
      [{ name: 'DATABASE_URI', value: 'postgresql://a' }, postgres],
      { POSTGRES_URI: fromSecret('hello-secrets', 'DATABASE_URI') },
    ],
    [
      'both server names',
      [
        { name: 'DATABASE_URI', value: 'postgresql://a' },
        { name: 'POSTGRES_URI', value: 'postgresql://b' },
      ],
      {},
    ],
  ])('never override what the deployment sets itself: %s', (_case, secrets, mapped) => {
    const env = appEnv(rendered(withSpec(DB_SPEC, { secrets })).objects).hello ?? [];
    for (const name of ['DATABASE_URI', 'POSTGRES_URI']) {
      const own = secrets.some((secret) => secret.name === name);
      expect(entriesNamed(env, name), name).toEqual([
        { name, valueFrom: own ? fromSecret('hello-secrets', name) : mapped[name] },
      ]);
    }
  });

  it('follow the configured variable names', () => {
    const value = rendered(withSpec(DB_SPEC, { secrets: [postgres], secret_references: [redis] }), {
      database: { uriEnvs: ['PG_URL'] },
      kvstore: { uriEnv: 'CACHE_URL' },
    });
    const env = appEnv(value.objects).hello ?? [];
    expect(entriesNamed(env, 'PG_URL')).toEqual([
      { name: 'PG_URL', valueFrom: fromSecret('hello-secrets', 'POSTGRES_URI_CUSTOM') },
    ]);
    expect(entriesNamed(env, 'CACHE_URL')).toEqual([
      { name: 'CACHE_URL', valueFrom: fromSecret('shared-redis', 'uri') },
    ]);
    expect(env.map((e) => e.name)).not.toContain('DATABASE_URI');
  });

  it('are not external when the platform takes them off the list', () => {
    const value = rendered(withSpec(DB_SPEC, { secrets: [postgres] }), {
      database: { bringYourOwnNames: ['DATABASE_URI'] },
    });
    expect(kinds(value.objects)).toContain('StatefulSet/hello-db');
    // The generated connection string, not the deployment's variable.
    expect(entriesNamed(appEnv(value.objects).hello, 'DATABASE_URI')?.[0]?.value).toContain(
      'hello-db.apps.svc',
    );
  });

  it('drop a running in-cluster database from the render: its StatefulSet retains its claim, so the prune keeps the volume', () => {
    // Revision 1, with an in-cluster database; revision 2, the same deployment with its own.
    const first = rendered(withSpec(DB_SPEC)).objects as Json[];
    const statefulSet = first.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'hello-db');
    expect(statefulSet?.spec.persistentVolumeClaimRetentionPolicy).toEqual({
      whenDeleted: 'Retain',
      whenScaled: 'Retain',
    });
    expect(statefulSet?.spec.volumeClaimTemplates[0].metadata.name).toBe('data');
    const second = kinds(rendered(withSpec(DB_SPEC, { secrets: [postgres] })).objects);
    // What the reconciler prunes: the database's objects, which no claim is among.
    const gone = kinds(first as KubeObject[]).filter((name) => !second.includes(name));
    expect(gone).toEqual(['Secret/hello-db-credentials', 'Service/hello-db', 'StatefulSet/hello-db']);
  });
});
