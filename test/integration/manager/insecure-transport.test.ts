// Transport security as an operator sees it: an agent whose kubeconfig turns certificate
// verification off (insecure-skip-tls-verify, against the test cluster) still works, and says so —
// a warning at start, and k8s_listener_insecure_transport at 1 on its /metrics.
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { startWorld, type World } from '../../support/agentHarness.ts';
import { type AgentProcess, startAgentProcess, writeAgentConfig } from '../../support/agentProcess.ts';
import { eventually } from '../../support/eventually.ts';
import { readSamples, sampleValue } from '../../support/metricSamples.ts';

interface Kubeconfig {
  clusters: { name: string; cluster: Record<string, unknown> }[];
}

let world: World;
let agent: AgentProcess;

beforeAll(async () => {
  world = await startWorld(inject('kubeconfigPath'), { namespaces: 1 });
  // The test cluster's kubeconfig, its certificate authority traded for insecure-skip-tls-verify
  // (the two together are refused, as client-go refuses them).
  const kubeconfig = parseYaml(await readFile(world.kubeconfigPath, 'utf8')) as Kubeconfig;
  for (const { cluster } of kubeconfig.clusters) {
    delete cluster['certificate-authority'];
    delete cluster['certificate-authority-data'];
    cluster['insecure-skip-tls-verify'] = true;
  }
  const configPath = await writeAgentConfig(world, { leaseName: `lease-${world.namespaces[0]}` });
  const insecure = join(dirname(configPath), 'insecure-kubeconfig.yaml');
  await writeFile(insecure, stringify(kubeconfig));
  // As an environment variable: the test setup's own K8S_LISTENER_KUBECONFIG would win over the file.
  agent = startAgentProcess(configPath, 'insecure-transport', {
    env: { K8S_LISTENER_KUBECONFIG: insecure },
  });
}, 60_000);
afterAll(async () => {
  agent?.child.kill('SIGTERM');
  await agent?.exited;
  await world?.close();
});

describe('an agent whose kubeconfig skips TLS verification', () => {
  it('warns at start and exposes k8s_listener_insecure_transport at 1, and works (it leads)', async () => {
    const warning = await eventually(
      'the warning logged',
      async () =>
        agent
          .output()
          .split('\n')
          .find((line) => line.includes('"reason":"skip-tls-verify"')),
      30_000,
    );
    expect(JSON.parse(warning)).toMatchObject({
      level: 'warn',
      target: 'kube-api',
      reason: 'skip-tls-verify',
      msg: "the API server's certificate is not verified (insecure-skip-tls-verify)",
    });
    const samples = await eventually(
      'the agent leading',
      async () => {
        const url = agent.probesUrl();
        if (!url) return undefined;
        const found = readSamples(await (await fetch(`${url}/metrics`)).text());
        return sampleValue(found, 'k8s_listener_leader') === 1 ? found : undefined;
      },
      30_000,
    );
    expect(
      sampleValue(samples, 'k8s_listener_insecure_transport', {
        target: 'kube-api',
        reason: 'skip-tls-verify',
      }),
    ).toBe(1);
    // The control plane is the emulator on loopback: plain http there is not a weakness.
    expect(samples.filter((s) => s.name === 'k8s_listener_insecure_transport')).toHaveLength(1);
  });
});
