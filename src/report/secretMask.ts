// Masks a deployment's secret values in text that leaves the cluster (a crashed server's log lines,
// Event notes, container messages): each value, and the forms a server is likely to print it in —
// URL-encoded, inside a URI as its password, base64 at any alignment, one line of a multi-line
// value — is replaced by `[secret]`. Pure.

export const SECRET_MARK = '[secret]';

/** A raw value shorter than this is masked nowhere (it would mask common words and numbers). */
const MIN_VALUE_CHARS = 3;
/** A base64 core shorter than this is not searched for: too likely to occur by chance. */
const MIN_BASE64_CORE = 6;

/**
 * The base64 text any encoding of `value` contains, at each of the three alignments it can start
 * at within a longer encoded text: the characters that depend on the value's bytes alone.
 */
function base64Cores(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    // Skip the characters that mix in the padding bytes before; stop before those that mix in
    // whatever follows the value.
    const start = offset === 0 ? 0 : offset + 1;
    const end = Math.floor(((offset + bytes.length) * 8) / 6);
    const core = encoded.slice(start, end);
    if (core.length >= MIN_BASE64_CORE) cores.push(core, core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return cores;
}

/** The password of a URI-shaped value, raw and decoded (a server may print either). */
function uriPasswords(value: string): string[] {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return [];
  try {
    const password = new URL(value).password;
    if (password === '') return [];
    return [password, decodeURIComponent(password)];
  } catch {
    return [];
  }
}

/** Every text to mask for one secret value. */
function needlesOf(value: string): string[] {
  const forms = [value, encodeURIComponent(value), ...uriPasswords(value)];
  if (value.includes('\n')) forms.push(...value.split(/\r?\n/).map((line) => line.trim()));
  const needles = forms.filter((form) => form.length >= MIN_VALUE_CHARS);
  for (const form of [value, ...uriPasswords(value)]) needles.push(...base64Cores(form));
  return needles;
}

/** A function that masks every form of each of `values` in a text. */
export function secretMask(values: Iterable<string>): (text: string) => string {
  const needles = [...new Set([...values].flatMap(needlesOf))]
    // The longest first: a value that contains another is masked whole.
    .sort((a, b) => b.length - a.length);
  if (needles.length === 0) return (text) => text;
  return (text) => {
    let masked = text;
    for (const needle of needles)
      if (masked.includes(needle)) masked = masked.replaceAll(needle, SECRET_MARK);
    return masked;
  };
}
