// The Kubernetes Pod Security Standards (baseline, restricted; as of v1.34), checked on every pod
// template render produces: what a deployment asks for through its free-form fields (security
// contexts, volumes, mounts, annotations) is refused with the field named, never overridden in
// silence, and nothing reaches the API server that its Pod Security admission would refuse.
import type { KubeObject } from '../objects/kubeObject.ts';
import { formatLocalRef } from '../objects/objectRef.ts';
import { inputExcerpt } from '../report/terminalText.ts';
import type { RenderProblem } from './errors.ts';

export type PodSecurityLevel = 'baseline' | 'restricted';

const BASELINE_CAPABILITIES = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const SELINUX_TYPES = new Set([
  '',
  'container_t',
  'container_init_t',
  'container_kvm_t',
  'container_engine_t',
]);
const RESTRICTED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);
const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';
const SECCOMP_ANNOTATIONS = [
  'seccomp.security.alpha.kubernetes.io/pod',
  'container.seccomp.security.alpha.kubernetes.io/',
];

type Json = Record<string, unknown>;
const record = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The pod template of a workload or PodTemplate object, if it has one. */
export function podTemplateOf(object: KubeObject): { metadata: Json; spec: Json } | undefined {
  const template =
    object.kind === 'PodTemplate' ? record(object.template) : record(record(object.spec).template);
  if (Object.keys(template).length === 0) return undefined;
  return { metadata: record(template.metadata), spec: record(template.spec) };
}

/** Every violation of the level by the object's pod template, each with the field it is in. */
export function checkPodSecurity(object: KubeObject, level: PodSecurityLevel): RenderProblem[] {
  const template = podTemplateOf(object);
  if (!template) return [];
  const where = formatLocalRef(object);
  const problems: RenderProblem[] = [];
  const add = (path: string, message: string) =>
    problems.push({ path: `${where} ${path}`, message: `${message} (Pod Security ${level})` });
  const restricted = level === 'restricted';
  const { spec, metadata } = template;
  const pod = record(spec.securityContext);

  // Host namespaces, and the pod's own security context.
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const)
    if (spec[field] === true) add(`spec.${field}`, 'host namespaces are not allowed');
  checkCommonContext(pod, 'spec.securityContext', add);
  for (const [i, sysctl] of list(pod.sysctls).entries()) {
    const name = String(record(sysctl).name ?? '');
    if (!SAFE_SYSCTLS.has(name))
      add(`spec.securityContext.sysctls[${i}].name`, `sysctl ${inputExcerpt(name)} is not a safe sysctl`);
  }
  if (restricted && pod.runAsUser === 0)
    add('spec.securityContext.runAsUser', 'running as root (uid 0) is not allowed');

  // Annotations that set AppArmor or seccomp the old way.
  for (const [key, value] of Object.entries(record(metadata.annotations))) {
    const text = String(value);
    if (key.startsWith(APPARMOR_ANNOTATION) && text !== 'runtime/default' && !text.startsWith('localhost/'))
      add(`metadata.annotations[${key}]`, `AppArmor profile ${inputExcerpt(text)} is not allowed`);
    if (SECCOMP_ANNOTATIONS.some((prefix) => key.startsWith(prefix)) && text === 'unconfined')
      add(`metadata.annotations[${key}]`, 'an unconfined seccomp profile is not allowed');
  }

  // Volumes.
  for (const [i, volume] of list(spec.volumes).entries()) {
    const fields = Object.keys(record(volume)).filter((key) => key !== 'name');
    for (const type of fields) {
      if (type === 'hostPath') add(`spec.volumes[${i}].hostPath`, 'hostPath volumes are not allowed');
      else if (restricted && !RESTRICTED_VOLUMES.has(type))
        add(`spec.volumes[${i}].${type}`, `${type} volumes are not allowed`);
    }
  }

  // Every container of every kind.
  const podNonRoot = pod.runAsNonRoot === true;
  const podSeccomp = allowedSeccomp(record(pod.seccompProfile).type);
  for (const kind of ['initContainers', 'containers', 'ephemeralContainers'] as const) {
    for (const [i, value] of list(spec[kind]).entries()) {
      const container = record(value);
      const path = `spec.${kind}[${i}](${String(container.name ?? i)})`;
      const context = record(container.securityContext);
      const at = `${path}.securityContext`;
      checkCommonContext(context, at, add);
      if (context.privileged === true) add(`${at}.privileged`, 'privileged containers are not allowed');
      for (const [j, port] of list(container.ports).entries()) {
        const hostPort = record(port).hostPort;
        if (hostPort !== undefined && hostPort !== 0)
          add(`${path}.ports[${j}].hostPort`, 'host ports are not allowed');
      }
      if (context.procMount !== undefined && context.procMount !== 'Default')
        add(`${at}.procMount`, `procMount ${inputExcerpt(String(context.procMount))} is not allowed`);
      for (const [j, mount] of list(container.volumeMounts).entries()) {
        // Bidirectional propagation needs a privileged container.
        if (record(mount).mountPropagation === 'Bidirectional')
          add(
            `${path}.volumeMounts[${j}].mountPropagation`,
            'Bidirectional mount propagation is not allowed',
          );
      }
      const capabilities = record(context.capabilities);
      const added = list(capabilities.add).map(String);
      for (const capability of added) {
        const allowed = restricted
          ? capability === 'NET_BIND_SERVICE'
          : BASELINE_CAPABILITIES.has(capability);
        if (!allowed) add(`${at}.capabilities.add`, `capability ${inputExcerpt(capability)} is not allowed`);
      }
      if (!restricted) continue;
      if (!list(capabilities.drop).map(String).includes('ALL'))
        add(`${at}.capabilities.drop`, 'must drop ALL capabilities');
      if (context.allowPrivilegeEscalation !== false) add(`${at}.allowPrivilegeEscalation`, 'must be false');
      if (context.runAsNonRoot === false || (!podNonRoot && context.runAsNonRoot !== true))
        add(`${at}.runAsNonRoot`, 'must be true');
      if (context.runAsUser === 0) add(`${at}.runAsUser`, 'running as root (uid 0) is not allowed');
      const seccomp = record(context.seccompProfile).type;
      if (seccomp !== undefined ? !allowedSeccomp(seccomp) : !podSeccomp)
        add(`${at}.seccompProfile.type`, 'must be RuntimeDefault or Localhost');
    }
  }
  return problems;
}

function allowedSeccomp(type: unknown): boolean {
  return type === 'RuntimeDefault' || type === 'Localhost';
}

/** The controls a pod's and a container's security context share. */
function checkCommonContext(context: Json, at: string, add: (path: string, message: string) => void): void {
  if (record(context.windowsOptions).hostProcess === true)
    add(`${at}.windowsOptions.hostProcess`, 'host processes are not allowed');
  const selinux = record(context.seLinuxOptions);
  if (selinux.type !== undefined && !SELINUX_TYPES.has(String(selinux.type)))
    add(`${at}.seLinuxOptions.type`, `SELinux type ${inputExcerpt(String(selinux.type))} is not allowed`);
  for (const field of ['user', 'role'] as const)
    if (selinux[field] !== undefined && selinux[field] !== '')
      add(`${at}.seLinuxOptions.${field}`, `a custom SELinux ${field} is not allowed`);
  const seccomp = record(context.seccompProfile).type;
  if (seccomp !== undefined && seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost')
    add(`${at}.seccompProfile.type`, `seccomp profile ${inputExcerpt(String(seccomp))} is not allowed`);
  const apparmor = record(context.appArmorProfile).type;
  if (apparmor !== undefined && apparmor !== 'RuntimeDefault' && apparmor !== 'Localhost')
    add(`${at}.appArmorProfile.type`, `AppArmor profile ${inputExcerpt(String(apparmor))} is not allowed`);
}
