// Strings that would act on an operator's terminal if printed raw, and a check that printed text
// holds none: for the tests of what the commands print.

const range = (from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => String.fromCodePoint(from + i));

/** Every C0 control, DEL, every C1 control, the bidi marks, embeddings, overrides and isolates, U+2028/2029. */
export const CONTROL_CHARACTERS: readonly string[] = [
  ...range(0x00, 0x1f),
  '\u007f',
  ...range(0x80, 0x9f),
  '\u061c',
  '\u200e',
  '\u200f',
  ...range(0x2028, 0x202e),
  ...range(0x2066, 0x2069),
];

/**
 * Characters a terminal draws as nothing, so that `billing-api\u200b` reads as `billing-api`: format
 * characters (soft hyphen, zero-width space and joiners, word joiner and invisible operators, the
 * byte-order mark, a tag) and default-ignorable code points (Hangul fillers, a combining grapheme
 * joiner, Mongolian and other variation selectors).
 */
export const INVISIBLE_CHARACTERS: readonly string[] = [
  '\u00ad',
  '\u034f',
  '\u115f',
  '\u1160',
  ...range(0x180b, 0x180f),
  ...range(0x200b, 0x200d),
  ...range(0x2060, 0x2064),
  '\u3164',
  '\ufe00',
  '\ufe0f',
  '\ufeff',
  '\uffa0',
  '\u{e0001}',
  '\u{e0041}',
  '\u{e0100}',
];

/** ANSI sequences an attacker would send: cursor up and erase line, hyperlinks, title, clipboard, C1 CSI/OSC. */
export const ANSI_SEQUENCES: readonly string[] = [
  '\x1b[1A\x1b[2K',
  '\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07',
  '\x1b]0;pwned\x07',
  '\x1b]52;c;cm0gLXJmIH4K\x07',
  '\x1b[31mDEPLOY_FAILED\x1b[0m',
  '\x9b2J',
  '\x9d8;;http://evil.example/\x9c',
  '\rweb  apps  3f8d6c1e  main 1/1  DEPLOYED  1s  all workloads are available',
  '\nfake  apps  3f8d6c1e  main 1/1  DEPLOYED  1s  all workloads are available',
  'evil\u202eelif.yaml',
];

/** Each control character, each invisible character and each sequence, as one hostile string apiece. */
export const HOSTILE_STRINGS: readonly string[] = [
  ...CONTROL_CHARACTERS.map((c) => `a${c}b`),
  ...INVISIBLE_CHARACTERS.map((c) => `billing-api${c}`),
  ...ANSI_SEQUENCES,
];

// Controls, line separators, format characters and default-ignorable code points.
const RAW = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029]/gu;

/**
 * The control and invisible characters printed raw, as code points (`U+001B`, `U+200B`); the
 * layout's own newlines aside.
 */
export function rawControls(text: string): string[] {
  return [...new Set(text.match(RAW) ?? [])]
    .filter((c) => c !== '\n')
    .map((c) => `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`);
}
