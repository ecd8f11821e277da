// The shape of one Kubernetes object as the renderer produces it and the kube layer applies it.

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    /** Set only on a write that is conditional on it (render never sets it). */
    resourceVersion?: string;
  };
  [key: string]: unknown;
}
