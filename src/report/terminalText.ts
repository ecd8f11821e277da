// What the commands print reaches an operator's terminal, and much of it is a tenant's: names,
// labels, messages, field paths, whole objects. A control character in such a string could move
// the cursor, erase or add a row, set a hyperlink or the window title (ANSI CSI and OSC sequences
// start with ESC, or with the C1 controls CSI 0x9B and OSC 0x9D), a bidi override or line
// separator reorders or breaks what is read, and an invisible character (a zero-width space, a
// word joiner, a Hangul filler) makes `billing-api\u200b` read as `billing-api`. Every printer
// passes such strings through here, at the point of printing (the data itself is left as it is):
// each of those characters shows as an escape (`\x1b`, `\n`, `\u202e`, `\u200b`). Pure.
import {
  type CreateNodeOptions,
  Document,
  type DocumentOptions,
  type SchemaOptions,
  type ToStringOptions,
  visit,
} from 'yaml';

// The controls (Cc: C0, DEL, C1); the line and paragraph separators; the format characters (Cf:
// the soft hyphen, zero-width spaces and joiners, the word joiner and invisible operators, the
// Arabic letter mark, LRM and RLM, the bidi embeddings, overrides and isolates, the byte-order
// mark, tags); and the default-ignorable code points, which a terminal draws as nothing (the
// Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the Mongolian and other variation selectors).
const UNSAFE = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029]/gu;
// The same set without C0, which JSON and YAML double-quoted strings already escape.
const UNSAFE_ABOVE_C0 = /[\u007f-\u009f\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029]/gu;

/** A YAML scalar may hold a newline raw: the format prints it as a block scalar's next line. */
const needsQuotingInYaml = (text: string): boolean => text.replaceAll('\n', '').search(UNSAFE) !== -1;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `\u200b`; a character past U+FFFF as its two UTF-16 halves (`\udb40\udc01`), as JSON writes it. */
function unicodeEscape(char: string): string {
  let escaped = '';
  for (let i = 0; i < char.length; i++) escaped += `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return escaped;
}

/** `\n`, `\x1b`, `\u202e`: the escape as JSON, YAML double quotes and a reader all take it. */
function escapeChar(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  return char <= '\u00ff' ? `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}` : unicodeEscape(char);
}

/**
 * The text with every control character, bidi mark, line separator and invisible character shown
 * as an escape: what one cell, field or line of human-readable output may print of a string it did
 * not write. The result holds no newline, so it never starts a row of its own. A backslash is left
 * as it is.
 */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/** How many characters of a tenant's string a message quotes at most. */
export const EXCERPT_LENGTH = 100;

/**
 * A tenant's string as a message or field path quotes it: its first EXCERPT_LENGTH characters
 * (never half a surrogate pair), and how many more there were; escaped as terminalText unless
 * `escape` is false (a field path, escaped where it is printed). A refusal then never carries a
 * 400 KB key back into a log line, an Event or a status report.
 */
export function inputExcerpt(text: string, options: { readonly escape?: boolean } = {}): string {
  const escaped = options.escape ?? true;
  if (text.length <= EXCERPT_LENGTH) return escaped ? terminalText(text) : text;
  const last = text.charCodeAt(EXCERPT_LENGTH - 1);
  const cut = last >= 0xd800 && last <= 0xdbff ? EXCERPT_LENGTH - 1 : EXCERPT_LENGTH;
  const head = text.slice(0, cut);
  return `${escaped ? terminalText(head) : head}…(${(text.length - cut).toLocaleString('en-US')} more characters)`;
}

/** One line of output, escaped as terminalText, and its newline. */
export function terminalLine(text: string): string {
  return `${terminalText(text)}\n`;
}

/**
 * JSON text with the characters `JSON.stringify` leaves raw (DEL, C1, bidi marks, U+2028/2029,
 * format and default-ignorable characters) as `\u` escapes: the same value to a parser, nothing a
 * terminal acts on or hides. For JSON text only.
 */
export function terminalJsonText(json: string): string {
  return json.replace(UNSAFE_ABOVE_C0, unicodeEscape);
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
 * An object met twice is written twice, not as an anchor and aliases: a reader sees each in place,
 * and a parser's alias limit (100 in the yaml library) never refuses a long diff.
 */
export function terminalYaml(value: unknown, options: TerminalYamlOptions = {}): string {
  const document = new Document(value, { aliasDuplicateObjects: false, ...options });
  visit(document, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && needsQuotingInYaml(node.value)) node.type = 'QUOTE_DOUBLE';
    },
  });
  const text = document.toString({ doubleQuotedMinMultiLineLength: Number.POSITIVE_INFINITY, ...options });
  return text.replace(UNSAFE_ABOVE_C0, escapeChar);
}
