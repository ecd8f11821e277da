import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runRenderCommand } from '../../../src/cli/render.ts';
import { startEmulator } from '../../../src/emulator/server.ts';
import { EmulatorState } from '../../../src/emulator/state.ts';
import { chooseTarget } from '../../../src/reconcile/loop/target.ts';
import { SECRET_DIGEST_MASK } from '../../../src/render/digestAnnotations.ts';
import { dictionary, digestsFor, digestsIn, recoveredWords } from '../../support/dictionaryAttack.ts';
import {
  type Harness,
  SEED_DEPLOYMENTS,
  SEED_LISTENER_ID,
  SEED_PATH,
  startHarness,
} from '../../support/emulatorHarness.ts';

async function capture(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    return { code: await runRenderCommand(argv), stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

const kinds = (yaml: string) =>
  parseAllDocuments(yaml)
    .map((d) => (d.toJSON() as { kind: string } | null)?.kind)
    .filter(Boolean);

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness();
});
afterAll(() => harness.close());

describe('render command', () => {
  it('prints the objects of a deployment file as YAML documents', async () => {
    // The maximal example mounts an nfs volume, which only Pod Security baseline allows.
    const dir = mkdtempSync(join(tmpdir(), 'render-config-'));
    writeFileSync(
      join(dir, 'config.yaml'),
      'render:\n  policy:\n    podSecurity: baseline\n    serviceAccounts: [agent-platform]\n    serviceAccountTokens: true\n    csiDrivers: [secrets-store.csi.k8s.io]\n',
    );
    const { code, stdout } = await capture([
      '--file',
      'test/fixtures/deployment-maximal.json',
      '--config',
      join(dir, 'config.yaml'),
    ]);
    expect(code).toBe(0);
    expect(kinds(stdout)).toContain('PodTemplate');
    expect(stdout).toContain('# Source: StatefulSet/apps/');
    expect(stdout).not.toContain('maximal-secret-value-1');
  });

  // Render never prints a Secret value unless asked to (docs/design.md, "Secret values stay secret").
  it('masks Secret values unless --show-secrets', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'render-secret-')), 'deployment.json');
    const deployment = JSON.parse(readFileSync('test/fixtures/deployment-minimal.json', 'utf8'));
    deployment.secrets = [{ name: 'API_TOKEN', value: 'hunter2-do-not-print' }];
    writeFileSync(file, JSON.stringify(deployment));
    const encoded = Buffer.from('hunter2-do-not-print').toString('base64');
    const masked = await capture(['--file', file]);
    expect(masked.code).toBe(0);
    expect(masked.stdout).toContain('API_TOKEN: (masked)');
    expect(masked.stdout).not.toContain(encoded);
    expect(masked.stdout).not.toContain('hunter2-do-not-print');
    const shown = await capture(['--file', file, '--show-secrets']);
    expect(shown.stdout).toContain(`API_TOKEN: ${encoded}`);
  });

  // Render has no digest key, so the digests it would print of a live secret
  // are unkeyed — a dictionary attack on a printed config-checksum would recover the secret.
  it('prints no digest of a secret value by --id: a 10,000-word dictionary attack on its output recovers nothing', async () => {
    const created = await harness.client.createDeployment({
      name: 'guarded',
      source: 'external_container',
      source_config: { listener_id: SEED_LISTENER_ID, listener_config: { k8s_namespace: 'apps' } },
      source_revision_config: { image_uri: 'nginx:1.27' },
      secrets: [{ name: 'API_TOKEN', value: 'hunter2' }],
    });
    const masked = await capture(['--id', created.id, '--control-plane', harness.emulator.url]);
    expect(masked.code).toBe(0);
    expect(masked.stdout).toContain(`k8s-listener.io/config-checksum: "${SECRET_DIGEST_MASK}"`);
    const observed = digestsIn(masked.stdout);
    // The digests of objects that hold no secret value are still printed: the attack has targets.
    expect(observed.size).toBeGreaterThanOrEqual(2);

    // The attacker knows everything render read but the secret, and renders each guess as render does.
    const deployment = (await harness.client.listAllDeployments({ deployment_ids: [created.id] })).items[0];
    if (!deployment) throw new Error('the deployment is gone');
    const target = {
      deployment,
      revision: chooseTarget(deployment, (await harness.client.listAllRevisions(created.id)).items).revision,
      listener: await harness.client.getListener(SEED_LISTENER_ID),
      allowedNamespaces: undefined,
      secretName: 'API_TOKEN',
    };
    const words = dictionary('hunter2');
    expect(recoveredWords(words, observed, (guess) => digestsFor(target, guess, undefined))).toEqual([]);

    // The control: what --show-secrets prints (unkeyed digests) gives the word away to the same search.
    const shown = await capture([
      '--id',
      created.id,
      '--control-plane',
      harness.emulator.url,
      '--show-secrets',
    ]);
    const few = dictionary('hunter2', 100);
    expect(
      recoveredWords(few, digestsIn(shown.stdout), (guess) => digestsFor(target, guess, undefined)),
    ).toEqual(['hunter2']);
  }, 60_000);

  it('refuses what the Pod Security level forbids, naming the field (restricted by default: no nfs)', async () => {
    // Its ServiceAccount and CSI driver allowed, so that what is left is the nfs volume.
    const dir = mkdtempSync(join(tmpdir(), 'render-config-'));
    writeFileSync(
      join(dir, 'config.yaml'),
      'render:\n  policy:\n    serviceAccounts: [agent-platform]\n    serviceAccountTokens: true\n    csiDrivers: [secrets-store.csi.k8s.io]\n',
    );
    const { code, stdout, stderr } = await capture([
      '--file',
      'test/fixtures/deployment-maximal.json',
      '--config',
      join(dir, 'config.yaml'),
    ]);
    expect(code).not.toBe(0);
    expect(stdout).toBe('');
    expect(stderr).toMatch(
      /Deployment\/\S+ spec\.volumes\[\d+\]\.nfs: nfs volumes are not allowed \(Pod Security restricted\)/,
    );
  });

  it('reads a deployment, its latest revision and its listener from the control plane by id', async () => {
    const { code, stdout } = await capture([
      '--id',
      SEED_DEPLOYMENTS.chatApi,
      '--control-plane',
      harness.emulator.url,
    ]);
    expect(code).toBe(0);
    expect(kinds(stdout)).toEqual([
      'Secret',
      'Secret',
      'Secret',
      'Service',
      'Service',
      'StatefulSet',
      'Service',
      'StatefulSet',
      'Deployment',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'NetworkPolicy',
      'NetworkPolicy',
    ]);
    expect(stdout).toContain('image: busybox:1.36');
  });

  it('previews the revision the agent would choose, not latest_revision_id, and notes a failed one', async () => {
    // latest_revision_id still names the older revision (1.35) while a newer one (1.37) exists,
    // as after a redeploy the deployment record has not caught up with: the agent rolls out 1.37.
    const state = EmulatorState.parse(JSON.parse(readFileSync(SEED_PATH, 'utf8')));
    const stored = state.deployments.find((d) => d.deployment.id === SEED_DEPLOYMENTS.chatApi);
    const [older, newer] = stored?.revisions ?? [];
    if (!stored || !older || !newer) throw new Error('the seed changed: chat-api needs two revisions');
    stored.deployment.latest_revision_id = older.id;
    newer.source_revision_config = { image_uri: 'busybox:1.37' };
    const preview = async () => {
      const emulator = await startEmulator({ seed: state });
      try {
        return await capture(['--id', SEED_DEPLOYMENTS.chatApi, '--control-plane', emulator.url]);
      } finally {
        await emulator.close();
      }
    };
    const chosen = await preview();
    expect(chosen.code).toBe(0);
    expect(chosen.stdout).toContain('image: busybox:1.37');
    expect(chosen.stdout).not.toContain('busybox:1.35');
    expect(chosen.stderr).not.toContain('does not roll it out');

    newer.status = 'DEPLOY_FAILED';
    const failed = await preview();
    expect(failed.stdout).toContain('image: busybox:1.37');
    expect(failed.stderr).toContain(
      `note: revision ${newer.id} is DEPLOY_FAILED: the agent does not roll it out on its own`,
    );
  });

  it('exits 1 and lists every problem of an invalid deployment on stderr', async () => {
    const { code, stdout, stderr } = await capture([
      '--file',
      'test/fixtures/deployment-minimal.json',
      '--allow-namespaces',
      'elsewhere',
    ]);
    expect([code, stdout]).toEqual([1, '']);
    expect(stderr).toContain(
      "source_config.listener_config.k8s_namespace: namespace apps is not in the agent's allow-list (elsewhere)",
    );
  });
});
