import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { adminKube, createNamespace, kubectlWithInput, uniqueNamespace } from '../../support/adminKube.ts';

const run = promisify(execFile);
const kubeconfigPath = inject('kubeconfigPath');
const binDir = inject('clusterBinDir');
const chart = new URL('../../../charts/k8s-listener', import.meta.url).pathname;
const exampleValues = new URL('../../../deploy/values-example.yaml', import.meta.url).pathname;
const helm = (args: string[]) => run(join(binDir, 'helm'), args, { maxBuffer: 16 * 1024 * 1024 });

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { resources: string[]; verbs: string[] }[];
}

describe('Helm chart', () => {
  it('lints with the example values and refuses to render without the required ones', async () => {
    const { stdout } = await helm(['lint', chart, '-f', exampleValues]);
    expect(stdout).toContain('0 chart(s) failed');
    const failure = await helm(['template', 'x', chart]).then(
      () => '',
      (error: { stderr: string }) => error.stderr,
    );
    expect(failure).toContain('listenerId');
    expect(failure).toContain('/controlPlane/url');
  });

  it('renders least-privilege RBAC (a Role per allowed namespace, no cluster role) that the API server accepts', async () => {
    const kube = adminKube(kubeconfigPath);
    const release = uniqueNamespace('listener');
    const targets = [uniqueNamespace('apps'), uniqueNamespace('apps')];
    for (const ns of [release, ...targets]) await createNamespace(kube, ns);
    const { stdout } = await helm([
      'template',
      'agent',
      chart,
      '-n',
      release,
      '-f',
      exampleValues,
      '--set',
      'createNamespaces=false',
      '--set',
      `namespaces={${targets.join(',')}}`,
      '--set',
      'controlPlane.apiKey=not-a-real-key',
    ]);
    const manifests = parseAllDocuments(stdout)
      .map((doc) => doc.toJSON() as Manifest | null)
      .filter((m): m is Manifest => m !== null);
    const kinds = manifests.map((m) => `${m.kind}/${m.metadata.namespace ?? ''}`);
    expect(kinds).not.toContain(expect.stringMatching(/^Cluster/));
    for (const ns of targets) {
      const role = manifests.find((m) => m.kind === 'Role' && m.metadata.namespace === ns);
      expect(role?.rules?.some((r) => r.resources.includes('deployments') && r.verbs.includes('patch'))).toBe(
        true,
      );
      expect(kinds).toContain(`RoleBinding/${ns}`);
    }
    expect(
      manifests.find((m) => m.kind === 'Role' && m.metadata.namespace === release)?.rules?.[0]?.resources,
    ).toEqual(['leases']);

    // Every object is accepted by the real API server (server-side dry run, strict validation).
    const applied = await kubectlWithInput(
      binDir,
      kubeconfigPath,
      ['apply', '--dry-run=server', '--validate=strict', '-f', '-'],
      stdout,
    );
    expect(applied.trim().split('\n')).toHaveLength(manifests.length);
    expect(applied).toContain('deployment.apps/agent-k8s-listener created (server dry run)');
  });
});
