// The samples of a Prometheus text exposition (name, labels, value), for the tests that ask what
// the agent's metrics say. Whether the text is well formed is promtool's question (`check metrics`).

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** `name{labels} value [timestamp]`: the label block ends at the last `}` (values may hold braces). */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
const ESCAPES: Readonly<Record<string, string>> = { n: '\n', '\\': '\\', '"': '"' };

/** Every sample line of `text`, in order; comments (HELP, TYPE) are skipped. */
export function readSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = SAMPLE.exec(line.trim());
    if (!match) continue;
    const [, name = '', labelText = '', value = ''] = match;
    const labels: Record<string, string> = {};
    for (const [, label = '', raw = ''] of labelText.matchAll(LABEL))
      labels[label] = raw.replace(/\\(.)/g, (sequence, c: string) => ESCAPES[c] ?? sequence);
    samples.push({ name, labels, value: numberOf(value) });
  }
  return samples;
}

/** The families `text` declares a type for (a histogram by its own name, not its _bucket series). */
export function declaredFamilies(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] ?? ''));
}

/** The value of the first sample named `name` whose labels include `labels`. */
export function sampleValue(
  samples: readonly Sample[],
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  return samples.find(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  )?.value;
}

/** As Prometheus reads values (Go's ParseFloat): Inf and NaN in any case; prom-client writes `Nan`. */
function numberOf(text: string): number {
  if (/^\+?inf$/i.test(text)) return Number.POSITIVE_INFINITY;
  if (/^-inf$/i.test(text)) return Number.NEGATIVE_INFINITY;
  return Number(text);
}
