import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadAgentConfig } from '../../../src/config/agentConfig.ts';

const LISTENER = '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11';

async function file(content: string): Promise<string> {
  const path = join(await mkdtemp(join(tmpdir(), 'config-')), 'config.yaml');
  await writeFile(path, content);
  return path;
}

describe('agent configuration', () => {
  /** A file, the environment over it and a flag over both. */
  const layered = async () =>
    loadAgentConfig({
      file: await file(
        `listenerId: ${LISTENER}\ncontrolPlane:\n  baseUrl: http://file.example.test\nreconcile:\n  pollIntervalMs: 5000\nrender:\n  ingress:\n    className: nginx\n`,
      ),
      env: {
        K8S_LISTENER_CONTROL_PLANE_URL: 'http://env.example.test',
        K8S_LISTENER_API_KEY: 'k',
        K8S_LISTENER_NAMESPACES: 'a, b',
        POD_NAME: 'pod-1',
      },
      overrides: { 'probes.port': 9191, kubeconfig: undefined },
    });

  it('reads the file', async () => {
    const config = await layered();
    expect(config.reconcile.pollIntervalMs).toBe(5_000);
    expect(config.render.ingress.className).toBe('nginx');
  });

  it('lets the environment override the file', async () => {
    const config = await layered();
    expect(config.controlPlane).toMatchObject({ baseUrl: 'http://env.example.test', apiKey: 'k' });
    expect(config.namespaces).toEqual(['a', 'b']);
  });

  it('takes a key from the flags', async () => {
    expect((await layered()).probes.port).toBe(9191);
  });

  it('fills the defaults', async () => {
    const config = await layered();
    expect(config.controlPlane.timeoutMs).toBe(10_000);
    expect(config.reconcile.prune.keepDatabaseVolumes).toBe(true);
    expect(config.render.database.image).toBe('postgres:17-alpine');
  });

  // A deployment in the agent's namespace could run as its ServiceAccount (docs/design.md,
  // "Namespaces the agent serves").
  it("refuses an allow-list holding the agent's own namespace, naming it", async () => {
    const error = await loadAgentConfig({
      env: {
        K8S_LISTENER_LISTENER_ID: LISTENER,
        K8S_LISTENER_CONTROL_PLANE_URL: 'http://cp.example.test',
        K8S_LISTENER_NAMESPACES: 'apps,k8s-listener',
      },
      overrides: { agentNamespace: 'k8s-listener' },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).fields).toEqual(['namespaces']);
    expect((error as ConfigError).message).toContain("the agent's own namespace k8s-listener");
  });

  it('refuses an invalid configuration with a typed error naming every field, and no value', async () => {
    const error = await loadAgentConfig({
      env: {
        K8S_LISTENER_LISTENER_ID: 'not-a-uuid',
        K8S_LISTENER_API_KEY: 'sk-never-print',
        LOG_LEVEL: 'loud',
      },
      overrides: { 'reconcile.concurrency': 0 },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).fields).toEqual([
      'listenerId',
      'controlPlane.baseUrl',
      'namespaces',
      'log.level',
      'reconcile.concurrency',
    ]);
    expect((error as ConfigError).message).not.toContain('sk-never-print');
  });

  it('names a configuration file it cannot read', async () => {
    await expect(loadAgentConfig({ file: '/nonexistent/config.yaml', env: {} })).rejects.toThrow(
      'cannot read the configuration file /nonexistent/config.yaml',
    );
  });
});
