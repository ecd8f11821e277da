// `k8s-listener diff` against the real cluster and the emulator, with the agent converged first:
// no changes, drift by hand, a new revision not yet applied, a changed Secret, deletions, an
// invalid deployment; exact outputs and exit codes, once as a real process.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runDiffCommand } from '../../../src/cli/diff.ts';
import { previewListener } from '../../../src/cli/diffPreview.ts';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { KubeClient } from '../../../src/kube/kubeClient.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import { loadDigestKey } from '../../../src/manager/digestKey.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import { RenderConfig } from '../../../src/render/index.ts';
import { kubectl } from '../../support/adminKube.ts';
import {
  app,
  startAgent,
  startWorld,
  type World,
  waitForRevision,
  worldFlags,
} from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { textSink } from '../../support/textSink.ts';

let world: World;
let agent: Agent;
let ns: string;

const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;

/** The agent's flags: this listener, the emulator, the test cluster, the agent's allow-list. */
const flags = () => worldFlags(world, ns);

async function diff(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = textSink();
  const stderr = textSink();
  const code = await runDiffCommand([...args, ...flags()], { stdout: stdout.stream, stderr: stderr.stream });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

let web: Deployment;
let api: Deployment;
let old: Deployment;
let store: Deployment;

beforeAll(async () => {
  // The listener also allows a namespace the agent's allow-list (--namespaces) leaves out.
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1, extraListenerNamespaces: [FORBIDDEN] });
  [ns = ''] = world.namespaces;
  agent = await startAgent(world, { allowedNamespaces: world.namespaces });
  web = await world.client.createDeployment(app(world, 'web', ns));
  api = await world.client.createDeployment(app(world, 'api', ns, { secrets: [] }));
  old = await world.client.createDeployment(app(world, 'old', ns, { secrets: [] }));
  store = await world.client.createDeployment(
    app(world, 'store', ns, {
      secrets: [],
      source_config: {
        listener_id: world.listenerId,
        listener_config: { k8s_namespace: ns },
        resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.1, memory_mb: 64, db_storage_gi: 1 },
      },
    }),
  );
  for (const d of [web, api, old, store]) await waitForRevision(world, d, 'DEPLOYED');
});
afterAll(async () => {
  await agent?.stop();
  await world?.close();
});

const FORBIDDEN = 'not-allowed-by-agent';
const SECRET_VALUES = ['integration-secret-value', 'rotated-secret-value', 'extra-secret-value'];
const CONTAINER = RenderConfig.parse({}).app.containerName;
const admin = (args: string[]) => kubectl(inject('clusterBinDir'), world.kubeconfigPath, ['-n', ns, ...args]);
const header = (d: Deployment, summary: string) =>
  `# deployment ${d.name} (${d.id}), namespace ${ns}, revision ${d.latest_revision_id}: ${summary}\n`;

/** No secret value, in clear or base64, anywhere in the text. */
function expectNoSecretValue(text: string): void {
  for (const value of SECRET_VALUES) {
    expect(text).not.toContain(value);
    expect(text).not.toContain(Buffer.from(value).toString('base64'));
  }
}

describe('k8s-listener diff', () => {
  it('converged: exit 0 and "no changes", as a real process; a create-only Secret is unchanged', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [MAIN, 'diff', ...flags()]);
    expect(stderr).toBe('');
    // Sorted by name; the last line is the total.
    const lines = [api, old, store, web].map((d) => header(d, 'no changes'));
    expect(stdout).toBe(`${lines.join('')}no changes\n`);
    // The generated database Secret exists: unchanged by definition, its values never shown.
    const json = await diff('store', '--output', 'json');
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as {
      exitStatus: number;
      deployments: { changes: { ref: { kind: string; name: string }; action: string }[] }[];
    };
    expect(report.exitStatus).toBe(0);
    expect(report.deployments[0]?.changes).toContainEqual({
      ref: { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'store-db-credentials' },
      action: 'unchanged',
    });
    const credentials = await world.kube.core.readNamespacedSecret({
      name: 'store-db-credentials',
      namespace: ns,
    });
    const password = credentials.data?.password ?? '';
    expect(password.length).toBeGreaterThan(20);
    expect(json.stdout).not.toContain(password);
    expect(json.stdout).not.toContain(Buffer.from(password, 'base64').toString());
  });

  it('a hand edit (strategic merge patch by an admin): exit 1 and the exact hunks', async () => {
    // From here on the agent is stopped, so nothing is undone behind the command's back.
    await agent.stop();
    await admin([
      'patch',
      'deployment',
      'web',
      '-p',
      JSON.stringify({
        spec: {
          replicas: 3,
          template: { spec: { containers: [{ name: CONTAINER, image: 'nginx:hacked' }] } },
        },
      }),
    ]);
    // The Deployment controller answers the edit by writing its revision annotation ("2"): a diff
    // read before that write and dry-run after it would show the controller's change too.
    await eventually('the controller took in the hand edit', async () => {
      const live = JSON.parse(await admin(['get', 'deployment', 'web', '-o', 'json'])) as {
        metadata: { generation: number; annotations?: Record<string, string> };
        status?: { observedGeneration?: number };
      };
      const revision = live.metadata.annotations?.['deployment.kubernetes.io/revision'];
      return revision === '2' && live.status?.observedGeneration === live.metadata.generation
        ? true
        : undefined;
    });
    const { code, stdout, stderr } = await diff('web');
    expect([code, stderr]).toEqual([1, '']);
    expect(stdout).toBe(
      `${header(web, '1 to configure')}# Deployment/${ns}/web: spec.replicas
--- Deployment/${ns}/web (live)
+++ Deployment/${ns}/web (after apply)
@@ -17,7 +17,7 @@
   namespace: ${ns}
 spec:
   progressDeadlineSeconds: 600
-  replicas: 3
+  replicas: 1
   revisionHistoryLimit: 5
   selector:
     matchLabels:
@@ -62,7 +62,7 @@
                 secretKeyRef:
                   key: API_TOKEN
                   name: web-secrets
-          image: nginx:hacked
+          image: ${'nginx:1.27'}
           imagePullPolicy: IfNotPresent
           lifecycle:
             preStop:
1 to configure
`,
    );
    // The same by id.
    expect((await diff(web.id)).stdout).toBe(stdout);
    // docs/operating.md shows this very output (its ids and namespace in place of these).
    const page = await readFile(new URL('../../../docs/operating.md', import.meta.url), 'utf8');
    const section = page.slice(page.indexOf('## `k8s-listener diff`'));
    const example = /```diff\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    const [, id = '', revision = ''] =
      /^# deployment web \((\S+)\), namespace apps, revision (\S+):/.exec(example) ?? [];
    expect(example).toBe(
      stdout
        .replaceAll(web.id, id)
        .replaceAll(web.latest_revision_id ?? '', revision)
        .replaceAll(ns, 'apps'),
    );
  });

  it('a new revision not yet applied: the image line, with the new revision id', async () => {
    const patched = await world.client.patchDeployment(api.id, {
      source_revision_config: { image_uri: 'nginx:1.28' },
    });
    expect(patched.latest_revision_id).not.toBe(api.latest_revision_id);
    const { code, stdout } = await diff('api');
    expect(code).toBe(1);
    expect(stdout.startsWith(header(patched, '3 to configure'))).toBe(true);
    expect(stdout).toContain(
      [
        '             - name: LANGSMITH_HOST_REVISION_ID',
        `-              value: ${api.latest_revision_id}`,
        `+              value: ${patched.latest_revision_id}`,
      ].join('\n'),
    );
    expect(stdout).toContain(
      [
        '-          image: nginx:1.27',
        '+          image: nginx:1.28',
        '           imagePullPolicy: IfNotPresent',
      ].join('\n'),
    );
    expect(stdout).toContain(`-        k8s-listener.io/revision-id: ${api.latest_revision_id}\n`);
    expect(stdout).toContain(`+        k8s-listener.io/revision-id: ${patched.latest_revision_id}\n`);
    expect(stdout.endsWith('\n3 to configure\n')).toBe(true);
  });

  it('a changed Secret: "(changed)" on both sides, never a value, in every output mode', async () => {
    await world.client.patchDeployment(web.id, {
      secrets: [
        { name: 'API_TOKEN', value: 'rotated-secret-value' },
        { name: 'EXTRA', value: 'extra-secret-value' },
      ],
    });
    const text = await diff('web');
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      `--- Secret/${ns}/web-secrets (live)\n+++ Secret/${ns}/web-secrets (after apply)\n@@ -1,12 +1,13 @@\n apiVersion: v1\n data:\n-  API_TOKEN: (changed)\n+  API_TOKEN: (changed)\n+  EXTRA: (added)\n kind: Secret\n`,
    );
    // The pods read the Secret through a checksum: the Deployment changes too.
    expect(text.stdout).toContain('+                  key: EXTRA\n');
    expectNoSecretValue(text.stdout + text.stderr);
    for (const output of ['json', 'yaml']) {
      const machine = await diff('web', '--output', output);
      expect(machine.code).toBe(1);
      expect(machine.stdout).toContain('(changed)');
      expect(machine.stdout).toContain('(added)');
      expectNoSecretValue(machine.stdout + machine.stderr);
    }
  });

  it('a deployment AWAITING_DELETE, then gone: its objects as whole deletions', async () => {
    await world.client.deleteDeployment(old.id);
    const awaiting = await diff('old');
    expect(awaiting.code).toBe(1);
    const files = (stdout: string) => stdout.split('\n').filter((l) => /^(---|\+\+\+|#) /.test(l));
    const pruned = [
      `--- NetworkPolicy/${ns}/old (live)`,
      '+++ /dev/null',
      `--- Deployment/${ns}/old (live)`,
      '+++ /dev/null',
      `--- Service/${ns}/old (live)`,
      '+++ /dev/null',
      `--- ConfigMap/${ns}/k8s-listener-inv-${old.id} (live)`,
      '+++ /dev/null',
    ];
    expect(files(awaiting.stdout)).toEqual([
      `# deployment old (${old.id}), AWAITING_DELETE: 4 to prune`,
      ...pruned,
    ]);
    // Whole deletions: after each header, only removed lines.
    const body = awaiting.stdout.split('\n').filter((l) => l !== '' && !/^(---|\+\+\+|#|@@) /.test(l));
    expect(body.slice(0, -1).every((l) => l.startsWith('-'))).toBe(true);
    expect(awaiting.stdout).toMatch(/^@@ -1,\d+ \+0,0 @@$/m);
    expect(awaiting.stdout.endsWith('\n4 to prune\n')).toBe(true);

    // The control plane forgets it (as when the agent reports it deleted): gone from a complete
    // listing, its objects (named by their annotation) go.
    await world.client.postStatusReports(world.listenerId, {
      reports: [{ deployment_id: old.id, deleted: true, observed_at: new Date().toISOString() }],
    });
    const gone = await diff(old.id);
    expect(gone.code).toBe(1);
    expect(files(gone.stdout)).toEqual([
      `# deployment old (${old.id}), gone from the control plane: 4 to prune`,
      ...pruned,
    ]);
    // Only objects carrying this listener's label: one made by someone else is never listed.
    await admin(['label', 'service', 'old', 'k8s-listener.io/listener-id=someone-else', '--overwrite']);
    expect(files((await diff(old.id)).stdout)).toEqual([
      `# deployment old (${old.id}), gone from the control plane: 3 to prune`,
      ...pruned.slice(0, 4),
      ...pruned.slice(6),
    ]);
  });

  it('an object deleted by hand is a whole addition; objects that left the desired set are pruned', async () => {
    await admin(['delete', 'service', 'web']);
    const created = await diff('web');
    expect(created.code).toBe(1);
    expect(created.stdout).toMatch(
      new RegExp(
        `\n--- /dev/null\n\\+\\+\\+ Service/${ns}/web \\(after apply\\)\n@@ -0,0 \\+1,\\d+ @@\n\\+apiVersion: v1\n`,
      ),
    );
    expect(created.stdout).toContain('+  type: ClusterIP\n');
    expect(created.stdout).toMatch(/\n1 to create, 2 to configure\n$/);

    // The database leaves the spec: its objects leave the desired set and are pruned, but for its
    // credentials, kept with its volume while the deployment lives (their values never shown).
    const password = (
      await world.kube.core.readNamespacedSecret({ name: 'store-db-credentials', namespace: ns })
    ).data?.password;
    await world.client.patchDeployment(store.id, {
      source_config: {
        listener_id: world.listenerId,
        listener_config: { k8s_namespace: ns },
        resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.1, memory_mb: 64 },
      },
    });
    const pruned = await diff('store');
    expect(pruned.code).toBe(1);
    const prunes = pruned.stdout.match(/^--- .+\n\+\+\+ \/dev\/null$/gm) ?? [];
    expect(prunes.map((p) => p.split('\n')[0]).sort()).toEqual([
      `--- NetworkPolicy/${ns}/store-data (live)`,
      `--- Service/${ns}/store-db (live)`,
      `--- StatefulSet/${ns}/store-db (live)`,
    ]);
    expect(password).toBeTruthy();
    expect(pruned.stdout).not.toContain(password ?? 'no password read');
    expect(pruned.stdout).toMatch(/\n\d+ to configure, 3 to prune\n$/);
  });

  it('an invalid deployment: its render problems on stderr, exit 2, the others still shown', async () => {
    const bad = await world.client.createDeployment(app(world, 'bad', FORBIDDEN, { secrets: [] }));
    const one = await diff('bad');
    expect(one.code).toBe(2);
    expect(one.stderr).toMatch(
      new RegExp(
        `^deployment bad \\(${bad.id}\\) is invalid:\n  source_config\\.listener_config\\.k8s_namespace: .+\n$`,
      ),
    );
    expect(one.stdout).toBe(
      `# deployment bad (${bad.id}): invalid, nothing compared (see stderr)\nno changes\n`,
    );
    const all = await diff();
    expect(all.code).toBe(2);
    expect(all.stdout).toContain(`# deployment api (${api.id})`);
    expect(all.stdout).toContain('-          image: nginx:hacked\n');
  });

  it('changes nothing: only reads and dry runs, the drift is still there afterwards', async () => {
    const kube = await KubeClient.fromKubeconfig(world.kubeconfigPath, { logger: pino({ level: 'silent' }) });
    try {
      const preview = await previewListener({
        kube,
        client: world.client,
        listener: await world.client.getListener(world.listenerId),
        namespaces: [ns],
        allowedNamespaces: [ns],
        // The agent's key: the digests compared are the ones the agent wrote.
        digestKey: await loadDigestKey(kube, 'default', { create: false }),
        renderConfig: RenderConfig.parse({}),
        reconcileConfig: ReconcileConfig.parse({}),
      });
      const actions = new Set(
        preview.deployments.flatMap((d) => ('changes' in d ? d.changes.map((c) => c.action) : [])),
      );
      expect([...actions].sort()).toEqual(['configure', 'create', 'prune', 'unchanged']);
      expect(kube.writeRequestCount()).toBe(0);
      expect(kube.requestCounts()['patch:dryRun']).toBeGreaterThan(0);
    } finally {
      await kube.close();
    }
    const live = await world.kube.apps.readNamespacedDeployment({ name: 'web', namespace: ns });
    expect(live.spec?.template.spec?.containers[0]?.image).toBe('nginx:hacked');
  });

  it('usage and setup errors exit 2, never 1', async () => {
    expect((await diff('a', 'b')).code).toBe(2);
    const output = await diff('--output', 'xml');
    expect([output.code, output.stderr]).toEqual([
      2,
      'k8s-listener diff: --output must be diff, json or yaml, not xml\n',
    ]);
    const missing = await diff('no-such-deployment');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('deployment no-such-deployment is not a deployment of listener');
    // A control plane that does not answer: an error, not "differences".
    const stdout = textSink();
    const stderr = textSink();
    const unreachable = await runDiffCommand([...flags(), '--control-plane', 'http://127.0.0.1:1'], {
      stdout: stdout.stream,
      stderr: stderr.stream,
    });
    expect([unreachable, stdout.text()]).toEqual([2, '']);
    expect(stderr.text()).toMatch(/^k8s-listener diff: .+/);
  });
});
