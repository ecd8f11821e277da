// Pod Security, field by field: each setting a control-plane user could use to leave Pod
// Security `restricted` is refused by render, naming the field, on every kind of container the
// interface lets them set it on (init, sidecar; the main container through its mounts and the pod
// annotations) — and, where `baseline` forbids it too, at baseline.
import { describe, expect, it } from 'vitest';
import type { Container, ResourceSpec } from '../../../src/controlplane/schemas/index.ts';
import { renderDeployment } from '../../../src/render/index.ts';
import { checkPodSecurity } from '../../../src/render/podSecurity.ts';
import { config, withSpec } from '../../support/renderFixtures.ts';

type Kind = 'init' | 'sidecar' | 'main';

/** Where each kind of container sits in the rendered pod template (the minimal deployment's). */
const CONTAINER: Record<Kind, string> = {
  init: 'Deployment/hello spec.initContainers[0](init)',
  sidecar: 'Deployment/hello spec.containers[1](side)',
  main: 'Deployment/hello spec.containers[0](app)',
};
const NAME: Record<Kind, string> = { init: 'init', sidecar: 'side', main: 'app' };

/** A spec whose `kind` container has `settings` (security context and mounts); main takes mounts only. */
function specWith(kind: Kind, settings: Partial<Container>, pod: ResourceSpec = {}): ResourceSpec {
  const container = { name: NAME[kind], image: 'busybox:1.36', ...settings };
  const base: ResourceSpec = { volumes: [{ name: 'data', emptyDir: {} }], ...pod };
  if (kind === 'init') return { ...base, init_containers: [container] };
  if (kind === 'sidecar') return { ...base, sidecars: [container] };
  return { ...base, volume_mounts: settings.volumeMounts ?? [] };
}

interface Row {
  readonly field: string;
  readonly kinds: readonly Kind[];
  readonly spec: (kind: Kind) => ResourceSpec;
  /** The field named, after the container's path (or the pod template's, from `Deployment/hello `). */
  readonly path: (kind: Kind) => string;
  readonly baseline: boolean;
}

const context = (securityContext: Record<string, unknown>) => (kind: Kind) =>
  specWith(kind, { securityContext });
const at = (field: string) => (kind: Kind) => `${CONTAINER[kind]}.securityContext.${field}`;
const SET_BY_CONTEXT: readonly Kind[] = ['init', 'sidecar'];
const ANY: readonly Kind[] = ['init', 'sidecar', 'main'];

const ROWS: readonly Row[] = [
  {
    field: 'runAsUser 0',
    kinds: SET_BY_CONTEXT,
    spec: context({ runAsUser: 0 }),
    path: at('runAsUser'),
    baseline: false,
  },
  {
    field: 'runAsNonRoot false',
    kinds: SET_BY_CONTEXT,
    spec: context({ runAsNonRoot: false }),
    path: at('runAsNonRoot'),
    baseline: false,
  },
  {
    field: 'capabilities.drop []',
    kinds: SET_BY_CONTEXT,
    spec: context({ capabilities: { drop: [] } }),
    path: at('capabilities.drop'),
    baseline: false,
  },
  {
    field: 'capabilities.drop without ALL',
    kinds: SET_BY_CONTEXT,
    spec: context({ capabilities: { drop: ['NET_RAW'] } }),
    path: at('capabilities.drop'),
    baseline: false,
  },
  {
    field: 'allowPrivilegeEscalation null',
    kinds: SET_BY_CONTEXT,
    spec: context({ allowPrivilegeEscalation: null }),
    path: at('allowPrivilegeEscalation'),
    baseline: false,
  },
  {
    field: 'allowPrivilegeEscalation true',
    kinds: SET_BY_CONTEXT,
    spec: context({ allowPrivilegeEscalation: true }),
    path: at('allowPrivilegeEscalation'),
    baseline: false,
  },
  {
    field: 'seccompProfile Unconfined',
    kinds: SET_BY_CONTEXT,
    spec: context({ seccompProfile: { type: 'Unconfined' } }),
    path: at('seccompProfile.type'),
    baseline: true,
  },
  {
    field: 'appArmorProfile Unconfined',
    kinds: SET_BY_CONTEXT,
    spec: context({ appArmorProfile: { type: 'Unconfined' } }),
    path: at('appArmorProfile.type'),
    baseline: true,
  },
  {
    field: 'seLinuxOptions.type spc_t',
    kinds: SET_BY_CONTEXT,
    spec: context({ seLinuxOptions: { type: 'spc_t' } }),
    path: at('seLinuxOptions.type'),
    baseline: true,
  },
  {
    field: 'procMount Unmasked',
    kinds: SET_BY_CONTEXT,
    spec: context({ procMount: 'Unmasked' }),
    path: at('procMount'),
    baseline: true,
  },
  {
    field: 'windowsOptions.hostProcess',
    kinds: SET_BY_CONTEXT,
    spec: context({ windowsOptions: { hostProcess: true } }),
    path: at('windowsOptions.hostProcess'),
    baseline: true,
  },
  {
    field: 'a Bidirectional mount',
    kinds: ANY,
    spec: (kind) =>
      specWith(kind, {
        volumeMounts: [{ name: 'data', mountPath: '/data', mountPropagation: 'Bidirectional' }],
      }),
    path: (kind) => `${CONTAINER[kind]}.volumeMounts[0].mountPropagation`,
    baseline: true,
  },
  {
    field: 'the pod annotation container.apparmor.security.beta.kubernetes.io/<c>: unconfined',
    kinds: ANY,
    spec: (kind) =>
      specWith(
        kind,
        {},
        { annotations: { [`container.apparmor.security.beta.kubernetes.io/${NAME[kind]}`]: 'unconfined' } },
      ),
    path: (kind) =>
      `Deployment/hello metadata.annotations[container.apparmor.security.beta.kubernetes.io/${NAME[kind]}]`,
    baseline: true,
  },
  {
    field: 'an nfs volume mounted',
    kinds: ANY,
    spec: (kind) =>
      specWith(
        kind,
        { volumeMounts: [{ name: 'data', mountPath: '/data' }] },
        { volumes: [{ name: 'data', nfs: { server: 'files.example.test', path: '/exports' } }] },
      ),
    path: () => 'Deployment/hello spec.volumes[0].nfs',
    baseline: false,
  },
];

const CASES = ROWS.flatMap((row) => row.kinds.map((kind) => [row.field, kind, row] as const));

/**
 * The fields render names when it refuses, at the level. The platform allows the AppArmor
 * annotations (none is by default), so that Pod Security is what judges their values.
 */
function refused(spec: ResourceSpec, podSecurity: 'restricted' | 'baseline'): string[] {
  const podAnnotations = { allow: ['container.apparmor.security.beta.kubernetes.io/*'] };
  const result = renderDeployment(withSpec(spec), config({ policy: { podSecurity, podAnnotations } }));
  return result.ok ? [] : result.error.problems.map((p) => `${p.path}: ${p.message}`);
}

describe('Pod Security at render time, field by field', () => {
  it.each(CASES)('refuses %s on the %s container, naming the field', (_field, kind, row) => {
    const spec = row.spec(kind);
    const named = (level: 'restricted' | 'baseline') =>
      refused(spec, level).filter(
        (p) => p.startsWith(`${row.path(kind)}: `) && p.endsWith(`(Pod Security ${level})`),
      );
    expect(named('restricted'), refused(spec, 'restricted').join('\n')).not.toEqual([]);
    expect(named('baseline').length > 0, `refused at baseline: ${named('baseline').join('; ')}`).toBe(
      row.baseline,
    );
  });

  it('has a row for each container kind a field can be set on: 2 per security context field, 3 per pod field', () => {
    expect(CASES).toHaveLength(11 * 2 + 3 * 3);
  });

  // Pod-level security context fields are not part of the interface: render never writes them from
  // input, and the check names them in a pod template that has them all the same.
  it('names an unsafe sysctl of a pod template (at every level), which the interface cannot ask for', () => {
    const result = renderDeployment(
      withSpec({ securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }] } } as ResourceSpec),
      config(),
    );
    if (!result.ok) throw result.error;
    expect(JSON.stringify(result.value.objects)).not.toContain('sysctls');
    const workload = result.value.objects.find((o) => o.kind === 'Deployment');
    if (!workload) throw new Error('no Deployment rendered');
    const template = (workload.spec as { template: { spec: { securityContext: Record<string, unknown> } } })
      .template;
    template.spec.securityContext.sysctls = [
      { name: 'net.ipv4.ip_local_port_range', value: '1024 65535' },
      { name: 'kernel.msgmax', value: '1' },
    ];
    for (const level of ['restricted', 'baseline'] as const)
      expect(checkPodSecurity(workload, level)).toEqual([
        {
          path: 'Deployment/hello spec.securityContext.sysctls[1].name',
          message: `sysctl kernel.msgmax is not a safe sysctl (Pod Security ${level})`,
        },
      ]);
  });
});
