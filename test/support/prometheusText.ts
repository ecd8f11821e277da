// A parser of the Prometheus text exposition format (0.0.4), strict enough to fail on what a
// Prometheus server would refuse: prom-client writes this format but cannot read it.

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricFamily {
  readonly name: string;
  type: MetricType;
  help: string | undefined;
  readonly samples: Sample[];
}

export class ExpositionError extends Error {
  override readonly name = 'ExpositionError';
  readonly code = 'EXPOSITION';
  readonly line: number;
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.line = line;
  }
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const TYPES = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<MetricType, readonly string[]> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

/** The names of the series a family of this type exposes (a histogram `x`: x_bucket, x_sum, x_count). */
export function seriesNames(family: Pick<MetricFamily, 'name' | 'type'>): string[] {
  return SUFFIXES[family.type].map((suffix) => family.name + suffix);
}

export function parseExposition(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const bySeriesName = new Map<string, MetricFamily>();
  const lines = text.split('\n');
  const family = (name: string, lineNo: number): MetricFamily => {
    let found = families.get(name);
    if (!found) {
      if (bySeriesName.has(name)) throw new ExpositionError(lineNo, `${name} is a series of another family`);
      found = { name, type: 'untyped', help: undefined, samples: [] };
      families.set(name, found);
      bySeriesName.set(name, found);
    }
    return found;
  };
  lines.forEach((raw, index) => {
    const lineNo = index + 1;
    const line = raw.trim();
    if (line === '') return;
    if (line.startsWith('#')) {
      const match = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$/.exec(line);
      if (!match) return; // an ordinary comment
      const [, keyword, name = '', rest = ''] = match;
      if (!METRIC_NAME.test(name) || METRIC_NAME.exec(name)?.[0] !== name)
        throw new ExpositionError(lineNo, `invalid metric name ${JSON.stringify(name)}`);
      const f = family(name, lineNo);
      if (keyword === 'HELP') {
        if (f.help !== undefined) throw new ExpositionError(lineNo, `second HELP for ${name}`);
        f.help = unescapeText(rest, false, lineNo);
        return;
      }
      if (!TYPES.has(rest as MetricType)) throw new ExpositionError(lineNo, `unknown type ${rest}`);
      if (f.samples.length > 0) throw new ExpositionError(lineNo, `TYPE of ${name} after its samples`);
      f.type = rest as MetricType;
      for (const series of seriesNames(f)) {
        const other = bySeriesName.get(series);
        if (other && other !== f) throw new ExpositionError(lineNo, `${series} is claimed by ${other.name}`);
        bySeriesName.set(series, f);
      }
      return;
    }
    const sample = parseSample(line, lineNo);
    const owner = bySeriesName.get(sample.name) ?? family(sample.name, lineNo);
    owner.samples.push(sample);
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

function parseSample(line: string, lineNo: number): Sample {
  const name = METRIC_NAME.exec(line)?.[0];
  if (!name) throw new ExpositionError(lineNo, `no metric name in ${JSON.stringify(line)}`);
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith('{')) {
    rest = rest.slice(1);
    for (;;) {
      rest = rest.trimStart();
      if (rest.startsWith('}')) {
        rest = rest.slice(1);
        break;
      }
      const label = LABEL_NAME.exec(rest)?.[0];
      if (!label) throw new ExpositionError(lineNo, `invalid label name in ${JSON.stringify(line)}`);
      rest = rest.slice(label.length).trimStart();
      if (!rest.startsWith('="')) throw new ExpositionError(lineNo, `expected =" after ${label}`);
      rest = rest.slice(2);
      let end = 0;
      while (end < rest.length && rest[end] !== '"') end += rest[end] === '\\' ? 2 : 1;
      if (end >= rest.length) throw new ExpositionError(lineNo, `unterminated value of ${label}`);
      if (label in labels) throw new ExpositionError(lineNo, `label ${label} twice`);
      labels[label] = unescapeText(rest.slice(0, end), true, lineNo);
      rest = rest.slice(end + 1).trimStart();
      if (rest.startsWith(',')) rest = rest.slice(1);
      else if (!rest.startsWith('}')) throw new ExpositionError(lineNo, `expected , or } after ${label}`);
    }
  }
  const fields = rest.trim().split(/\s+/);
  if (fields.length < 1 || fields.length > 2 || fields[0] === '')
    throw new ExpositionError(lineNo, `expected a value (and optional timestamp) in ${JSON.stringify(line)}`);
  const value = parseValue(fields[0] ?? '', lineNo);
  if (fields[1] !== undefined && !/^-?\d+$/.test(fields[1]))
    throw new ExpositionError(lineNo, `invalid timestamp ${fields[1]}`);
  return { name, labels, value };
}

function parseValue(text: string, lineNo: number): number {
  // As Prometheus reads values (Go's ParseFloat): Inf and NaN in any case; prom-client writes `Nan`.
  if (/^\+?inf(inity)?$/i.test(text)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/i.test(text)) return Number.NEGATIVE_INFINITY;
  if (/^nan$/i.test(text)) return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text))
    throw new ExpositionError(lineNo, `invalid value ${JSON.stringify(text)}`);
  return Number(text);
}

function unescapeText(text: string, quote: boolean, lineNo: number): string {
  return text.replace(/\\(.)/g, (_, c: string) => {
    if (c === 'n') return '\n';
    if (c === '\\') return '\\';
    if (c === '"' && quote) return '"';
    throw new ExpositionError(lineNo, `invalid escape \\${c}`);
  });
}

/** Buckets of each series: an le label, cumulative counts, a +Inf bucket equal to _count. */
function checkHistogram(f: MetricFamily): void {
  const groups = new Map<string, { buckets: [number, number][]; count?: number }>();
  const keyOf = (labels: Readonly<Record<string, string>>) =>
    JSON.stringify(
      Object.entries(labels)
        .filter(([k]) => k !== 'le')
        .sort(),
    );
  for (const s of f.samples) {
    const key = keyOf(s.labels);
    const group = groups.get(key) ?? { buckets: [] };
    groups.set(key, group);
    if (s.name === `${f.name}_bucket`) {
      const le = s.labels.le;
      if (le === undefined) throw new ExpositionError(0, `${s.name} without le`);
      group.buckets.push([parseValue(le, 0), s.value]);
    } else if (s.name === `${f.name}_count`) group.count = s.value;
  }
  for (const [key, group] of groups) {
    const sorted = [...group.buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++)
      if ((sorted[i]?.[1] ?? 0) < (sorted[i - 1]?.[1] ?? 0))
        throw new ExpositionError(0, `${f.name}${key}: buckets are not cumulative`);
    const inf = sorted.at(-1);
    if (!inf || inf[0] !== Number.POSITIVE_INFINITY)
      throw new ExpositionError(0, `${f.name}${key}: no +Inf bucket`);
    if (group.count !== inf[1]) throw new ExpositionError(0, `${f.name}${key}: +Inf bucket ≠ _count`);
  }
}
