import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlaneError } from '../../../src/controlplane/errors.ts';
import type { DeploymentCreate } from '../../../src/controlplane/schemas/index.ts';
import type { ControlPlaneTestClient } from '../../support/controlPlaneTestClient.ts';
import {
  type Harness,
  SEED_DEPLOYMENTS,
  SEED_LISTENER_ID,
  startHarness,
} from '../../support/emulatorHarness.ts';

let harness: Harness;
let client: ControlPlaneTestClient;
beforeAll(async () => {
  harness = await startHarness();
  client = harness.client;
});
afterAll(() => harness.close());

const bound = (name: string, image = 'nginx:1.27', namespace = 'apps'): DeploymentCreate => ({
  name,
  source: 'external_container',
  source_config: {
    listener_id: SEED_LISTENER_ID,
    listener_config: { k8s_namespace: namespace },
    deployment_type: 'dev',
    resource_spec: { min_scale: 1, max_scale: 1 },
  },
  source_revision_config: { image_uri: image },
  secrets: [{ name: 'TOKEN', value: 'emulator-test-secret' }],
});

async function rejection(promise: Promise<unknown>): Promise<ControlPlaneError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ControlPlaneError);
  return error as ControlPlaneError;
}

describe('client against the emulator: every endpoint', () => {
  it('gets and lists OAuth providers', async () => {
    const providers = await client.listOAuthProviders();
    expect(providers.map((p) => p.id)).toEqual(['prov-0001']);
    expect((await client.getOAuthProvider('prov-0001')).token_endpoint_auth_method).toBe(
      'client_secret_post',
    );
    expect((await rejection(client.getOAuthProvider('nope'))).status).toBe(404);
  });

  it('lists agent connections', async () => {
    const connections = await client.listAgentConnections('agent-0001');
    expect(connections.map((c) => c.scopes)).toEqual([['repo', 'read:user']]);
    expect(await client.listAgentConnections('agent-unknown')).toEqual([]);
  });

  it('lists repositories of both integration variants', async () => {
    const repos = await client.listRepohostRepositories('5d2c1b0a-0000-4000-8000-000000000301');
    expect(repos.map((r) => r.default_branch)).toEqual(['main']);
    const hosted = await client.listHostedRepohostRepositories('5d2c1b0a-0000-4000-8000-000000000302');
    expect(hosted.map((r) => r.name)).toEqual(['agent-platform']);
    expect(
      (await rejection(client.listRepohostRepositories('5d2c1b0a-0000-4000-8000-000000000399'))).status,
    ).toBe(404);
  });

  it('gets, lists, creates and replaces listeners; compute_type and compute_id cannot change', async () => {
    const listener = await client.getListener(SEED_LISTENER_ID);
    expect(listener.compute_config?.k8s_namespaces).toEqual(['apps', 'apps-staging']);
    const created = await client.createListener({
      compute_type: 'k8s',
      compute_id: 'cluster-b',
      compute_config: { k8s_namespaces: ['x'] },
    });
    const all: string[] = [];
    for await (const item of client.listeners()) if (item.ok) all.push(item.value.id);
    expect(all).toEqual([SEED_LISTENER_ID, created.id]);
    const replaced = await client.putListener(created.id, {
      compute_type: 'k8s',
      compute_id: 'cluster-b',
      version: '9.9.9',
    });
    expect(replaced.version).toBe('9.9.9');
    const changed = await rejection(
      client.putListener(created.id, { compute_type: 'k8s', compute_id: 'cluster-c' }),
    );
    expect([changed.status, changed.serverCode, changed.message]).toEqual([
      422,
      'validation_error',
      expect.stringContaining('compute_id'),
    ]);
    expect((await rejection(client.getListener('00000000-0000-4000-8000-00000000dead'))).status).toBe(404);
  });

  it('creates a deployment with its first revision, AWAITING_DEPLOY because it is remotely reconciled', async () => {
    const deployment = await client.createDeployment(bound('created-one'));
    expect(deployment.latest_revision_id).not.toBeNull();
    const revisions = await client.listAllRevisions(deployment.id);
    expect(revisions.items.map((r) => [r.id, r.status])).toEqual([
      [deployment.latest_revision_id, 'AWAITING_DEPLOY'],
    ]);
  });

  it('patch of source_config or secrets keeps the revision; patch of source_revision_config makes a new one', async () => {
    const deployment = await client.createDeployment(bound('patched'));
    const first = deployment.latest_revision_id;
    const sameRevision = await client.patchDeployment(deployment.id, {
      source_config: { custom_url: 'patched.example.test' },
      secrets: [{ name: 'TOKEN', value: 'rotated' }],
    });
    expect(sameRevision.latest_revision_id).toBe(first);
    expect(sameRevision.source_config.custom_url).toBe('patched.example.test');
    expect(sameRevision.source_config.listener_id).toBe(SEED_LISTENER_ID);
    const unchangedImage = await client.patchDeployment(deployment.id, {
      source_revision_config: { image_uri: 'nginx:1.27' },
    });
    expect(unchangedImage.latest_revision_id).toBe(first);
    const newRevision = await client.patchDeployment(deployment.id, {
      source_revision_config: { image_uri: 'nginx:1.28' },
    });
    expect(newRevision.latest_revision_id).not.toBe(first);
    expect(newRevision.image_version).toBe('1.28');
    const revisions = await client.listAllRevisions(deployment.id);
    // Newest first; the superseded revision that never started is skipped.
    expect(revisions.items.map((r) => [r.source_revision_config.image_uri, r.status])).toEqual([
      ['nginx:1.28', 'AWAITING_DEPLOY'],
      ['nginx:1.27', 'SKIPPED'],
    ]);
  });

  it('redeploy of an older revision makes a new revision with its configuration', async () => {
    const deployment = await client.createDeployment(bound('redeployed', 'busybox:1.35'));
    const old = deployment.latest_revision_id ?? '';
    await client.patchDeployment(deployment.id, { source_revision_config: { image_uri: 'busybox:1.36' } });
    const redeployed = await client.redeployRevision(deployment.id, old);
    expect(redeployed.latest_revision_id).not.toBe(old);
    expect(redeployed.source_revision_config.image_uri).toBe('busybox:1.35');
    const revisions = await client.listAllRevisions(deployment.id);
    expect(revisions.items.map((r) => r.source_revision_config.image_uri)).toEqual([
      'busybox:1.35',
      'busybox:1.36',
      'busybox:1.35',
    ]);
    expect(
      (await rejection(client.redeployRevision(deployment.id, '00000000-0000-4000-8000-00000000dead')))
        .status,
    ).toBe(404);
  });

  it('refuses what the interface forbids, naming the field', async () => {
    const wrongSource = await rejection(
      client.createDeployment({ ...bound('repo-bound'), source: 'repohost' }),
    );
    expect([wrongSource.status, wrongSource.serverMessage]).toEqual([
      422,
      expect.stringContaining('external_container'),
    ]);
    const wrongNamespace = await rejection(client.createDeployment(bound('ns', 'nginx:1', 'kube-system')));
    expect(wrongNamespace.message).toContain('kube-system');
    const deployment = await client.createDeployment(bound('immutable'));
    // name and source are not part of the PATCH body: a raw request must be refused.
    const response = await fetch(`${harness.emulator.url}/v2/deployments/${deployment.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'renamed' }),
    });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { error: { field: string } }).error.field).toBe('name');
    expect((await rejection(client.patchDeployment('00000000-0000-4000-8000-00000000dead', {}))).status).toBe(
      404,
    );
  });

  it('delete marks AWAITING_DELETE; a deleted report removes it; status reports set statuses', async () => {
    const deployment = await client.createDeployment(bound('to-delete'));
    await client.postStatusReports(SEED_LISTENER_ID, {
      reports: [
        {
          deployment_id: deployment.id,
          revision_id: deployment.latest_revision_id,
          revision_status: 'DEPLOYED',
          deployment_status: 'READY',
          observed_at: new Date().toISOString(),
        },
      ],
    });
    let listed = await client.listAllDeployments({ deployment_ids: [deployment.id] });
    expect(listed.items.map((d) => [d.status, d.active_revision_id])).toEqual([
      ['READY', deployment.latest_revision_id],
    ]);
    const revisions = await client.listAllRevisions(deployment.id, { status: ['DEPLOYED'] });
    expect(revisions.items).toHaveLength(1);

    await client.deleteDeployment(deployment.id);
    listed = await client.listAllDeployments({ deployment_ids: [deployment.id] });
    expect(listed.items.map((d) => d.status)).toEqual(['AWAITING_DELETE']);
    await client.postStatusReports(SEED_LISTENER_ID, {
      reports: [{ deployment_id: deployment.id, deleted: true, observed_at: new Date().toISOString() }],
    });
    listed = await client.listAllDeployments({ deployment_ids: [deployment.id] });
    expect(listed.items).toEqual([]);
    const unknownListener = await rejection(
      client.postStatusReports('00000000-0000-4000-8000-00000000dead', {
        reports: [{ deployment_id: deployment.id, observed_at: new Date().toISOString() }],
      }),
    );
    expect(unknownListener.status).toBe(404);
  });
});

describe('client against the emulator: lists', () => {
  it('pages through more than 250 deployments, complete and in order', async () => {
    const own = await startHarness({ seed: false });
    try {
      const listener = await own.client.createListener({
        compute_type: 'k8s',
        compute_id: 'many',
        compute_config: { k8s_namespaces: ['apps'] },
      });
      const created: string[] = [];
      for (let i = 0; i < 263; i++) {
        const d = await own.client.createDeployment({
          name: `d-${i}`,
          source: 'external_container',
          source_config: { listener_id: listener.id, listener_config: { k8s_namespace: 'apps' } },
          source_revision_config: { image_uri: 'nginx:1.27' },
        });
        created.push(d.id);
      }
      const listing = await own.client.listAllDeployments({ remote_reconciled: true });
      expect(listing.invalid).toEqual([]);
      expect(listing.items.map((d) => d.id)).toEqual(created);
    } finally {
      await own.close();
    }
  });

  it('applies every deployment filter', async () => {
    const ids = async (filter: Parameters<ControlPlaneTestClient['listAllDeployments']>[0]) =>
      (await client.listAllDeployments(filter)).items.map((d) => d.id);
    const seeded = Object.values(SEED_DEPLOYMENTS);
    expect(await ids({ deployment_ids: [SEED_DEPLOYMENTS.chatApi, SEED_DEPLOYMENTS.helloWeb] })).toEqual([
      SEED_DEPLOYMENTS.helloWeb,
      SEED_DEPLOYMENTS.chatApi,
    ]);
    expect(await ids({ name_contains: 'chat', deployment_ids: seeded })).toEqual([SEED_DEPLOYMENTS.chatApi]);
    expect(await ids({ deployment_type: 'prod', deployment_ids: seeded })).toEqual([
      SEED_DEPLOYMENTS.chatApi,
      SEED_DEPLOYMENTS.agentPlatform,
    ]);
    expect(await ids({ image_version: '1.27', deployment_ids: seeded })).toEqual([SEED_DEPLOYMENTS.helloWeb]);
    expect(
      await ids({
        tag_value_ids: ['b1a7f0c2-0000-4000-8000-000000000012', 'b1a7f0c2-0000-4000-8000-000000000011'],
      }),
    ).toEqual([SEED_DEPLOYMENTS.chatApi, SEED_DEPLOYMENTS.agentPlatform]);
    expect(await ids({ status: 'UNKNOWN', deployment_ids: seeded })).toEqual(seeded);
    expect(await ids({ status: 'READY', deployment_ids: seeded })).toEqual([]);
    expect(await ids({ remote_reconciled: false, deployment_ids: seeded })).toEqual([]);
    expect(await ids({ remote_reconciled: true, deployment_ids: seeded })).toEqual(seeded);
  });

  it('applies the revision filters', async () => {
    const all = await client.listAllRevisions(SEED_DEPLOYMENTS.chatApi);
    expect(all.items.map((r) => r.status)).toEqual(['AWAITING_DEPLOY', 'SKIPPED']);
    const skipped = await client.listAllRevisions(SEED_DEPLOYMENTS.chatApi, {
      status: ['SKIPPED', 'DEPLOYED'],
    });
    expect(skipped.items.map((r) => r.source_revision_config.image_uri)).toEqual(['busybox:1.35']);
    expect(
      (await client.listAllRevisions(SEED_DEPLOYMENTS.chatApi, { remote_reconciled: false })).items,
    ).toEqual([]);
    expect(
      (await client.listAllRevisions(SEED_DEPLOYMENTS.chatApi, { remote_reconciled: true })).items,
    ).toHaveLength(2);
  });
});

describe('authentication', () => {
  it('requires the API key when the emulator has one', async () => {
    const own = await startHarness({ apiKey: 'emulator-test-api-key' });
    try {
      expect((await own.client.getListener(SEED_LISTENER_ID)).id).toBe(SEED_LISTENER_ID);
      const anonymous = await fetch(`${own.emulator.url}/v2/listeners`);
      expect(anonymous.status).toBe(401);
      const wrong = await fetch(`${own.emulator.url}/v2/listeners`, { headers: { 'x-api-key': 'wrong' } });
      expect(wrong.status).toBe(401);
    } finally {
      await own.close();
    }
  });
});

describe('nesting depth, the real client against the real emulator', () => {
  /** `levels` objects deep, the marker at the bottom. */
  const nested = (levels: number): Record<string, unknown> => {
    let value: Record<string, unknown> = { bottom: 'nested-content-marker' };
    for (let i = 1; i < levels; i++) value = { nest: value };
    return value;
  };
  const withLabels = (name: string, labels: Record<string, unknown>): DeploymentCreate => {
    const body = bound(name);
    return { ...body, source_config: { ...body.source_config, resource_spec: { labels } } };
  };

  // A create nested thousands deep was stored, and every later listing threw writing it back and
  // never answered. (1,000 deep here: as deep as the client itself writes; a raw 5,000-deep body is
  // the emulator's own test.)
  it('a create nested 1,000 deep is refused with a clear 400, and every listing after it answers', async () => {
    const own = await startHarness();
    try {
      const error = await rejection(own.client.createDeployment(withLabels('deep', nested(1_000))));
      expect([error.status, error.serverCode, error.message]).toEqual([
        400,
        'bad_request',
        'POST /v2/deployments failed with 400: request body is nested deeper than 64 levels',
      ]);
      for (let poll = 0; poll < 2; poll++) {
        const listing = await own.client.listAllDeployments({ remote_reconciled: true });
        expect(listing.items.map((d) => d.id).sort()).toEqual(Object.values(SEED_DEPLOYMENTS).sort());
        expect(listing.invalid).toEqual([]);
      }
    } finally {
      await own.close();
    }
  });

  it('an item nested past the bound, served in a listing, fails alone', async () => {
    const own = await startHarness();
    try {
      // Stored past the wire's bound (the store taken directly), as a control plane that does not
      // bound its input would hold it.
      const deep = own.emulator.store.createDeployment(withLabels('deep', nested(200)), undefined);
      const listing = await own.client.listAllDeployments({ remote_reconciled: true });
      expect(listing.items.map((d) => d.id).sort()).toEqual(Object.values(SEED_DEPLOYMENTS).sort());
      expect(listing.invalid.map((i) => [i.id, i.error.code, i.identity?.listenerId])).toEqual([
        [deep.id, 'TOO_DEEP', SEED_LISTENER_ID],
      ]);
      expect(listing.invalid[0]?.error.message).toBe(
        `deployment ${deep.id} is invalid: source_config.resource_spec.labels.nest…: nested deeper than 64 levels, the most the agent reads`,
      );
      // A read of it alone fails its call, typed; a read of another answers.
      const read = await rejection(own.client.patchDeployment(deep.id, {}));
      expect(read.code).toBe('RESPONSE_TOO_DEEP');
      expect(read.message).not.toContain('nested-content-marker');
      expect((await own.client.patchDeployment(SEED_DEPLOYMENTS.helloWeb, {})).id).toBe(
        SEED_DEPLOYMENTS.helloWeb,
      );
    } finally {
      await own.close();
    }
  });
});
