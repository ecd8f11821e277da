// An RBAC Role's rules and the agent's required access, both as `group/resource verb` lines, so a
// test can hold one to the other in both directions.
import type { RequiredAccess } from '../../src/cli/requiredAccess.ts';

export interface RoleRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** Each verb a Role's rules grant on each resource, sorted and without repeats. */
export function grantedLines(rules: readonly RoleRule[]): string[] {
  const lines = rules.flatMap((rule) =>
    rule.apiGroups.flatMap((group) =>
      rule.resources.flatMap((resource) =>
        rule.verbs.map((verb) => `${group}/${resource}${named(rule.resourceNames)} ${verb}`),
      ),
    ),
  );
  return [...new Set(lines)].sort();
}

/** Each verb of the required access on each resource, sorted and without repeats. */
export function requiredLines(access: readonly RequiredAccess[]): string[] {
  const lines = access.flatMap((a) =>
    a.verbs.map((verb) => `${a.group}/${a.resource}${a.name === undefined ? '' : `/${a.name}`} ${verb}`),
  );
  return [...new Set(lines)].sort();
}

function named(names: readonly string[] | undefined): string {
  if (names === undefined || names.length === 0) return '';
  if (names.length > 1) throw new Error(`a rule naming several objects: ${names.join(', ')}`);
  return `/${names[0]}`;
}
