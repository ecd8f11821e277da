// The metric names a PromQL expression reads: identifiers outside label matchers, strings and
// ranges that are not functions, aggregations, keywords or label lists (by, on, group_left …),
// plus any `__name__="…"` matcher. Grafana variables ($job, ${job}, $__rate_interval) are skipped.

type Token =
  | { readonly kind: 'ident'; readonly text: string }
  | { readonly kind: 'matchers'; readonly text: string }
  | { readonly kind: 'punct'; readonly text: string }
  | { readonly kind: 'other' };

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan']);
/** Followed by a parenthesised list of label names, not of expressions. */
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);

export class PromqlSyntaxError extends Error {
  override readonly name = 'PromqlSyntaxError';
  readonly code = 'PROMQL_SYNTAX';
  readonly expression: string;
  constructor(message: string, expression: string) {
    super(`${message} in ${JSON.stringify(expression)}`);
    this.expression = expression;
  }
}

export function metricNames(expression: string): Set<string> {
  const tokens = tokenize(expression);
  const names = new Set<string>();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token?.kind === 'matchers') {
      const name = /(?:^|,)\s*__name__\s*=\s*"([^"]*)"/.exec(token.text)?.[1];
      if (name) names.add(name);
      continue;
    }
    if (token?.kind !== 'ident') continue;
    const word = token.text;
    const next = tokens[i + 1];
    if (LABEL_LIST_KEYWORDS.has(word)) {
      if (next?.kind === 'punct' && next.text === '(') {
        const close = tokens.findIndex((t, j) => j > i && t.kind === 'punct' && t.text === ')');
        if (close < 0) throw new PromqlSyntaxError(`unclosed label list after ${word}`, expression);
        i = close;
      }
      continue;
    }
    if (KEYWORDS.has(word.toLowerCase())) continue;
    if (next?.kind === 'punct' && next.text === '(') continue; // a function or an aggregation
    if (AGGREGATIONS.has(word) && next?.kind === 'ident' && (next.text === 'by' || next.text === 'without'))
      continue;
    names.add(word);
  }
  return names;
}

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  const n = expression.length;
  let i = 0;
  const until = (close: string, from: number): number => {
    // The index of `close`, skipping quoted strings on the way.
    for (let j = from; j < n; j++) {
      const c = expression[j];
      if (c === '"' || c === "'" || c === '`') j = stringEnd(j);
      else if (c === close) return j;
    }
    throw new PromqlSyntaxError(`unclosed ${close === '}' ? '{' : '['}`, expression);
  };
  const stringEnd = (start: number): number => {
    const quote = expression[start];
    for (let j = start + 1; j < n; j++) {
      if (expression[j] === '\\' && quote !== '`') j++;
      else if (expression[j] === quote) return j;
    }
    throw new PromqlSyntaxError('unterminated string', expression);
  };
  while (i < n) {
    const c = expression[i] ?? '';
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      const end = expression.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (c === '"' || c === "'" || c === '`') {
      i = stringEnd(i) + 1;
      tokens.push({ kind: 'other' });
    } else if (c === '$') {
      // A Grafana variable: $name, ${name} or ${name:format}.
      if (expression[i + 1] === '{') i = until('}', i + 2) + 1;
      else {
        i++;
        while (i < n && /[a-zA-Z0-9_]/.test(expression[i] ?? '')) i++;
      }
      tokens.push({ kind: 'other' });
    } else if (c === '{') {
      const end = until('}', i + 1);
      tokens.push({ kind: 'matchers', text: expression.slice(i + 1, end) });
      i = end + 1;
    } else if (c === '[') {
      i = until(']', i + 1) + 1;
      tokens.push({ kind: 'other' });
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(expression[i + 1] ?? ''))) {
      // Numbers and durations: 0.99, 1e3, 1e-3, 0x1f, 5m, 1h30m.
      i++;
      while (i < n && /[0-9a-zA-Z._]/.test(expression[i] ?? '')) {
        if (/[eE]/.test(expression[i] ?? '') && /[-+]/.test(expression[i + 1] ?? '')) i++;
        i++;
      }
      tokens.push({ kind: 'other' });
    } else if (/[a-zA-Z_:]/.test(c)) {
      const start = i;
      while (i < n && /[a-zA-Z0-9_:]/.test(expression[i] ?? '')) i++;
      tokens.push({ kind: 'ident', text: expression.slice(start, i) });
    } else {
      tokens.push({ kind: 'punct', text: c });
      i++;
    }
  }
  return tokens;
}
