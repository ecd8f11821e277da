// What the commands print reaches an operator's terminal, and much of it is a tenant's: names,
// labels, messages, field paths, whole objects. A control character in such a string could move
// the cursor, erase or add a row, set a hyperlink or the window title (ANSI CSI and OSC sequences
// start with ESC, or with the C1 controls CSI 0x9B and OSC 0x9D), and a bidi override or line
// separator reorders or breaks what is read. Every printer passes such strings through here, at the
// point of printing (the data itself is left as it is): each of those characters shows as an
// escape (`\x1b`, `\n`, `\u202e`). Pure.
import {
  type CreateNodeOptions,
  Document,
  type DocumentOptions,
  type SchemaOptions,
  type ToStringOptions,
  visit,
} from 'yaml';

// C0 controls, DEL, C1 controls; the Arabic letter mark, LRM and RLM, the line and paragraph
// separators, the bidi embeddings and overrides (U+202A–U+202E) and isolates (U+2066–U+2069).
// biome-ignore lint/suspicious/noControlCharactersInRegex: these characters are what is matched
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
// The same set without C0, which JSON and YAML double-quoted strings already escape.
const UNSAFE_ABOVE_C0 = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** A YAML scalar may hold a newline raw: the format prints it as a block scalar's next line. */
const needsQuotingInYaml = (text: string): boolean => text.replaceAll('\n', '').search(UNSAFE) !== -1;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (char: string, digits: number): string =>
  (char.codePointAt(0) ?? 0).toString(16).padStart(digits, '0');

/** `\n`, `\x1b`, `\u202e`: the escape as JSON, YAML double quotes and a reader all take it. */
function escapeChar(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  return char <= '\u00ff' ? `\\x${hex(char, 2)}` : `\\u${hex(char, 4)}`;
}

/**
 * The text with every control character, bidi mark and line separator shown as an escape: what
 * one cell, field or line of human-readable output may print of a string it did not write. The
 * result holds no newline, so it never starts a row of its own. A backslash is left as it is.
 */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/** One line of output, escaped as terminalText, and its newline. */
export function terminalLine(text: string): string {
  return `${terminalText(text)}\n`;
}

/**
 * JSON text with the characters `JSON.stringify` leaves raw (DEL, C1, bidi marks, U+2028/2029)
 * as `\u` escapes: the same value to a parser, nothing a terminal acts on. For JSON text only.
 */
export function terminalJsonText(json: string): string {
  return json.replace(UNSAFE_ABOVE_C0, (char) => `\\u${hex(char, 4)}`);
}

/** `JSON.stringify`, safe to print (see terminalJsonText). */
export function terminalJson(value: unknown, space?: number): string {
  return terminalJsonText(JSON.stringify(value, null, space) ?? 'null');
}

export type TerminalYamlOptions = DocumentOptions & SchemaOptions & CreateNodeOptions & ToStringOptions;

/**
 * `stringify` of the yaml library, safe to print and parsed back to the same value: a string (key
 * or value) holding any character terminalText escapes, bar a newline, is written double-quoted,
 * on one line, with each such character as an escape. The library escapes C0 there itself; DEL,
 * C1 and the Unicode marks it leaves raw are escaped after (they occur nowhere else). A string
 * whose only such character is a newline stays a block scalar: its lines are indented under its key.
 */
export function terminalYaml(value: unknown, options: TerminalYamlOptions = {}): string {
  const document = new Document(value, options);
  visit(document, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && needsQuotingInYaml(node.value)) node.type = 'QUOTE_DOUBLE';
    },
  });
  const text = document.toString({ doubleQuotedMinMultiLineLength: Number.POSITIVE_INFINITY, ...options });
  return text.replace(UNSAFE_ABOVE_C0, escapeChar);
}
