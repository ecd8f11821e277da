// Which cluster the integration suite runs against, and the one line that says why: a pure
// function of the environment and of what the Docker probe found, so every branch is testable.

export type Env = Readonly<Record<string, string | undefined>>;

/** Where a Docker engine may listen, in the order the Docker CLI and testcontainers look. */
export type DockerEndpoint =
  | { readonly kind: 'unix'; readonly socketPath: string; readonly uri: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number; readonly uri: string };

/**
 * What the probe found: an engine, and whether the k3s image is in its local store (no registry
 * it could pull from is reachable everywhere: podman's Docker-compatible socket answers on
 * machines that have only their own images).
 */
export type DockerProbe =
  | {
      readonly answered: true;
      readonly endpoint: string;
      readonly k3sImage: string;
      readonly k3sImagePresent: boolean;
    }
  | { readonly answered: false; readonly why: string };

/** The k3s image the suite runs, unless K8S_LISTENER_K3S_IMAGE names another. */
export const DEFAULT_K3S_IMAGE = 'rancher/k3s:v1.34.4-k3s1';

export function k3sImageOf(env: Env): string {
  return env.K8S_LISTENER_K3S_IMAGE ?? DEFAULT_K3S_IMAGE;
}

export type ClusterChoice =
  | { readonly kind: 'existing'; readonly kubeconfigPath: string; readonly reason: string }
  | { readonly kind: 'k3s'; readonly reason: string }
  | { readonly kind: 'local'; readonly reason: string };

/** The suite's switch to skip Docker even where one answers. */
export function dockerDisabled(env: Env): boolean {
  return env.K8S_LISTENER_NO_DOCKER === '1';
}

/** An explicit DOCKER_HOST is the only candidate (as for the Docker CLI); else the usual sockets. */
export function dockerEndpoints(env: Env, home: string, uid: number): DockerEndpoint[] | string {
  const host = env.DOCKER_HOST;
  if (host) {
    if (host.startsWith('unix://')) {
      return [{ kind: 'unix', socketPath: host.slice('unix://'.length), uri: host }];
    }
    const tcp = /^tcp:\/\/([^:/]+):(\d+)\/?$/.exec(host);
    if (tcp?.[1] && tcp[2]) return [{ kind: 'tcp', host: tcp[1], port: Number(tcp[2]), uri: host }];
    return `DOCKER_HOST=${host} is neither unix:// nor tcp://host:port`;
  }
  const sockets = [
    '/var/run/docker.sock',
    ...(env.XDG_RUNTIME_DIR ? [`${env.XDG_RUNTIME_DIR}/docker.sock`] : []),
    `${home}/.docker/run/docker.sock`,
    `${home}/.docker/desktop/docker.sock`,
    `/run/user/${uid}/docker.sock`,
  ];
  return [...new Set(sockets)].map((socketPath) => ({
    kind: 'unix',
    socketPath,
    uri: `unix://${socketPath}`,
  }));
}

export function chooseCluster(env: Env, docker: DockerProbe): ClusterChoice {
  const explicit = env.K8S_LISTENER_TEST_KUBECONFIG;
  if (explicit) {
    return {
      kind: 'existing',
      kubeconfigPath: explicit,
      reason: `cluster: the existing cluster in ${explicit} (K8S_LISTENER_TEST_KUBECONFIG is set)`,
    };
  }
  if (env.K8S_LISTENER_USE_KUBECONFIG === '1' && env.KUBECONFIG) {
    return {
      kind: 'existing',
      kubeconfigPath: env.KUBECONFIG,
      reason: `cluster: the existing cluster in ${env.KUBECONFIG} (K8S_LISTENER_USE_KUBECONFIG=1 and KUBECONFIG)`,
    };
  }
  if (dockerDisabled(env)) {
    return {
      kind: 'local',
      reason: 'cluster: the local control plane built by the project (K8S_LISTENER_NO_DOCKER=1)',
    };
  }
  if (docker.answered && docker.k3sImagePresent) {
    return {
      kind: 'k3s',
      reason: `cluster: k3s in a container through testcontainers (a Docker engine answered at ${docker.endpoint})`,
    };
  }
  if (docker.answered) {
    return {
      kind: 'local',
      reason: `cluster: the local control plane built by the project (a Docker engine answered at ${docker.endpoint}, but the image ${docker.k3sImage} is not in its local store)`,
    };
  }
  return {
    kind: 'local',
    reason: `cluster: the local control plane built by the project (no Docker engine: ${docker.why})`,
  };
}
