// What travels without TLS, or with TLS that verifies nothing: said at start (a warning each) and
// kept as a metric, since an operator may have chosen it but should never be unaware of it. Pure.

export type TransportWeakness = {
  readonly target: 'kube-api' | 'control-plane';
  readonly reason: 'http' | 'skip-tls-verify';
  readonly message: string;
};

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

export function transportWeaknesses(connections: {
  readonly controlPlaneUrl: string;
  readonly kubeServer: string;
  readonly kubeVerifiesTls: boolean;
}): TransportWeakness[] {
  const found: TransportWeakness[] = [];
  const controlPlane = new URL(connections.controlPlaneUrl);
  if (controlPlane.protocol === 'http:' && !LOOPBACK.test(controlPlane.hostname))
    found.push({
      target: 'control-plane',
      reason: 'http',
      message: 'the control plane is reached over plain http: the API key travels unencrypted',
    });
  if (new URL(connections.kubeServer).protocol === 'http:')
    found.push({
      target: 'kube-api',
      reason: 'http',
      message:
        'the API server is reached over plain http (insecure-skip-tls-verify accepted it): credentials travel unencrypted',
    });
  else if (!connections.kubeVerifiesTls)
    found.push({
      target: 'kube-api',
      reason: 'skip-tls-verify',
      message: "the API server's certificate is not verified (insecure-skip-tls-verify)",
    });
  return found;
}
