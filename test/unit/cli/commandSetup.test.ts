// A one-shot command sets up as the agent would — its configuration, credentials and bounds — but
// names itself to the control plane and the cluster, retries once within seconds, and opens the
// cluster's client only when asked, so that a kubeconfig that does not load is its own to report.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CommandSetup, commandSetup, controlPlaneClientOptions } from '../../../src/cli/commandSetup.ts';
import { loadConfigFromFlags } from '../../../src/cli/configFlags.ts';
import { ConfigError } from '../../../src/config/agentConfig.ts';
import { AGENT_VERSION } from '../../../src/version.ts';

const LISTENER_ID = '0b4f1c1e-0000-4000-8000-0000000000ff';
const flags = (controlPlane: string) => ({
  'listener-id': LISTENER_ID,
  'control-plane': controlPlane,
  namespaces: 'apps',
  kubeconfig: '/nonexistent/kubeconfig',
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A control plane that answers 503 to everything, recording each request's headers. */
async function unavailableControlPlane(): Promise<{ url: string; requests: IncomingHttpHeaders[] }> {
  const requests: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    requests.push(req.headers);
    res.writeHead(503, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

describe('controlPlaneClientOptions', () => {
  it('takes the agent configuration’s connection and bounds, and only the credentials that are set', async () => {
    const config = await loadConfigFromFlags(flags('http://cp.example'));
    expect(
      controlPlaneClientOptions({ ...config.controlPlane, apiKey: '', tenantId: 'tenant-1', maxPages: 7 }),
    ).toEqual({
      baseUrl: 'http://cp.example',
      timeoutMs: config.controlPlane.timeoutMs,
      maxResponseBytes: config.controlPlane.maxResponseBytes,
      maxPages: 7,
      maxListingBytes: config.controlPlane.maxListingBytes,
      tenantId: 'tenant-1',
    });
  });
});

describe('CommandSetup', () => {
  it('refuses an invalid configuration with a ConfigError, for the command to word', async () => {
    await expect(
      commandSetup({ ...flags('http://cp.example'), 'listener-id': 'nope' }, 'status'),
    ).rejects.toThrow(ConfigError);
  });

  it('names the command to the control plane, sends the agent’s key and tenant, and retries once', async () => {
    const controlPlane = await unavailableControlPlane();
    const config = await loadConfigFromFlags(flags(controlPlane.url));
    const setup = new CommandSetup(
      { ...config, controlPlane: { ...config.controlPlane, apiKey: 'key-1', tenantId: 'tenant-1' } },
      undefined,
      'status',
      {},
    );
    closers.push(() => setup.close());
    await expect(setup.controlPlane.getListener(LISTENER_ID)).rejects.toThrow(/503/);
    expect(controlPlane.requests).toHaveLength(2);
    expect(controlPlane.requests[0]).toMatchObject({
      'user-agent': `k8s-listener/${AGENT_VERSION} status`,
      'x-api-key': 'key-1',
      'x-tenant-id': 'tenant-1',
    });
  });

  it('is silent without --log-level, and logs at the configured level with it', async () => {
    const quiet = await commandSetup(flags('http://cp.example'), 'status');
    const warn = await commandSetup(flags('http://cp.example'), 'diff', { quietLogLevel: 'warn' });
    const asked = await commandSetup({ ...flags('http://cp.example'), 'log-level': 'debug' }, 'status');
    closers.push(
      () => quiet.close(),
      () => warn.close(),
      () => asked.close(),
    );
    expect([quiet.logger.level, warn.logger.level, asked.logger.level]).toEqual(['silent', 'warn', 'debug']);
  });

  it('opens the cluster client only when asked: a kubeconfig that does not load fails there, and closing still works', async () => {
    const setup = await commandSetup(flags('http://cp.example'), 'check', { kubeTimeoutMs: 10_000 });
    const opened = setup.kube();
    expect(setup.kube()).toBe(opened);
    await expect(opened).rejects.toThrow(/nonexistent/);
    await expect(setup.close()).resolves.toBeUndefined();
  });
});
