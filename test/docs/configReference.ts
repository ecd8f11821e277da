// The configuration reference, generated from the agent's zod schema: every key with its type,
// default, environment variable and description (the schema's `.describe()` texts).
import { z } from 'zod';
import { AgentConfig, ENV_PATHS } from '../../src/config/agentConfig.ts';

interface JsonSchema {
  readonly type?: string | readonly string[];
  readonly description?: string;
  readonly defaultText?: string;
  readonly default?: unknown;
  readonly enum?: readonly unknown[];
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly minItems?: number;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly items?: JsonSchema;
  readonly anyOf?: readonly JsonSchema[];
}

export interface ConfigKey {
  readonly path: string;
  readonly type: string;
  readonly default: string;
  readonly env: string | undefined;
  readonly description: string;
}

export class UndescribedKeyError extends Error {
  override readonly name = 'UndescribedKeyError';
  readonly path: string;
  constructor(path: string) {
    super(`configuration key ${path} has no description: add .describe('…') to its schema`);
    this.path = path;
  }
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function typeText(schema: JsonSchema): string {
  if (schema.anyOf) return schema.anyOf.map(typeText).join(' or ');
  if (schema.enum) return schema.enum.map((value) => `\`${String(value)}\``).join(' \\| ');
  const type = typeof schema.type === 'string' ? schema.type : (schema.type ?? ['any']).join(' or ');
  if (type === 'array') return `list of ${schema.items ? typeText(schema.items) : 'any'}`;
  if (type === 'object') {
    const values = schema.additionalProperties;
    return typeof values === 'object' && Object.keys(values).length > 0
      ? `map of ${typeText(values)}`
      : 'object';
  }
  if (type === 'string' && schema.format === 'uuid') return 'uuid';
  if (type === 'string' && schema.format === 'uri') return 'URL';
  const low =
    schema.minimum ?? (schema.exclusiveMinimum === undefined ? undefined : `> ${schema.exclusiveMinimum}`);
  const high = schema.maximum === undefined || schema.maximum >= MAX_SAFE ? undefined : schema.maximum;
  if (low !== undefined && high !== undefined) return `${type} ${low}–${high}`;
  if (typeof low === 'string') return `${type} ${low}`;
  if (low !== undefined) return `${type} ≥ ${low}`;
  if (high !== undefined) return `${type} ≤ ${high}`;
  return type;
}

function defaultText(schema: JsonSchema, required: boolean): string {
  if (schema.defaultText) return schema.defaultText;
  if (schema.default !== undefined) {
    const value = schema.default;
    const isEmptyObject = typeof value === 'object' && value !== null && Object.keys(value).length === 0;
    if (isEmptyObject && !Array.isArray(value) && schema.properties) return '';
    return `\`${JSON.stringify(value)}\``;
  }
  return required ? '**required**' : 'unset';
}

/** Every leaf key of the agent configuration, in schema order. */
export function configKeys(): ConfigKey[] {
  const root = z.toJSONSchema(AgentConfig, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const envByPath = new Map(ENV_PATHS.map(([name, path]) => [path.join('.'), name]));
  const keys: ConfigKey[] = [];
  const walk = (schema: JsonSchema, prefix: string) => {
    for (const [name, child] of Object.entries(schema.properties ?? {})) {
      const path = prefix ? `${prefix}.${name}` : name;
      if (!child.description) throw new UndescribedKeyError(path);
      if (child.properties) {
        walk(child, path);
        continue;
      }
      keys.push({
        path,
        type: typeText(child),
        default: defaultText(child, schema.required?.includes(name) ?? false),
        env: envByPath.get(path),
        description: child.description,
      });
    }
  };
  walk(root, '');
  return keys;
}

/** Section descriptions (the objects' own `.describe()` texts), by path. */
function sectionDescriptions(): Map<string, string> {
  const root = z.toJSONSchema(AgentConfig, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const out = new Map<string, string>();
  const walk = (schema: JsonSchema, prefix: string) => {
    for (const [name, child] of Object.entries(schema.properties ?? {})) {
      const path = prefix ? `${prefix}.${name}` : name;
      if (child.properties) {
        out.set(path, child.description ?? '');
        walk(child, path);
      }
    }
  };
  walk(root, '');
  return out;
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** Markdown: one table per top-level section, keys in schema order. */
export function configReferenceMarkdown(): string {
  const keys = configKeys();
  const sections = sectionDescriptions();
  const groups = new Map<string, ConfigKey[]>();
  for (const key of keys) {
    const top = key.path.includes('.') ? key.path.slice(0, key.path.indexOf('.')) : '';
    groups.set(top, [...(groups.get(top) ?? []), key]);
  }
  const lines: string[] = [];
  for (const [top, group] of groups) {
    lines.push(top ? `### \`${top}\`` : '### Top level', '');
    const about = top ? sections.get(top) : undefined;
    if (about) lines.push(about, '');
    lines.push('| Key | Type | Default | Environment | Description |', '|---|---|---|---|---|');
    for (const key of group) {
      // Escape '|' inside enum lists is already done by typeText; cell() handles the rest.
      const type = key.type.includes('\\|') ? key.type : cell(key.type);
      lines.push(
        `| \`${key.path}\` | ${type} | ${cell(key.default)} | ${key.env ? `\`${key.env}\`` : ''} | ${cell(key.description)} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}
