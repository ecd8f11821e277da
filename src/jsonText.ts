// JSON from outside: text that may not be JSON (error bodies, stored annotations), the value or
// undefined, for a schema to judge next; and how deep a parsed value nests, judged without
// recursion before anything that recurses (a digest, a deep comparison, a clone) walks it.

export function parseJsonOrUndefined(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The most objects and arrays nested in what the agent reads from the control plane, and what the
 * emulator takes. A deployment nests 9 deep at most (the interface's own fields and Kubernetes
 * volume sources inside them); JSON.stringify overflows the stack near 4,400 levels, a deep
 * comparison near 1,000, so every walk of a value within this bound has room to spare.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The keys leading to the first object or array nested deeper than `maxDepth` (the value itself,
 * when it is one, is level 1), or undefined when none is. Iterative: JSON.parse builds values of
 * any depth without recursing, and this must judge them the same way.
 */
export function pathPastDepth(value: unknown, maxDepth: number): (string | number)[] | undefined {
  if (!nestsDeeperThan(value, maxDepth)) return undefined;
  // Rare: walked again, keeping each value's parent, to name where.
  interface Step {
    readonly value: unknown;
    readonly depth: number;
    readonly key: string | number | undefined;
    readonly parent: Step | undefined;
  }
  const stack: Step[] = [{ value, depth: 0, key: undefined, parent: undefined }];
  for (let step = stack.pop(); step !== undefined; step = stack.pop()) {
    const current: Step = step;
    if (typeof current.value !== 'object' || current.value === null) continue;
    if (current.depth + 1 > maxDepth) {
      const path: (string | number)[] = [];
      for (let at: Step | undefined = current; at?.key !== undefined; at = at.parent) path.push(at.key);
      return path.reverse();
    }
    const entries: [string | number, unknown][] = Array.isArray(current.value)
      ? current.value.map((item, index) => [index, item])
      : Object.entries(current.value);
    // Reversed onto the stack, so that the first key is walked first.
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i] as [string | number, unknown];
      stack.push({ value: child, depth: current.depth + 1, key, parent: current });
    }
  }
  return undefined;
}

/**
 * Whether an object or array in `value` is nested deeper than `maxDepth`; iterative, as above.
 * Every listed item is judged each poll: for-in and parallel stacks allocate nothing per value
 * (about 6 µs for the largest deployment, a quarter of a JSON.stringify of it).
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const values: object[] = [value];
  const depths: number[] = [1];
  for (let current = values.pop(); current !== undefined; current = values.pop()) {
    const depth = depths.pop() ?? 0;
    if (depth > maxDepth) return true;
    if (Array.isArray(current)) {
      for (const child of current as unknown[]) {
        if (typeof child !== 'object' || child === null) continue;
        values.push(child);
        depths.push(depth + 1);
      }
    } else {
      for (const key in current) {
        const child: unknown = (current as Record<string, unknown>)[key];
        if (typeof child !== 'object' || child === null) continue;
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}
