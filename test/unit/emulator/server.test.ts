// The emulator over raw HTTP: the interface's limits and rules, errors, persistence.
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { type RunningEmulator, startEmulator } from '../../../src/emulator/server.ts';
import { EmulatorState } from '../../../src/emulator/state.ts';
import { SEED_DEPLOYMENTS, SEED_LISTENER_ID, SEED_PATH } from '../../support/emulatorHarness.ts';

let emulator: RunningEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

async function seeded(options: Parameters<typeof startEmulator>[0] = {}): Promise<RunningEmulator> {
  emulator = await startEmulator({ seedPath: SEED_PATH, ...options });
  return emulator;
}

async function call(
  path: string,
  init: RequestInit = {},
): Promise<{
  status: number;
  body: { error?: { code: string; field?: string; message: string } } & Record<string, unknown>;
  requestId: string | null;
}> {
  const response = await fetch(`${emulator?.url}${path}`, init);
  const text = await response.text();
  return {
    status: response.status,
    body: text ? JSON.parse(text) : {},
    requestId: response.headers.get('x-request-id'),
  };
}

const json = (method: string, body: unknown): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

/** A deployment `langgraph deploy --push-to` made: its image in the control plane's registry. */
async function pushedDeployment(): Promise<{ id: string; revisionId: string }> {
  const created = await call(
    '/v2/deployments',
    json('POST', {
      name: 'pushed',
      source: 'internal_docker',
      source_revision_config: { image_uri: 'registry.example.test/p@sha256:1111' },
    }),
  );
  expect(created.status).toBe(201);
  return { id: String(created.body.id), revisionId: String(created.body.latest_revision_id) };
}

describe('emulator', () => {
  it('ships a seed whose deployments all validate against the schemas', async () => {
    const state = EmulatorState.parse(JSON.parse(await readFile(SEED_PATH, 'utf8')));
    expect(state.deployments.map((d) => Deployment.safeParse(d.deployment).success)).toEqual([
      true,
      true,
      true,
    ]);
    expect(state.listeners[0]?.id).toBe(SEED_LISTENER_ID);
  });

  it.each([
    ['/v2/deployments?limit=0', 'limit'],
    ['/v2/deployments?limit=101', 'limit'],
    ['/v2/deployments?limit=ten', 'limit'],
    ['/v2/deployments?offset=-1', 'offset'],
    ['/v2/deployments?remote_reconciled=yes', 'remote_reconciled'],
    ['/v2/deployments?status=GONE', 'status'],
    ['/v2/deployments?deployment_type=staging', 'deployment_type'],
    [`/v2/deployments/${SEED_DEPLOYMENTS.chatApi}/revisions?status=DONE`, 'status'],
    [`/v2/deployments/${SEED_DEPLOYMENTS.chatApi}/revisions?limit=500`, 'limit'],
    ['/v2/listeners?limit=0', 'limit'],
  ])('answers %s with a 422 naming %s', async (path, field) => {
    await seeded();
    const { status, body } = await call(path);
    expect([status, body.error?.code, body.error?.field]).toEqual([422, 'validation_error', field]);
  });

  it('pages with the documented offsets and a default limit', async () => {
    await seeded();
    const first = await call('/v2/deployments?limit=2');
    expect([(first.body.resources as unknown[]).length, first.body.offset]).toEqual([2, 2]);
    const rest = await call('/v2/deployments?limit=2&offset=2');
    expect([(rest.body.resources as unknown[]).length, rest.body.offset]).toEqual([1, 3]);
    const beyond = await call('/v2/deployments?offset=50');
    expect([(beyond.body.resources as unknown[]).length, beyond.body.offset]).toEqual([0, 50]);
  });

  it('answers unknown ids 404, wrong methods 405, malformed JSON 400, big bodies 413, with a request id', async () => {
    await seeded();
    const missing = await call('/v2/deployments/00000000-0000-4000-8000-00000000dead/revisions');
    expect([missing.status, missing.body.error?.code]).toEqual([404, 'not_found']);
    expect(missing.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await call('/v2/nowhere')).status).toBe(404);
    expect((await call('/v2/listeners', { method: 'DELETE' })).status).toBe(405);
    expect(
      (await call(`/v2/deployments/${SEED_DEPLOYMENTS.chatApi}`, json('PATCH', '{"source_config": '))).status,
    ).toBe(400);
    expect(
      (
        await call(
          '/v2/deployments',
          json('POST', { name: 'x'.repeat(2 * 1024 * 1024), source: 'external_container' }),
        )
      ).status,
    ).toBe(413);
  });

  it('refuses read-only fields in bodies, the same way everywhere', async () => {
    await seeded();
    for (const [path, method, body, field] of [
      [`/v2/deployments/${SEED_DEPLOYMENTS.chatApi}`, 'PATCH', { status: 'READY' }, 'status'],
      [`/v2/deployments/${SEED_DEPLOYMENTS.chatApi}`, 'PATCH', { source: 'repohost' }, 'source'],
      ['/v2/deployments', 'POST', { name: 'n', source: 'external_container', id: 'mine' }, 'id'],
      [
        `/v2/listeners/${SEED_LISTENER_ID}`,
        'PUT',
        { compute_type: 'k8s', compute_id: 'local-dev', created_at: 'x' },
        'created_at',
      ],
    ] as const) {
      const { status, body: error } = await call(path, json(method, body));
      expect([status, error.error?.field]).toEqual([422, field]);
    }
  });

  it('ignores status reports about another listener’s deployments, and removes only AWAITING_DELETE ones', async () => {
    const running = await seeded();
    const other = await call('/v2/listeners', json('POST', { compute_type: 'k8s', compute_id: 'other' }));
    const otherId = String(other.body.id);
    const now = new Date().toISOString();
    const report = (listener: string, deployment: string, extra: Record<string, unknown>) =>
      call(
        `/v2/listeners/${listener}/status-reports`,
        json('POST', { reports: [{ deployment_id: deployment, observed_at: now, ...extra }] }),
      );
    expect((await report(otherId, SEED_DEPLOYMENTS.helloWeb, { deployment_status: 'READY' })).status).toBe(
      204,
    );
    expect(
      running.state().deployments.find((d) => d.deployment.id === SEED_DEPLOYMENTS.helloWeb)?.deployment
        .status,
    ).toBe('UNKNOWN');
    await report(SEED_LISTENER_ID, SEED_DEPLOYMENTS.helloWeb, { deleted: true });
    expect(running.state().deployments.map((d) => d.deployment.id)).toContain(SEED_DEPLOYMENTS.helloWeb);
    await call(`/v2/deployments/${SEED_DEPLOYMENTS.helloWeb}`, { method: 'DELETE' });
    await report(SEED_LISTENER_ID, SEED_DEPLOYMENTS.helloWeb, { deleted: true });
    expect(running.state().deployments.map((d) => d.deployment.id)).not.toContain(SEED_DEPLOYMENTS.helloWeb);
    // An invalid report is refused whole.
    expect((await report(SEED_LISTENER_ID, 'not-a-uuid', {})).status).toBe(422);
  });

  it('persists its state and loads it back', async () => {
    const statePath = join(await mkdtemp(join(tmpdir(), 'emulator-')), 'state.json');
    await seeded({ statePath });
    const created = await call(
      '/v2/deployments',
      json('POST', {
        name: 'persisted',
        source: 'repohost',
        source_revision_config: { repo_ref: 'main' },
      }),
    );
    expect(created.status).toBe(201);
    await emulator?.close();
    emulator = await startEmulator({ statePath });
    const listed = await call('/v2/deployments?name_contains=persisted');
    expect((listed.body.resources as { id: string }[]).map((d) => d.id)).toEqual([created.body.id]);
    expect(JSON.parse(await readFile(statePath, 'utf8')).deployments).toHaveLength(4);
  });

  it('speaks both dialects: external_docker is kept as sent and means external_container', async () => {
    await seeded();
    const created = await call(
      '/v2/deployments',
      json('POST', {
        name: 'cli-made',
        source: 'external_docker',
        source_config: {
          resource_spec: { image_pull_secrets: [{ name: 'regcred' }] },
          listener_id: SEED_LISTENER_ID,
          listener_config: { k8s_namespace: 'apps' },
          deployment_type: 'dev_zero',
        },
        source_revision_config: { image_uri: 'registry.example.test/a@sha256:1111' },
        secrets: [],
      }),
    );
    expect(created.status).toBe(201);
    expect(Deployment.parse(created.body).source).toBe('external_docker');
    const id = String(created.body.id);
    const first = String(created.body.latest_revision_id);
    // What `langgraph deploy --deployment-id` sends: a new image, tracked packages, secrets.
    const patched = await call(
      `/v2/deployments/${id}`,
      json('PATCH', {
        source_revision_config: { image_uri: 'registry.example.test/a@sha256:2222' },
        tracked_packages: ['langgraph'],
        secrets: [{ name: 'TOKEN', value: 'v' }],
      }),
    );
    expect(patched.status).toBe(200);
    const second = String(patched.body.latest_revision_id);
    expect(second).not.toBe(first);
    const revision = await call(`/v2/deployments/${id}/revisions/${second}`);
    expect(revision.status).toBe(200);
    expect(revision.body).toMatchObject({ id: second, source: 'external_docker', status: 'AWAITING_DEPLOY' });
    expect((await call(`/v2/deployments/${id}/revisions/${first}`)).body.status).toBe('SKIPPED');
    // The exact-name filter the CLI looks deployments up by, and the deployment_type filter.
    const byName = await call('/v2/deployments?name=cli-made&name_contains=cli-made');
    expect((byName.body.resources as { id: string }[]).map((d) => d.id)).toEqual([id]);
    expect((await call('/v2/deployments?name=cli')).body.resources).toEqual([]);
    const zero = await call('/v2/deployments?deployment_type=dev_zero');
    expect((zero.body.resources as { id: string }[]).map((d) => d.id)).toEqual([id]);
    // internal_docker means internal_container: it cannot be bound to a listener.
    const bound = await call(
      '/v2/deployments',
      json('POST', {
        name: 'pushed',
        source: 'internal_docker',
        source_config: { listener_id: SEED_LISTENER_ID, listener_config: { k8s_namespace: 'apps' } },
      }),
    );
    expect(bound).toMatchObject({ status: 422, body: { error: { field: 'source' } } });
  });

  it('takes external stores by the names LangGraph users know as any secrets, and a switch to them as a new revision', async () => {
    await seeded();
    // The interface gives secrets and secret references no reserved names: these are the user's.
    const own = await call(
      '/v2/deployments',
      json('POST', {
        name: 'own-stores',
        source: 'external_docker',
        source_config: {
          listener_id: SEED_LISTENER_ID,
          listener_config: { k8s_namespace: 'apps' },
          resource_spec: { db_storage_gi: 1 },
        },
        source_revision_config: { image_uri: 'registry.example.test/a@sha256:1111' },
        secrets: [{ name: 'POSTGRES_URI_CUSTOM', value: 'postgresql://u:p@db.example.test/a' }],
        secret_references: [{ name: 'REDIS_URI_CUSTOM', secret_name: 'shared-redis', secret_key: 'uri' }],
      }),
    );
    expect(own.status).toBe(201);
    const listed = await call(`/v2/deployments?name=own-stores`);
    const [stored] = (listed.body.resources as unknown[]).map((d) => Deployment.parse(d));
    expect(stored?.secrets.map((s) => s.name)).toEqual(['POSTGRES_URI_CUSTOM']);
    expect(stored?.secret_references).toEqual([
      { name: 'REDIS_URI_CUSTOM', secret_name: 'shared-redis', secret_key: 'uri' },
    ]);

    // A deployment that ran an in-cluster database switches to its own with its next revision.
    const inCluster = await call(
      '/v2/deployments',
      json('POST', {
        name: 'switching',
        source: 'external_docker',
        source_config: {
          listener_id: SEED_LISTENER_ID,
          listener_config: { k8s_namespace: 'apps' },
          resource_spec: { db_storage_gi: 1 },
        },
        source_revision_config: { image_uri: 'registry.example.test/a@sha256:1111' },
        secrets: [],
      }),
    );
    const id = String(inCluster.body.id);
    const switched = await call(
      `/v2/deployments/${id}`,
      json('PATCH', {
        source_revision_config: { image_uri: 'registry.example.test/a@sha256:2222' },
        secrets: [{ name: 'POSTGRES_URI_CUSTOM', value: 'postgresql://u:p@db.example.test/a' }],
      }),
    );
    expect(switched.status).toBe(200);
    expect(switched.body.latest_revision_id).not.toBe(inCluster.body.latest_revision_id);
    expect(Deployment.parse(switched.body).secrets.map((s) => s.name)).toEqual(['POSTGRES_URI_CUSTOM']);
  });

  it('PATCH revision_source, as `langgraph deploy --push-to` sends it: a new revision of that source, the deployment’s own kept', async () => {
    await seeded();
    const { id, revisionId: first } = await pushedDeployment();
    const pushed = await call(
      `/v2/deployments/${id}`,
      json('PATCH', {
        source_revision_config: { image_uri: 'registry.example.test/p@sha256:2222' },
        revision_source: 'internal_docker',
        secrets: [],
      }),
    );
    expect(pushed.status).toBe(200);
    const second = String(pushed.body.latest_revision_id);
    expect(second).not.toBe(first);
    expect((await call(`/v2/deployments/${id}/revisions/${second}`)).body).toMatchObject({
      source: 'internal_docker',
      status: 'QUEUED',
      source_revision_config: { image_uri: 'registry.example.test/p@sha256:2222' },
    });
    // A PATCH's revision_source names this revision's source only: here a source build.
    const built = await call(
      `/v2/deployments/${id}`,
      json('PATCH', {
        source_revision_config: { source_tarball_path: 'uploads/p.tgz' },
        revision_source: 'internal_source',
      }),
    );
    expect(built.status).toBe(200);
    expect(built.body.source).toBe('internal_docker');
    const third = String(built.body.latest_revision_id);
    expect((await call(`/v2/deployments/${id}/revisions/${third}`)).body.source).toBe('internal_source');
    expect((await call(`/v2/deployments/${id}/revisions/${second}`)).body.status).toBe('SKIPPED');
    // A redeploy repeats the revision, its source with it.
    const again = await call(`/v2/deployments/${id}/revisions/${third}/redeploy`, { method: 'POST' });
    expect(again.status).toBe(200);
    expect((await call(`/v2/deployments/${id}/revisions/${again.body.latest_revision_id}`)).body.source).toBe(
      'internal_source',
    );
  });

  it.each([
    ['on an external image’s deployment', 'external', 'internal_docker'],
    ['of an external image', 'internal', 'external_docker'],
    ['of a source the interface does not know', 'internal', 'floppy'],
  ])(
    'refuses revision_source %s: 422 naming it, with detail, and no revision made',
    async (_, kind, source) => {
      await seeded();
      const id = kind === 'external' ? SEED_DEPLOYMENTS.helloWeb : (await pushedDeployment()).id;
      const before = (await call(`/v2/deployments/${id}`)).body.latest_revision_id;
      const refused = await call(
        `/v2/deployments/${id}`,
        json('PATCH', {
          source_revision_config: { image_uri: 'registry.example.test/p@sha256:3333' },
          revision_source: source,
        }),
      );
      expect([refused.status, refused.body.error?.code, refused.body.error?.field]).toEqual([
        422,
        'validation_error',
        'revision_source',
      ]);
      expect(refused.body.detail).toEqual(expect.stringContaining('revision_source'));
      expect((await call(`/v2/deployments/${id}`)).body.latest_revision_id).toBe(before);
    },
  );

  it('refuses an external image without a listener where listeners exist, as the CLI expects: 400 and detail', async () => {
    await seeded();
    const refused = await call(
      '/v2/deployments',
      json('POST', {
        name: 'nowhere',
        source: 'external_docker',
        source_revision_config: { image_uri: 'a@sha256:1' },
      }),
    );
    expect(refused.status).toBe(400);
    expect(String(refused.body.detail)).toContain("listener_id' is required");
    expect(refused.body.error?.field).toBe('source_config.listener_id');
  });

  it('carries a FastAPI-style detail string beside its error object on every refusal', async () => {
    await seeded({ apiKey: 'k' });
    const withKey = { headers: { 'x-api-key': 'k' } };
    const unauthorized = await call('/v2/deployments');
    const missing = await call('/v2/deployments/00000000-0000-4000-8000-00000000ffff', withKey);
    const badLimit = await call('/v2/deployments?limit=0', withKey);
    const wrongMethod = await call('/v2/listeners', { ...withKey, method: 'DELETE' });
    for (const refusal of [unauthorized, missing, badLimit, wrongMethod]) {
      expect(refusal.status).toBeGreaterThanOrEqual(400);
      expect(refusal.body.detail).toBe(refusal.body.error?.message);
      expect(typeof refusal.body.detail).toBe('string');
    }
  });

  it('serves what the listener reported as deploy logs, newest first, per revision', async () => {
    const running = await seeded();
    const id = SEED_DEPLOYMENTS.helloWeb;
    const revision = running.state().deployments.find((d) => d.deployment.id === id)
      ?.deployment.latest_revision_id;
    const report = (body: Record<string, unknown>) =>
      call(
        `/v2/listeners/${SEED_LISTENER_ID}/status-reports`,
        json('POST', { reports: [{ deployment_id: id, observed_at: new Date().toISOString(), ...body }] }),
      );
    await report({ revision_id: revision, revision_status: 'DEPLOYING', message: 'main: 0 of 1 replicas' });
    await report({
      revision_id: revision,
      revision_status: 'DEPLOY_FAILED',
      message: 'image cannot be pulled',
    });
    const logs = await call(
      `/v1/projects/${id}/revisions/${revision}/deploy_logs`,
      json('POST', { limit: 10, order: 'desc' }),
    );
    expect((logs.body.logs as { level: string; message: string }[]).map((l) => [l.level, l.message])).toEqual(
      [
        ['ERROR', 'DEPLOY_FAILED: image cannot be pulled'],
        ['INFO', 'DEPLOYING: main: 0 of 1 replicas'],
      ],
    );
    const errors = await call(`/v1/projects/${id}/deploy_logs`, json('POST', { level: 'ERROR' }));
    expect((errors.body.logs as unknown[]).length).toBe(1);
    expect(
      (
        await call(
          `/v1/projects/${id}/revisions/00000000-0000-4000-8000-00000000ffff/deploy_logs`,
          json('POST', {}),
        )
      ).status,
    ).toBe(404);
  });

  it('honours the CLI’s start_time, end_time, query, level and order, as `deploy logs --follow` asks', async () => {
    await seeded();
    const id = SEED_DEPLOYMENTS.helloWeb;
    const report = (message: string, revision_status?: string) =>
      call(
        `/v2/listeners/${SEED_LISTENER_ID}/status-reports`,
        json('POST', {
          reports: [{ deployment_id: id, observed_at: new Date().toISOString(), message, revision_status }],
        }),
      );
    const logs = async (body: Record<string, unknown>) =>
      ((await call(`/v1/projects/${id}/deploy_logs`, json('POST', body))).body.logs as {
        id: string;
        timestamp: string;
        level: string;
        message: string;
      }[]) ?? [];
    await report('first');
    await report('second');
    // The CLI's first fetch: newest first; then, following, ascending from the newest it printed.
    const [newest] = await logs({ limit: 100, order: 'desc' });
    expect(newest?.message).toBe('second');
    await report('third\npod web-1 container api: last exit: Error, exit code 1', 'DEPLOY_FAILED');
    const followed = await logs({ limit: 100, order: 'asc', start_time: newest?.timestamp });
    expect(followed.map((l) => l.message.split('\n')[0])).toEqual(['second', 'DEPLOY_FAILED: third']);
    // The CLI turns an epoch-ms timestamp into an ISO time with an offset: the same instant.
    const offset = new Date(Date.parse(newest?.timestamp ?? '')).toISOString().replace('Z', '+00:00');
    expect((await logs({ order: 'asc', start_time: offset })).length).toBe(2);
    expect((await logs({ order: 'asc', end_time: newest?.timestamp })).map((l) => l.message)).toEqual([
      'first',
      'second',
    ]);
    expect((await logs({ query: 'exit code 1' })).length).toBe(1);
    expect((await logs({ level: 'error' })).map((l) => l.level)).toEqual(['ERROR']);
    expect((await logs({ limit: 1, order: 'asc' })).map((l) => l.message)).toEqual(['first']);
    expect(
      (await call(`/v1/projects/${id}/deploy_logs`, json('POST', { start_time: 'yesterday' }))).status,
    ).toBe(422);
  });
});

describe('emulator: nesting depth', () => {
  /** `levels` objects deep, as text: past what JSON.stringify can write back. */
  const nestedText = (levels: number) => `${'{"nest":'.repeat(levels)}"bottom-marker"${'}'.repeat(levels)}`;
  const withLabels = (labels: string) =>
    `{"name":"deep","source":"external_container","source_config":{"listener_id":"${SEED_LISTENER_ID}","listener_config":{"k8s_namespace":"apps"},"resource_spec":{"labels":${labels}}}}`;
  /** A request that never answers fails here, not at the test's timeout. */
  const within = { signal: AbortSignal.timeout(3_000) };

  // JSON.parse does not recurse, but writing the body back (JSON.stringify) does: a create nested
  // 5,000 deep was stored, and every later listing threw while writing it and never answered.
  it('refuses a body nested past 64 levels with 400 on every endpoint, and keeps answering: the listing after a 5,000-deep create', async () => {
    await seeded();
    const deep = withLabels(nestedText(5_000));
    for (const [method, path] of [
      ['POST', '/v2/deployments'],
      ['PATCH', `/v2/deployments/${SEED_DEPLOYMENTS.chatApi}`],
      ['POST', `/v2/listeners/${SEED_LISTENER_ID}/status-reports`],
    ] as const) {
      const refused = await call(path, { ...json(method, deep), ...within });
      expect([refused.status, refused.body.error?.code, refused.body.error?.message]).toEqual([
        400,
        'bad_request',
        'request body is nested deeper than 64 levels',
      ]);
      expect(JSON.stringify(refused.body)).not.toContain('bottom-marker');
    }
    const listing = await call('/v2/deployments', within);
    expect(listing.status).toBe(200);
    expect((listing.body.resources as { id: string }[]).map((d) => d.id).sort()).toEqual(
      Object.values(SEED_DEPLOYMENTS).sort(),
    );
    // At the bound, taken as before: labels 61 levels deep, 64 with the body's own 3.
    const nested = await call('/v2/deployments', { ...json('POST', withLabels(nestedText(61))), ...within });
    expect(nested.status).toBe(201);
    const past = await call('/v2/deployments', { ...json('POST', withLabels(nestedText(62))), ...within });
    expect(past.status).toBe(400);
  });

  it('answers 500 rather than never when what it holds cannot be written, and serves everything else', async () => {
    const running = await seeded();
    // The store taken directly (as a test or a seed may): nothing on the wire stores this.
    running.store.createDeployment(
      {
        name: 'unwritable',
        source: 'external_container',
        source_config: {
          listener_id: SEED_LISTENER_ID,
          listener_config: { k8s_namespace: 'apps' },
          resource_spec: { labels: JSON.parse(nestedText(5_000)) as Record<string, unknown> },
        },
      },
      undefined,
    );
    const listing = await call('/v2/deployments', within);
    expect([listing.status, listing.body.error?.code]).toEqual([500, 'internal']);
    const other = await call(`/v2/deployments/${SEED_DEPLOYMENTS.helloWeb}`, within);
    expect(other.status).toBe(200);
  });
});
