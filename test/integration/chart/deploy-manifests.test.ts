// deploy/kustomize, the plain manifests: the committed files are exactly what `npm run manifests`
// generates from the chart now; the example overlay builds with kubectl kustomize, its
// configuration loads with the agent's loader and matches its RBAC and mounts, and docs/installing.md's
// commands run against the test cluster (strict server-side dry runs).
import { execFile } from 'node:child_process';
import { glob, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadAgentConfig } from '../../../src/config/agentConfig.ts';
import { KUSTOMIZE_DIR } from '../../cluster/manifests.ts';
import { docBlock, shellCommands } from '../../support/docBlocks.ts';

const run = promisify(execFile);
const kubeconfigPath = inject('kubeconfigPath');
const binDir = inject('clusterBinDir');
const root = new URL('../../..', import.meta.url).pathname;
const OVERLAY = `${KUSTOMIZE_DIR}/overlays/example`;
/** The directories the script writes; everything in them is generated. */
const GENERATED_DIRS = [`${KUSTOMIZE_DIR}/base`, `${KUSTOMIZE_DIR}/watched-namespace`];

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  subjects?: { kind: string; name: string; namespace: string }[];
  rules?: { resources: string[]; verbs: string[] }[];
  spec?: {
    template?: {
      spec: {
        serviceAccountName: string;
        containers: {
          image: string;
          ports: { name: string; containerPort: number }[];
          volumeMounts: { name: string; mountPath: string }[];
        }[];
        volumes: {
          name: string;
          configMap?: { name: string };
          secret?: { secretName: string; defaultMode: number; items: { key: string; path: string }[] };
        }[];
      };
    };
  };
}

const kubectl = (args: string[]) =>
  run(join(binDir, 'kubectl'), ['--kubeconfig', kubeconfigPath, ...args], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  });

function parseObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((doc) => doc.toJSON() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

/** The kustomize commands of docs/installing.md, as words. */
async function documentedCommands(): Promise<string[][]> {
  return shellCommands(await docBlock('docs/installing.md', 'Without Helm')).map((line) => line.split(/\s+/));
}

describe('deploy/kustomize', () => {
  let overlay: KubeObject[];

  beforeAll(async () => {
    overlay = parseObjects((await kubectl(['kustomize', OVERLAY])).stdout);
  });

  it('is exactly what `npm run manifests` generates from the chart now', async () => {
    const scripts = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')).scripts as Record<
      string,
      string
    >;
    expect(scripts.manifests).toBe('node test/cluster/manifests.ts');
    const out = await mkdtemp(join(tmpdir(), 'manifests-'));
    // The npm script's command, written elsewhere, with the cluster's helm.
    await run(process.execPath, [join(root, 'test/cluster/manifests.ts'), '--out', out], {
      cwd: root,
      env: { ...process.env, HELM: join(binDir, 'helm') },
    });
    const generated: string[] = [];
    for await (const file of glob(`${KUSTOMIZE_DIR}/**/*.yaml`, { cwd: out })) generated.push(file);
    const committed: string[] = [];
    for (const dir of GENERATED_DIRS)
      for await (const file of glob(`${dir}/**/*`, { cwd: root })) committed.push(file);
    expect(committed.sort()).toEqual(generated.sort());
    expect(generated.length).toBeGreaterThanOrEqual(5);
    for (const file of generated) {
      const fresh = await readFile(join(out, file), 'utf8');
      expect(
        await readFile(join(root, file), 'utf8'),
        `${file} differs from the chart: run npm run manifests`,
      ).toBe(fresh);
    }
  });

  it('builds the example overlay: the agent in its namespace, RBAC in each watched namespace, the image tag', () => {
    // The ConfigMap's name carries a hash of its content (hidden here to compare the rest).
    const hashed = (o: { kind: string; metadata: { name: string } }) =>
      o.kind === 'ConfigMap' && o.metadata.name !== 'k8s-listener-suspensions';
    expect(overlay.find(hashed)?.metadata.name).toMatch(/^k8s-listener-[a-z0-9]{10}$/);
    const where = overlay
      .map(
        (o) =>
          `${o.kind}/${o.metadata.namespace ?? ''}/${hashed(o) ? 'k8s-listener-<hash>' : o.metadata.name}`,
      )
      .sort();
    expect(where).toEqual(
      [
        'ConfigMap/platform-agents/k8s-listener-<hash>',
        'Deployment/platform-agents/k8s-listener',
        'PodDisruptionBudget/platform-agents/k8s-listener',
        'Role/platform-agents/k8s-listener-leader-election',
        'RoleBinding/platform-agents/k8s-listener-leader-election',
        'Role/platform-agents/k8s-listener-digest-key',
        'RoleBinding/platform-agents/k8s-listener-digest-key',
        'ConfigMap/platform-agents/k8s-listener-suspensions',
        'Role/platform-agents/k8s-listener-suspensions',
        'RoleBinding/platform-agents/k8s-listener-suspensions',
        'Service/platform-agents/k8s-listener-metrics',
        'ServiceAccount/platform-agents/k8s-listener',
        'Role/team-a/k8s-listener',
        'RoleBinding/team-a/k8s-listener',
        'Role/team-a-staging/k8s-listener',
        'RoleBinding/team-a-staging/k8s-listener',
      ].sort(),
    );
    for (const binding of overlay.filter((o) => o.kind === 'RoleBinding'))
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'k8s-listener', namespace: 'platform-agents' },
      ]);
    const pod = overlay.find((o) => o.kind === 'Deployment')?.spec?.template?.spec;
    expect(pod?.containers[0]?.image).toBe('k8s-listener:1.0.0');
    expect(pod?.serviceAccountName).toBe('k8s-listener');
    for (const o of overlay)
      expect(o.metadata.labels?.['app.kubernetes.io/managed-by'], o.kind).toBe('kustomize');
  });

  it("loads the overlay's configuration with the agent's loader; it matches the RBAC, the mounts and the probe port", async () => {
    const configMap = overlay.find((o) => o.kind === 'ConfigMap');
    const pod = overlay.find((o) => o.kind === 'Deployment')?.spec?.template?.spec;
    // The Deployment mounts the hashed ConfigMap name: a changed config.yaml restarts the agent.
    expect(pod?.volumes.find((v) => v.name === 'config')?.configMap?.name).toBe(configMap?.metadata.name);
    const path = join(await mkdtemp(join(tmpdir(), 'overlay-config-')), 'config.yaml');
    await writeFile(path, configMap?.data?.['config.yaml'] ?? '');
    const config = await loadAgentConfig({ file: path, env: {} });
    expect(config.listenerId).toBe('7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11');
    expect(config.controlPlane.baseUrl).toBe('https://deployments.example.internal');
    // Every namespace it writes to has the Role, and no other.
    const roleNamespaces = overlay
      .filter((o) => o.kind === 'Role' && o.metadata.name === 'k8s-listener')
      .map((o) => o.metadata.namespace);
    expect([...(config.namespaces ?? [])].sort()).toEqual(roleNamespaces.sort());
    // The API-key file is where the base mounts the Secret (mode 0440, as the chart means it).
    const agent = pod?.containers[0];
    const mount = agent?.volumeMounts.find((m) =>
      config.controlPlane.apiKeyFile?.startsWith(`${m.mountPath}/`),
    );
    const secret = pod?.volumes.find((v) => v.name === mount?.name)?.secret;
    expect(secret?.items.map((i) => `${mount?.mountPath}/${i.path}`)).toEqual([
      config.controlPlane.apiKeyFile,
    ]);
    expect(secret?.defaultMode).toBe(0o440);
    expect(secret?.secretName).toBe('k8s-listener-api-key');
    expect(agent?.ports.find((p) => p.name === 'metrics')?.containerPort).toBe(config.probes.port);
  });

  it('runs the commands of docs/installing.md against the cluster: the objects pass a strict server-side dry run', async () => {
    const commands = await documentedCommands();
    expect(commands.map((c) => c.slice(0, 3).join(' '))).toEqual([
      'kubectl create namespace',
      'kubectl create namespace',
      'kubectl create namespace',
      'kubectl -n platform-agents',
      'kubectl kustomize deploy/kustomize/overlays/example',
      'kubectl apply -k',
    ]);
    let applied = '';
    for (const [program, ...args] of commands) {
      expect(program).toBe('kubectl');
      if (args[0] === 'create' && args[1] === 'namespace') {
        // For real (the namespaces the overlay needs); one left from an earlier run in a reused cluster is fine.
        await kubectl(args).catch((error: { stderr: string }) => {
          if (!error.stderr.includes('AlreadyExists')) throw error;
        });
      } else if (args[0] === 'kustomize') {
        expect(parseObjects((await kubectl(args)).stdout)).toHaveLength(overlay.length);
      } else {
        const { stdout } = await kubectl([...args, '--dry-run=server', '--validate=strict']);
        if (args[0] === 'apply') applied = stdout;
        else expect(stdout).toContain('secret/k8s-listener-api-key created (server dry run)');
      }
    }
    const lines = applied.trim().split('\n');
    expect(lines).toHaveLength(overlay.length);
    for (const line of lines) expect(line).toMatch(/ (created|configured|unchanged) \(server dry run\)$/);
    expect(applied).toContain('deployment.apps/k8s-listener created (server dry run)');
  });
});
