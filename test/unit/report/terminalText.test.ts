import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  inputExcerpt,
  terminalJson,
  terminalLine,
  terminalText,
  terminalYaml,
} from '../../../src/report/terminalText.ts';
import {
  CONTROL_CHARACTERS,
  HOSTILE_STRINGS,
  INVISIBLE_CHARACTERS,
  rawControls,
} from '../../support/terminalControls.ts';

describe('terminalText', () => {
  it.each(CONTROL_CHARACTERS.map((c) => [c.codePointAt(0)?.toString(16).padStart(4, '0') ?? '', c]))(
    'U+%s shows as an escape, on one line',
    (_code, char) => {
      const printed = terminalText(`a${char}b`);
      expect(rawControls(printed)).toEqual([]);
      expect(printed).not.toContain('\n');
      expect(printed).toMatch(/^a\\(x[0-9a-f]{2}|u[0-9a-f]{4}|n|r|t)b$/);
    },
  );

  it.each(INVISIBLE_CHARACTERS.map((c) => [c.codePointAt(0)?.toString(16).padStart(4, '0') ?? '', c]))(
    'invisible U+%s shows as an escape',
    (_code, char) => {
      const printed = terminalText(`billing-api${char}`);
      expect(rawControls(printed)).toEqual([]);
      expect(printed).toMatch(/^billing-api(\\x[0-9a-f]{2}|(\\u[0-9a-f]{4}){1,2})$/);
    },
  );

  it.each<[string, string]>([
    ['billing-api\u200b', 'billing-api\\u200b'],
    ['billing\u2060-api', 'billing\\u2060-api'],
    ['\u3164\ufeff\u00ad', '\\u3164\\ufeff\\xad'],
    ['tag\u{e0041}', 'tag\\udb40\\udc41'],
    ['\x1b[1A\x1b[2K', '\\x1b[1A\\x1b[2K'],
    ['\x1b]8;;http://evil\x07', '\\x1b]8;;http://evil\\x07'],
    ['\x9b2J', '\\x9b2J'],
    ['a\nb\tc\rd', 'a\\nb\\tc\\rd'],
    ['\u202eabc\u2066', '\\u202eabc\\u2066'],
    ['\u2028', '\\u2028'],
    ['\x7f\x00', '\\x7f\\x00'],
  ])('%j prints as %s', (text, printed) => {
    expect(terminalText(text)).toBe(printed);
  });

  it('leaves printable text alone: accents, CJK, emoji, a backslash, the check marks', () => {
    const text = 'Agent Platform (EU) — production 日本 🚀 C:\\path ✓ ✗ ¡\u00a0';
    expect(terminalText(text)).toBe(text);
  });

  it('terminalLine is one escaped line and its newline', () => {
    expect(terminalLine('a\nb')).toBe('a\\nb\n');
  });
});

describe('inputExcerpt', () => {
  it('quotes at most 100 characters of a tenant string, escaped, and says how many more there were', () => {
    const key = `${'.cilium.io/'.repeat(40_000)}\n`;
    const excerpt = inputExcerpt(key);
    expect(excerpt).toBe(`${key.slice(0, 100)}…(439,901 more characters)`);
    expect(inputExcerpt(`\u200b${'a'.repeat(200)}`)).toMatch(/^\\u200ba{99}…\(101 more characters\)$/);
    expect(inputExcerpt('short\u2060')).toBe('short\\u2060');
  });

  it('leaves a field path unescaped (its printer escapes it) but cut all the same', () => {
    expect(inputExcerpt(`k\x1b${'x'.repeat(200)}`, { escape: false })).toBe(
      `k\x1b${'x'.repeat(98)}…(102 more characters)`,
    );
  });

  it('never cuts a surrogate pair in half', () => {
    expect(inputExcerpt(`${'a'.repeat(99)}🚀🚀`)).toBe(`${'a'.repeat(99)}…(4 more characters)`);
  });
});

describe('terminalJson', () => {
  const value = Object.fromEntries(HOSTILE_STRINGS.map((s, i) => [`${s}${i}`, { s, list: [s] }]));

  it('parses back to the same value, with no raw control character', () => {
    const json = terminalJson(value, 2);
    expect(rawControls(json)).toEqual([]);
    expect(JSON.parse(json)).toEqual(value);
  });

  it('escapes the invisible characters JSON.stringify leaves raw, parsed back the same', () => {
    const value = ['billing-api\u200b', '\u3164', 'tag\u{e0041}'];
    expect(rawControls(JSON.stringify(value))).toEqual(['U+200B', 'U+3164', 'U+E0041']);
    const json = terminalJson(value);
    expect(json).toBe('["billing-api\\u200b","\\u3164","tag\\udb40\\udc41"]');
    expect(JSON.parse(json)).toEqual(value);
  });

  it('escapes what JSON.stringify leaves raw (DEL, C1, bidi, U+2028)', () => {
    // The control: JSON.stringify alone prints them raw.
    expect(rawControls(JSON.stringify(['\x9b', '\u202e']))).toEqual(['U+009B', 'U+202E']);
    expect(terminalJson(['\x9b', '\u202e', '\x7f', '\u2028'])).toBe(
      '["\\u009b","\\u202e","\\u007f","\\u2028"]',
    );
  });
});

describe('terminalYaml', () => {
  const value = Object.fromEntries(HOSTILE_STRINGS.map((s, i) => [`${s}${i}`, { s, list: [s] }]));

  it.each<[string, object]>([
    ['YAML 1.2', {}],
    ['YAML 1.1, keys sorted (render, diff)', { version: '1.1', sortMapEntries: true }],
  ])('%s: parses back to the same value; nothing raw but the layout’s newlines', (_name, options) => {
    const yaml = terminalYaml(value, { lineWidth: 0, ...options });
    expect(rawControls(yaml)).toEqual([]);
    expect(parse(yaml, options)).toEqual(value);
    // The control: the library alone prints DEL, C1 and bidi marks raw, and a tab in a plain scalar.
    expect(rawControls(stringify(value, { lineWidth: 0, ...options }))).toEqual(
      expect.arrayContaining(['U+0009', 'U+007F', 'U+009B', 'U+202E']),
    );
  });

  it('keeps a string whose only control is a newline as an indented block scalar', () => {
    expect(terminalYaml({ script: 'echo a\necho b\n' })).toBe('script: |\n  echo a\n  echo b\n');
  });

  it('double-quotes a string with any other control, on one line, keys included', () => {
    expect(terminalYaml({ 'k\x1b]0;t\x07': 'line 1\n\x1b[1Aline 2 \x9b2J \u202e' })).toBe(
      '"k\\e]0;t\\a": "line 1\\n\\e[1Aline 2 \\x9b2J \\u202e"\n',
    );
  });
});
