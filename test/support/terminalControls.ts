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

/** Each control character and each sequence, as one hostile string apiece. */
export const HOSTILE_STRINGS: readonly string[] = [
  ...CONTROL_CHARACTERS.map((c) => `a${c}b`),
  ...ANSI_SEQUENCES,
];

// biome-ignore lint/suspicious/noControlCharactersInRegex: these characters are what is matched
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** The control characters printed raw, as code points (`U+001B`); the layout's own newlines aside. */
export function rawControls(text: string): string[] {
  return [...new Set(text.match(RAW) ?? [])].map(
    (c) => `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`,
  );
}
