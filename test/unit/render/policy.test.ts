// The render policy holds only settings that something a deployment can ask for reaches: host
// namespaces and host ports cannot be expressed through the interface, so they have no setting.
import { describe, expect, it } from 'vitest';
import { RenderConfig, renderFromJson } from '../../../src/render/index.ts';
import { listener, minimalDeployment } from '../../support/renderFixtures.ts';

/** A sidecar and an init container that ask for every host-level setting a pod spec knows. */
function askingForTheHost(): unknown {
  const deployment = structuredClone(minimalDeployment) as unknown as {
    source_config: { resource_spec?: unknown };
  };
  const container = (name: string) => ({
    name,
    image: 'busybox:1.36',
    ports: [{ containerPort: 80, hostPort: 80, hostIP: '0.0.0.0' }],
    hostNetwork: true,
    hostPID: true,
    hostIPC: true,
    securityContext: { runAsUser: 1000 },
  });
  deployment.source_config.resource_spec = {
    hostNetwork: true,
    hostPID: true,
    hostIPC: true,
    hostUsers: true,
    sidecars: [container('side')],
    init_containers: [container('init')],
  };
  return deployment;
}

describe('render policy', () => {
  it.each(['forbidHostNamespaces', 'forbidHostPorts'])('has no %s setting (it could never apply)', (key) => {
    const parsed = RenderConfig.safeParse({ policy: { [key]: false } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain(key);
  });

  it('renders no host namespace, host port or host network from a spec that asks for them', () => {
    const result = renderFromJson({ deployment: askingForTheHost(), listener }, RenderConfig.parse({}));
    if (!result.ok) throw result.error;
    const text = JSON.stringify(result.value.objects);
    expect(text).toContain('"name":"side"');
    expect(text).toContain('"name":"init"');
    for (const field of ['hostNetwork', 'hostPID', 'hostIPC', 'hostUsers', 'hostPort', 'hostIP', 'hostPath'])
      expect(text).not.toContain(field);
  });
});
