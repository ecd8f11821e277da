// The annotations the agent writes on its objects' own metadata, known from the configuration
// alone: its `k8s-listener.io/` ones, those the platform team has it write on a route (an ingress
// controller's, a Gateway implementation's), and the one KEDA reads on a ScaledObject. The watch
// cache keeps these of every object it holds (and no other: a controller's own annotations would
// cost memory and move for reasons of theirs), and the converged spec view covers them, so that a
// hand edit of one (removed, changed) is seen at the next look and repaired, as a label's is.
import { isAgentAnnotation } from '../objects/ownership.ts';
import { KEDA_HPA_EXCLUDED_LABELS } from './queueScaling.ts';
import type { RenderConfig } from './renderConfig.ts';

/**
 * The annotations the configuration has the agent write beside its own, each with one value on
 * every object that carries it: the watch cache holds one copy of each value.
 */
export function configuredAnnotations(config: RenderConfig): readonly string[] {
  return [
    ...new Set([
      ...Object.keys(config.ingress.annotations),
      ...Object.keys(config.gateway.annotations),
      KEDA_HPA_EXCLUDED_LABELS,
    ]),
  ];
}

/** Whether an annotation key is one the agent writes on some object's metadata under `config`. */
export function ownedAnnotations(config: RenderConfig): (key: string) => boolean {
  const configured = new Set(configuredAnnotations(config));
  return (key) => isAgentAnnotation(key) || configured.has(key);
}
