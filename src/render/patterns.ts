// The `*` patterns of the render configuration (pod label and annotation keys, Secrets,
// ServiceAccounts, CSI drivers), each list compiled once per configuration into a matcher that
// takes time linear in the name for each pattern: no RegExp is built from a pattern, so no name a
// tenant sends can make matching backtrack. Pure.

/** One pattern split at its stars: `*.cilium.io/*` is ['', '.cilium.io/', '']. */
interface CompiledPattern {
  readonly source: string;
  readonly parts: readonly string[];
  /** The characters a name needs at least: every part's. */
  readonly minLength: number;
}

export interface PatternList {
  /** The first pattern `name` matches, or undefined. */
  readonly find: (name: string) => string | undefined;
  /** Whether `name` matches any pattern. */
  readonly matches: (name: string) => boolean;
}

export interface PatternOptions {
  /** Compare without case (pod label and annotation keys: a webhook may read either spelling). */
  readonly ignoreCase?: boolean;
}

function compile(source: string, ignoreCase: boolean): CompiledPattern {
  const parts = (ignoreCase ? source.toLowerCase() : source).split('*');
  return { source, parts, minLength: parts.reduce((sum, part) => sum + part.length, 0) };
}

/**
 * Whether `name` matches: the first part is a prefix, the last a suffix, and each part between
 * is found, leftmost, after the one before. Taking the leftmost place of each middle part is never
 * wrong for `*` alone (a later place leaves less room for the rest), so there is no backtracking:
 * one `indexOf` per part, at most the name's length times the part's.
 */
function matchesCompiled(name: string, pattern: CompiledPattern): boolean {
  const { parts } = pattern;
  const first = parts[0] ?? '';
  if (parts.length === 1) return name === first;
  if (name.length < pattern.minLength) return false;
  const last = parts[parts.length - 1] ?? '';
  if (!name.startsWith(first) || !name.endsWith(last)) return false;
  const end = name.length - last.length;
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i] ?? '';
    const found = name.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

const compiled = {
  exact: new WeakMap<readonly string[], PatternList>(),
  ignoreCase: new WeakMap<readonly string[], PatternList>(),
};

/**
 * The matcher of a list of patterns, where `*` stands for any run of characters. Compiled on the
 * first call for a list and kept while the list (the parsed configuration's) lives.
 */
export function patternList(patterns: readonly string[], options: PatternOptions = {}): PatternList {
  const ignoreCase = options.ignoreCase === true;
  const cache = ignoreCase ? compiled.ignoreCase : compiled.exact;
  const held = cache.get(patterns);
  if (held) return held;
  const list = patterns.map((pattern) => compile(pattern, ignoreCase));
  const find = (name: string) => {
    const subject = ignoreCase ? name.toLowerCase() : name;
    return list.find((pattern) => matchesCompiled(subject, pattern))?.source;
  };
  const made: PatternList = { find, matches: (name) => find(name) !== undefined };
  cache.set(patterns, made);
  return made;
}
