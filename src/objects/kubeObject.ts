// The shape of one Kubernetes object as the renderer produces it and the kube layer applies it.

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
  [key: string]: unknown;
}
