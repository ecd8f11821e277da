// The narrow views of the Kubernetes client that reconcile code depends on, as controller-runtime
// splits its client into Reader and Writer: a test can give the reconciler and the inventory store
// a small in-memory cluster, or wrap the real client to count or fail a request.
import type { KubeClient } from '../kube/index.ts';

/** Reads of objects: one by reference, or a complete listing by kind, namespace and labels. */
export type KubeReader = Pick<KubeClient, 'get' | 'list'>;

/** Writes of objects: server-side apply, create, merge patch and delete. */
export type KubeWriter = Pick<KubeClient, 'apply' | 'create' | 'mergePatch' | 'delete'>;
