// The configuration's `*` patterns: the same answers as the regular expression each used to become,
// in time linear in the name whatever the name, and each list compiled once.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { patternList } from '../../../src/render/patterns.ts';

/** The meaning the patterns always had, as a regular expression: fine for the short names here. */
const reference = (name: string, pattern: string) =>
  new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`, 's').test(name);
const escapeRegExp = (part: string) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

describe('patternList', () => {
  it.each<[string, string, boolean]>([
    ['cilium.io/x', '*.cilium.io/*', false],
    ['policy.cilium.io/x', '*.cilium.io/*', true],
    ['a.cilium.io/', '*.cilium.io/*', true],
    ['vault.hashicorp.com/agent-inject', '*agent-inject*', true],
    ['shared-db', 'shared-*', true],
    ['shared', 'shared-*', false],
    ['aba', 'ab*ba', false],
    ['abba', 'ab*ba', true],
    ['exact', 'exact', true],
    ['exactly', 'exact', false],
    ['', '*', true],
    ['anything/at.all', '*', true],
  ])('%s against %s: %s', (name, pattern, expected) => {
    expect(patternList([pattern]).matches(name)).toBe(expected);
    expect(reference(name, pattern)).toBe(expected);
  });

  it('answers as the regular expression does, for any name and pattern', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', '.', '/', '*'), maxLength: 12 });
    fc.assert(
      fc.property(text, text, (name, pattern) => {
        const plainName = name.replaceAll('*', 'c');
        expect(patternList([pattern]).matches(plainName)).toBe(reference(plainName, pattern));
      }),
      { numRuns: 2_000 },
    );
  });

  it('ignores case when asked, and returns the pattern that matched', () => {
    const deny = ['istio.io/*', '*.Cilium.io/*'];
    expect(patternList(deny, { ignoreCase: true }).find('Policy.CILIUM.io/x')).toBe('*.Cilium.io/*');
    expect(patternList(deny).find('Policy.CILIUM.io/x')).toBeUndefined();
  });

  it('compiles a list once', () => {
    const list = ['a*', 'b*'];
    expect(patternList(list)).toBe(patternList(list));
    expect(patternList(list, { ignoreCase: true })).not.toBe(patternList(list));
  });

  it('takes linear time on the key that made the regular expression backtrack', () => {
    // 430 KB: the regular expression took 16 s on it; 20,000 repeats (220 KB) took 2 s.
    // (`*` is any run of characters, a newline's too: such a key is refused as invalid first.)
    const key = `${'.cilium.io/'.repeat(40_000)}\n`;
    const near = `${'.cilium.io'.repeat(40_000)}\n`;
    const deny = patternList(['*.cilium.io/*', '*.istio.io/*', '*agent-inject*']);
    const started = performance.now();
    expect(deny.find(key)).toBe('*.cilium.io/*');
    expect(deny.find(near)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(50);
  });
});
