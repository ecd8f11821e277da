// `k8s-listener status` against the real test cluster and the emulator, with the agent running:
// converged, rolling out (pods no node can take), failed (an invalid deployment), drifted by hand
// (with the agent stopped, so the drift stays); exact rows apart from ages, and exit codes, also
// through real processes; --watch on a pipe and on a terminal.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { runStatusCommand } from '../../../src/cli/status.ts';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import type { Agent } from '../../../src/manager/agent.ts';
import {
  DeploymentDetail,
  STATUS_TABLE_HEADER,
  StatusList,
} from '../../../src/report/deploymentStatusRow.ts';
import {
  app,
  deploymentNamed,
  startAgent,
  startWorld,
  type World,
  waitForRevision,
  worldFlags,
} from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';
import { textSink } from '../../support/textSink.ts';

const execFileAsync = promisify(execFile);
const MAIN = new URL('../../../src/cli/main.ts', import.meta.url).pathname;

let world: World;
let agent: Agent;
let ns: string;
/**
 * A long grace period: the `stuck` deployment (pods no node can take) must stay rolling out here;
 * that an unschedulable pod fails after the grace period is the rollout-status tests' concern.
 */
const agentOptions = () => ({ allowedNamespaces: world.namespaces, reconcile: { failureGraceMs: 600_000 } });
let web: Deployment;
let stuck: Deployment;
let bad: Deployment;

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  [ns = ''] = world.namespaces;
  agent = await startAgent(world, agentOptions());
});
afterAll(async () => {
  await agent?.stop();
  await world?.close();
});

/** The configuration flags of this world, as an operator passes them. */
const flags = () => worldFlags(world, ns);

async function status(...args: string[]) {
  const out = textSink();
  const err = textSink();
  const code = await runStatusCommand([...args, ...flags()], { stdout: out.stream, stderr: err.stream });
  return { code, stdout: out.text(), stderr: err.text() };
}

/** Table lines as cells (columns are two or more spaces apart), an age cell checked and blanked. */
function cells(table: string): string[][] {
  const [header, ...rows] = table.trimEnd().split('\n');
  expect(header?.split(/\s{2,}/)).toEqual([...STATUS_TABLE_HEADER]);
  return rows.map((line) => {
    const row = line.split(/\s{2,}/);
    // An age, or '-' when the time of the transition is unknown (a hand edit).
    expect(row[5]).toMatch(/^(\d+[smhd]|-)$/);
    if (row[5] !== '-') row[5] = 'AGE';
    return row;
  });
}

const short = (deployment: Deployment) => (deployment.latest_revision_id ?? '').slice(0, 8);
const webRow = () => [
  'web',
  ns,
  short(web),
  'main 2/2 queue 1/1 db 1/1',
  'DEPLOYED',
  'AGE',
  'all workloads are available',
];
const stuckRow = () => [
  'stuck',
  ns,
  short(stuck),
  'main 0/1',
  'DEPLOYING',
  'AGE',
  'main: 0 of 1 updated replicas available',
];
const badMessage = () =>
  `deployment ${bad.id} cannot be rendered: source_config.resource_spec.min_scale: min_scale (3) is above max_scale (1)`;

/** Runs `k8s-listener status` as a real process; resolves with its exit code and output. */
async function statusProcess(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [MAIN, 'status', ...args, ...flags()]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('k8s-listener status', () => {
  it('converged: one DEPLOYED row per deployment, replicas per workload, exit 0 (in-process and as a process)', async () => {
    web = await world.client.createDeployment(
      app(world, 'web', ns, {
        source_config: {
          listener_id: world.listenerId,
          listener_config: { k8s_namespace: ns },
          resource_spec: {
            min_scale: 2,
            max_scale: 2,
            queue_min_scale: 1,
            queue_max_scale: 1,
            cpu: 0.1,
            memory_mb: 64,
            db_storage_gi: 1,
          },
        },
      }),
    );
    await waitForRevision(world, web, 'DEPLOYED');
    const result = await eventually('status converged', async () => {
      const r = await status();
      return r.code === 0 ? r : undefined;
    });
    expect(cells(result.stdout)).toEqual([webRow()]);
    expect(result.stderr).toBe('');

    const processed = await statusProcess();
    expect(processed.code).toBe(0);
    expect(cells(processed.stdout)).toEqual([webRow()]);
  });

  it('a new revision leaves the create-only database Secret as created, and is DEPLOYED, exit 0', async () => {
    // The Secret's desired spec hash moves with the revision; the agent never rewrites it.
    web = await world.client.patchDeployment(web.id, { source_revision_config: { image_uri: 'nginx:1.28' } });
    await waitForRevision(world, web, 'DEPLOYED');
    const result = await eventually('status after the new revision', async () => {
      const r = await status();
      return r.code === 0 ? r : undefined;
    }).catch(async () => status());
    expect(result.code).toBe(0);
    expect(cells(result.stdout)).toEqual([webRow()]);
  });

  it('prints the documented JSON and YAML shape, with the transition time the agent annotated', async () => {
    const json = await status('--output', 'json');
    expect(json.code).toBe(0);
    const list = StatusList.parse(JSON.parse(json.stdout));
    expect(list.listenerId).toBe(world.listenerId);
    expect(list.deployments).toEqual([
      {
        id: web.id,
        name: 'web',
        namespace: ns,
        revisionId: web.latest_revision_id,
        revisionStatus: 'DEPLOYED',
        state: 'DEPLOYED',
        reason: 'Current',
        message: 'all workloads are available',
        since: expect.any(String),
        workloads: [
          { component: 'main', kind: 'Deployment', name: 'web', desired: 2, ready: 2 },
          { component: 'queue', kind: 'Deployment', name: 'web-queue', desired: 1, ready: 1 },
          { component: 'database', kind: 'StatefulSet', name: 'web-db', desired: 1, ready: 1 },
        ],
      },
    ]);
    const inventory = await world.kube.core.readNamespacedConfigMap({
      name: `k8s-listener-inv-${web.id}`,
      namespace: ns,
    });
    const annotation = JSON.parse(inventory.metadata?.annotations?.['k8s-listener.io/status'] ?? '{}');
    expect(annotation).toMatchObject({ revisionId: web.latest_revision_id, status: 'DEPLOYED' });
    expect(list.deployments[0]?.since).toBe(annotation.since);
    expect(Date.now() - Date.parse(annotation.since)).toBeLessThan(120_000);

    const yaml = await status('--output', 'yaml');
    expect(yaml.code).toBe(0);
    expect(StatusList.parse(parseYaml(yaml.stdout)).deployments).toEqual(list.deployments);
  });

  it('shows one deployment in depth: objects with their kstatus status, and its Events', async () => {
    const json = await status('web', '--output', 'json');
    expect(json.code).toBe(0);
    const detail = DeploymentDetail.parse(JSON.parse(json.stdout));
    expect(detail.deployment.state).toBe('DEPLOYED');
    expect(detail.objects.map((o) => `${o.kind}/${o.name} ${o.status}`).sort()).toEqual([
      'Deployment/web Current',
      'Deployment/web-queue Current',
      'NetworkPolicy/web Current',
      'NetworkPolicy/web-data Current',
      'PersistentVolumeClaim/data-web-db-0 Current',
      'PodDisruptionBudget/web-queue Current',
      'Secret/web-db-credentials Current',
      'Secret/web-secrets Current',
      'Service/web Current',
      'Service/web-db Current',
      'StatefulSet/web-db Current',
    ]);
    expect(detail.objects.every((o) => o.drift === null)).toBe(true);
    expect(detail.events).toContainEqual(
      expect.objectContaining({ type: 'Normal', reason: 'RolloutComplete', object: 'Deployment/web' }),
    );

    // By id as well as by name; the table form, with the events under the objects.
    const table = await status(web.id);
    expect(table.code).toBe(0);
    const lines = table.stdout.split('\n');
    expect(lines.slice(0, 3)).toEqual([
      `Deployment: web (${web.id})`,
      `Namespace:  ${ns}`,
      `Revision:   ${web.latest_revision_id} (DEPLOYED in the control plane)`,
    ]);
    expect(lines[3]).toMatch(/^State: {6}DEPLOYED for \d+[smhd]$/);
    expect(lines).toContain('Replicas:   main 2/2 queue 1/1 db 1/1');
    expect(lines).toContain('Objects:');
    expect(lines.find((l) => l.startsWith('Deployment  '))?.split(/\s{2,}/)).toEqual([
      'Deployment',
      'web',
      'main',
      'Current',
      '2 replicas available',
    ]);
    expect(
      lines.some((l) => /^\d+[smhd]\s+Normal\s+RolloutComplete\s+Deployment\/web\s+revision /.test(l)),
    ).toBe(true);
  });

  it('rolling out: a deployment whose pods no node can take is DEPLOYING, exit 3', async () => {
    stuck = await world.client.createDeployment(
      app(world, 'stuck', ns, {
        source_config: {
          listener_id: world.listenerId,
          listener_config: { k8s_namespace: ns },
          // More cpu than any node has: the pod stays Pending, the rollout in progress.
          resource_spec: { min_scale: 1, max_scale: 1, cpu: 500, memory_mb: 64 },
        },
      }),
    );
    const result = await eventually('stuck rolling out', async () => {
      const r = await status();
      return r.stdout.includes('updated replicas available') ? r : undefined;
    });
    expect(result.code).toBe(3);
    expect(cells(result.stdout)).toEqual([stuckRow(), webRow()]);
    expect((await status('stuck')).code).toBe(3);
    expect((await status('web')).code).toBe(0);
  });

  it('failed: an invalid deployment is listed with its reason and no objects; failure wins, exit 1', async () => {
    bad = await world.client.createDeployment(
      app(world, 'bad', ns, {
        source_config: {
          listener_id: world.listenerId,
          listener_config: { k8s_namespace: ns },
          resource_spec: { min_scale: 3, max_scale: 1 },
        },
      }),
    );
    await waitForRevision(world, bad, 'DEPLOY_FAILED');
    const result = await status();
    expect(result.code).toBe(1);
    expect(cells(result.stdout)).toEqual([
      ['bad', ns, short(bad), '-', 'DEPLOY_FAILED', 'AGE', badMessage()],
      stuckRow(),
      webRow(),
    ]);
    const detail = await status('bad');
    expect(detail.code).toBe(1);
    expect(detail.stdout).toContain(`Reason:     RenderInvalid\nMessage:    ${badMessage()}\n`);
    expect(detail.stdout).toContain('Objects:\nNo objects.\n');

    const processed = await statusProcess('--output', 'json');
    expect(processed.code).toBe(1);
    expect(StatusList.parse(JSON.parse(processed.stdout)).deployments.map((d) => d.state)).toEqual([
      'DEPLOY_FAILED',
      'DEPLOYING',
      'DEPLOYED',
    ]);
  });

  it('--watch on a pipe prints a new table only when something changed, until Ctrl-C', async () => {
    const child: ChildProcess = spawn(
      process.execPath,
      [MAIN, 'status', '--watch', '--interval', '0.3', ...flags()],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await eventually(
        'first table',
        async () => (output.includes('DEPLOY_FAILED') ? true : undefined),
        30_000,
      );
      // Several refreshes with nothing changed print nothing more.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(output.match(/^NAME /gm)).toHaveLength(1);

      await world.client.deleteDeployment(bad.id);
      await world.client.deleteDeployment(stuck.id);
      await eventually(
        'deleted deployments gone from the control plane',
        async () =>
          (await deploymentNamed(world, bad.id)) || (await deploymentNamed(world, stuck.id))
            ? undefined
            : true,
        60_000,
      );
      await eventually('a table with web alone', async () => {
        const tables = output.split(/^(?=NAME )/m);
        const last = tables.at(-1) ?? '';
        return tables.length > 1 && !last.includes('stuck') && !last.includes('bad ') && last.includes('web')
          ? last
          : undefined;
      });
    } finally {
      child.kill('SIGINT');
    }
    // Ctrl-C ends the watch with the code of the last status read: everything DEPLOYED.
    expect(await exited).toBe(0);
    const last = output.split(/^(?=NAME )/m).at(-1) ?? '';
    expect(cells(last)).toEqual([webRow()]);
  });

  it('--watch on a terminal redraws the table in place with ANSI cursor control', async () => {
    const out = textSink(true);
    const err = textSink();
    const stop = new AbortController();
    const running = runStatusCommand(['--watch', '--interval', '0.2', ...flags()], {
      stdout: out.stream,
      stderr: err.stream,
      signal: stop.signal,
    });
    await eventually('three frames', async () =>
      out.text().split('Ctrl-C to stop.').length > 3 ? true : undefined,
    );
    stop.abort();
    expect(await running).toBe(0);
    const text = out.text();
    // Cursor hidden while drawing, shown again at the end.
    expect(text.startsWith('\x1b[?25l')).toBe(true);
    expect(text.endsWith('\x1b[?25h')).toBe(true);
    // Each frame after the first goes back up over the previous one (4 lines: header, web, blank,
    // footer) and clears to the end of the screen.
    const frames = text.slice('\x1b[?25l'.length, -'\x1b[?25h'.length).split('\x1b[4F\x1b[J');
    expect(frames.length).toBeGreaterThanOrEqual(3);
    for (const frame of frames) {
      expect(cells(frame.replace(/\nEvery 0.2s; Ctrl-C to stop.\n$/, '\n'))).toEqual([webRow()]);
    }
  });

  it('keeps the transition time across an agent restart that changes nothing, and tells nothing again', async () => {
    const annotationOf = async () =>
      (await world.kube.core.readNamespacedConfigMap({ name: `k8s-listener-inv-${web.id}`, namespace: ns }))
        .metadata?.annotations?.['k8s-listener.io/status'];
    const before = await annotationOf();
    expect(JSON.parse(before ?? '{}')).toMatchObject({ status: 'DEPLOYED', since: expect.any(String) });
    await agent.stop();
    agent = await startAgent(world, agentOptions());
    // The new agent reports afresh (its memory is empty)...
    await eventually('the new agent reported web', async () =>
      (await agent.metrics.deploymentsByStatus.get()).values.find((v) => v.labels.status === 'DEPLOYED')
        ?.value === 1
        ? true
        : undefined,
    );
    // ...but the cluster was told already: the annotation records it, so neither it nor an Event
    // is written again.
    expect(await annotationOf()).toBe(before);
    expect(agent.kube?.requestCounts({ kind: 'ConfigMap' }).patch ?? 0).toBe(0);
    expect(agent.kube?.requestCounts({ kind: 'Event' }).create ?? 0).toBe(0);
  });

  it('drifted by hand (the agent down): DRIFTED naming the field or the deleted object, exit 3; the agent restores it, exit 0', async () => {
    await agent.stop();
    await world.kube.apps.patchNamespacedDeployment({
      name: 'web',
      namespace: ns,
      body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'busybox:hand-edited' }],
    });
    const edited = await status();
    expect(edited.code).toBe(3);
    expect(cells(edited.stdout)).toEqual([
      [
        'web',
        ns,
        short(web),
        expect.stringMatching(/^main \d\/2 queue 1\/1 db 1\/1$/),
        'DRIFTED',
        '-',
        'Deployment/web: spec.template.spec.containers[0].image changed by hand',
      ],
    ]);
    const detail = DeploymentDetail.parse(JSON.parse((await status('web', '--output', 'json')).stdout));
    expect(detail.objects.find((o) => o.kind === 'Deployment' && o.name === 'web')?.drift).toBe(
      'spec.template.spec.containers[0].image',
    );

    // A Secret value edited by hand: the key is named, no value (old or new) is ever printed.
    await world.kube.core.patchNamespacedSecret({
      name: 'web-secrets',
      namespace: ns,
      body: [
        { op: 'replace', path: '/data/API_TOKEN', value: Buffer.from('hand-set-value').toString('base64') },
      ],
    });
    const outputs = await Promise.all([
      status(),
      status('web'),
      status('web', '--output', 'json'),
      status('--output', 'yaml'),
    ]);
    const secretDrift = DeploymentDetail.parse(JSON.parse(outputs[2]?.stdout ?? '')).objects.find(
      (o) => o.kind === 'Secret' && o.name === 'web-secrets',
    );
    expect(secretDrift?.drift).toBe('data.API_TOKEN');
    for (const { stdout, stderr } of outputs) {
      for (const value of ['integration-secret-value', 'hand-set-value']) {
        expect(stdout + stderr).not.toContain(value);
        expect(stdout + stderr).not.toContain(Buffer.from(value).toString('base64'));
      }
    }

    await world.kube.core.deleteNamespacedService({ name: 'web-db', namespace: ns });
    const deleted = await status('web');
    expect(deleted.code).toBe(3);
    expect(deleted.stdout).toContain('Message:    Service/web-db was deleted by hand\n');

    agent = await startAgent(world, agentOptions());
    // Exit 0 comes once the agent has put the image back and reported; the old ReplicaSet's pod
    // may still be terminating then (main 3/2: DEPLOYED holds through a scale, as the agent
    // reports), so the row is awaited whole.
    const restored = await eventually('restored by the agent', async () => {
      const r = await status();
      return r.code === 0 && JSON.stringify(cells(r.stdout)) === JSON.stringify([webRow()]) ? r : undefined;
    });
    expect(cells(restored.stdout)).toEqual([webRow()]);
  });

  it('usage errors exit 2 (an unknown deployment, an unknown flag, a bad --output); an unreachable control plane exits 1', async () => {
    const unknown = await status('no-such-deployment');
    expect([unknown.code, unknown.stderr]).toEqual([
      2,
      'k8s-listener status: no deployment named no-such-deployment is bound to this listener\n',
    ]);
    expect((await status('--bogus')).code).toBe(2);
    const output = await status('--output', 'xml');
    expect(output.code).toBe(2);
    expect(output.stderr).toContain('--output must be table, json or yaml, not xml');
    const processed = await statusProcess('--output', 'xml');
    expect(processed.code).toBe(2);
    // Not a usage error: the control plane does not answer. Exit 1, one line, no API key.
    const down = await execFileAsync(
      process.execPath,
      [MAIN, 'status', ...flags().map((f) => (f === world.emulator.url ? 'http://127.0.0.1:1' : f))],
      { env: { ...process.env, K8S_LISTENER_API_KEY: 'status-test-api-key' } },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
    );
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(
      /^k8s-listener status: the control plane at http:\/\/127\.0\.0\.1:1: GET \/v2\/listeners\/\S+ failed/,
    );
    expect(down.stderr).not.toContain('status-test-api-key');
    expect(down.stderr).not.toContain('    at ');
    const help = await statusProcess('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit code: 0 every deployment is DEPLOYED; 1 any is DEPLOY_FAILED');
  });
});
