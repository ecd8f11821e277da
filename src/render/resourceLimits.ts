// A container's memory and ephemeral storage are positive and bounded: what a sidecar or init
// container asks for (its requests and limits) is a quantity above zero and no larger than the
// platform's maxima (`render.limits.maxMemoryMb`, `maxEphemeralStorageMb`). A `null` or `"0"`
// limit is no limit to the kubelet, and `"1Ei"` none in practice: either would let one pod take a
// node's memory or disk from every other deployment on it. Pure.
import type { Container } from '../controlplane/schemas/index.ts';
import { inputExcerpt } from '../report/terminalText.ts';
import type { RenderProblem } from './errors.ts';
import { quantityValue } from './quantities.ts';
import type { RenderConfig } from './renderConfig.ts';

const MiB = 2 ** 20;

/** The bounded resources, each with its platform maximum in MiB and the setting that gives it. */
function bounded(limits: RenderConfig['limits']): Record<string, { maxMb: number; setting: string }> {
  return {
    memory: { maxMb: limits.maxMemoryMb, setting: 'render.limits.maxMemoryMb' },
    'ephemeral-storage': {
      maxMb: limits.maxEphemeralStorageMb,
      setting: 'render.limits.maxEphemeralStorageMb',
    },
  };
}

/** Every request and limit of the container's `resources` that is not a quantity, or not positive and bounded. */
export function containerResourceProblems(
  resources: Container['resources'],
  path: string,
  limits: RenderConfig['limits'],
): RenderProblem[] {
  const problems: RenderProblem[] = [];
  const maxima = bounded(limits);
  for (const kind of ['requests', 'limits'] as const) {
    for (const [name, given] of Object.entries(resources?.[kind] ?? {})) {
      const at = `${path}.resources.${kind}.${inputExcerpt(name, { escape: false })}`;
      const value = quantityValue(given);
      const shown = given === null ? 'null' : `"${inputExcerpt(String(given))}"`;
      const max = maxima[name];
      if (value === undefined) problems.push({ path: at, message: `must be a quantity; got ${shown}` });
      else if (value < 0) problems.push({ path: at, message: `must not be negative; got ${shown}` });
      else if (max && (value <= 0 || value > max.maxMb * MiB))
        problems.push({
          path: at,
          message: `must be a positive quantity of at most ${max.maxMb}Mi (${max.setting}); got ${shown}`,
        });
    }
  }
  return problems;
}
