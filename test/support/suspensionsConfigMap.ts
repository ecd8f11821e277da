// The suspensions ConfigMap as the API server returns it, for tests of what reads it.
import type { LiveKubeObject } from '../../src/kube/index.ts';
import { SUSPENSIONS_CONFIGMAP } from '../../src/reconcile/policy/suspensions.ts';

export function suspensionsConfigMap(
  data: Record<string, string>,
  annotations: Record<string, string> = {},
): LiveKubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: SUSPENSIONS_CONFIGMAP,
      namespace: 'agent',
      uid: 'u',
      resourceVersion: '7',
      labels: {},
      annotations,
    },
    data,
  } as LiveKubeObject;
}
