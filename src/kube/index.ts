// The Kubernetes I/O layer: client, watcher, leader election and event recording.

export type { KubeObject } from '../objects/kubeObject.ts';
export * from './errors.ts';
export * from './events.ts';
export * from './kubeClient.ts';
export * from './leaderElection.ts';
export { ListGate } from './listGate.ts';
export { formatMicroTime, parseMicroTime } from './microTime.ts';
export * from './resources.ts';
export * from './watch.ts';
