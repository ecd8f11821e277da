// How many entries each list or map of a deployment may hold, checked as the deployment is parsed
// and before any of its entries is: zod would otherwise parse every one (200,000 label keys took
// it 0.3 s) and report each one's issue. Render checks the same caps first again
// (render/inputBounds.ts), with the sums and sizes that need more than a count. At Kubernetes' own
// limits or lower (it has none on these counts: what a pod template holds is bounded by the
// object's size).
import { z } from 'zod';

export const INPUT_CAPS = {
  /**
   * Environment variables of one pod, every container's together: the deployment's secrets and
   * secret references (the application container's) and its sidecars' and init containers' env.
   * Checked by render; each list alone is capped at this as it is parsed.
   */
  podEnv: 4096,
  labels: 64,
  annotations: 128,
  imagePullSecrets: 16,
  volumes: 64,
  volumeMounts: 64,
  initContainers: 8,
  sidecars: 8,
  env: 4096,
  envFrom: 32,
  commandOrArgs: 256,
  secrets: 4096,
  secretReferences: 4096,
} as const;

/** The entries of a list or map: an array's length, an object's own keys; 0 for anything else. */
export function entryCount(value: unknown): number {
  if (Array.isArray(value)) return value.length;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length;
  return 0;
}

/** The refusal of a list or map past its cap, naming the cap (the field is the issue's path). */
export function capMessage(count: number, cap: number): string {
  return `holds ${count.toLocaleString('en-US')} entries; at most ${cap.toLocaleString('en-US')}`;
}

/** `schema`, refused without parsing a single entry when the value holds more than `cap`. */
export function capped<S extends z.ZodType>(schema: S, cap: number) {
  return z.preprocess((value, ctx) => {
    const count = entryCount(value);
    if (count <= cap) return value;
    ctx.issues.push({ code: 'custom', message: capMessage(count, cap), input: value });
    return z.NEVER;
  }, schema);
}
