// The chart's values reference, generated from values.yaml (helm-docs' convention: a `# --`
// comment documents the key below it; on a map it documents the whole map as one value) and the
// types of values.schema.json.
import { isMap, isScalar, parseDocument, type YAMLMap } from 'yaml';

export interface ChartValue {
  readonly key: string;
  readonly type: string;
  readonly default: string;
  readonly description: string;
}

interface SchemaNode {
  readonly type?: string | readonly string[];
  readonly enum?: readonly unknown[];
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly items?: SchemaNode;
}

export class UndocumentedValueError extends Error {
  override readonly name = 'UndocumentedValueError';
  readonly keys: readonly string[];
  constructor(keys: readonly string[]) {
    super(`values.yaml keys without a "# --" description: ${keys.join(', ')}`);
    this.keys = keys;
  }
}

/** The text from the `--` marker on, one line; undefined without a marker. */
function description(comment: string | null | undefined): string | undefined {
  if (!comment) return undefined;
  const lines = comment.split('\n').map((line) => line.trim());
  const start = lines.findIndex((line) => line.startsWith('--'));
  if (start < 0) return undefined;
  return lines
    .slice(start)
    .map((line, i) => (i === 0 ? line.slice(2).trim() : line))
    .join(' ')
    .trim();
}

function schemaType(node: SchemaNode | undefined, value: unknown): string {
  if (node?.enum) return node.enum.map((v) => String(v)).join(' \\| ');
  const type = node?.type;
  if (Array.isArray(type)) return type.join(' or ');
  if (typeof type === 'string')
    return type === 'array' && node?.items?.type ? `list of ${String(node.items.type)}` : type;
  if (Array.isArray(value)) return 'list';
  return value === null ? 'null' : typeof value === 'object' ? 'object' : typeof value;
}

/** Every documented value of the chart, in file order; throws naming each undocumented one. */
export function chartValues(valuesYaml: string, schema: SchemaNode): ChartValue[] {
  const doc = parseDocument(valuesYaml);
  const out: ChartValue[] = [];
  const undocumented: string[] = [];
  const walk = (map: YAMLMap, prefix: string, node: SchemaNode | undefined) => {
    map.items.forEach((pair, index) => {
      if (!isScalar(pair.key)) return;
      const name = String(pair.key.value);
      const key = prefix ? `${prefix}.${name}` : name;
      // yaml puts the comment above a map's first key on the map itself.
      const text = description(pair.key.commentBefore ?? (index === 0 ? map.commentBefore : undefined));
      const child = node?.properties?.[name];
      const value = pair.value;
      if (isMap(value) && value.items.length > 0 && text === undefined) {
        walk(value, key, child);
        return;
      }
      if (text === undefined) {
        undocumented.push(key);
        return;
      }
      const plain: unknown = isScalar(value)
        ? value.value
        : (value as { toJSON(): unknown } | null)?.toJSON();
      out.push({
        key,
        type: schemaType(child, plain),
        default: JSON.stringify(plain ?? null),
        description: text,
      });
    });
  };
  walk(doc.contents as YAMLMap, '', schema);
  if (undocumented.length > 0) throw new UndocumentedValueError(undocumented);
  return out;
}

const cell = (text: string) => text.replaceAll('|', '\\|');

export function chartValuesMarkdown(valuesYaml: string, schema: SchemaNode): string {
  const rows = chartValues(valuesYaml, schema).map(
    (v) =>
      `| \`${v.key}\` | ${v.type.includes('\\|') ? v.type : cell(v.type)} | \`${cell(v.default)}\` | ${cell(v.description)} |`,
  );
  return ['| Key | Type | Default | Description |', '|---|---|---|---|', ...rows, ''].join('\n');
}
