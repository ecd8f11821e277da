import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runRenderCommand } from '../../../src/cli/render.ts';
import { type Harness, SEED_DEPLOYMENTS, startHarness } from '../../support/emulatorHarness.ts';

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
    const { code, stdout } = await capture(['--file', 'test/fixtures/deployment-maximal.json']);
    expect(code).toBe(0);
    expect(kinds(stdout)).toContain('PodTemplate');
    expect(stdout).toContain('# Source: StatefulSet/apps/');
    expect(stdout).not.toContain('maximal-secret-value-1');
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
      'Service',
      'Service',
      'StatefulSet',
      'Service',
      'StatefulSet',
      'Deployment',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
    ]);
    expect(stdout).toContain('image: busybox:1.36');
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
