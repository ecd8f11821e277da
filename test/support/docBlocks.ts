// Fenced blocks of the README and docs/, read by the tests that run or load them: a page and the
// test of its commands cannot disagree. A block is preceded by `<!-- tested-by: FILE -->`.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface DocBlock {
  /** Path from the repository root, e.g. docs/operating.md. */
  readonly page: string;
  /** The nearest heading above the block (its text without the #s), '' before the first. */
  readonly heading: string;
  readonly lang: string;
  readonly text: string;
  /** Files named by the `<!-- tested-by: … -->` line right above the block. */
  readonly testedBy: readonly string[];
}

export class DocBlockNotFoundError extends Error {
  override readonly name = 'DocBlockNotFoundError';
  constructor(page: string, heading: string, lang: string) {
    super(`${page} has no \`\`\`${lang} block under a heading "${heading}"`);
  }
}

/** Every fenced block of a page, in order. */
export function parseDocBlocks(page: string, markdown: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  const lines = markdown.split('\n');
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const title = /^#{1,6} (.*)$/.exec(line);
    if (title) heading = title[1] ?? '';
    const fence = /^```(\S*)\s*$/.exec(line);
    if (!fence) continue;
    const end = lines.indexOf('```', i + 1);
    if (end < 0) break;
    const marker = /^<!-- tested-by: (.+) -->$/.exec(lines[i - 1] ?? '');
    blocks.push({
      page,
      heading,
      lang: fence[1] ?? '',
      text: lines.slice(i + 1, end).join('\n'),
      testedBy: marker ? (marker[1] ?? '').split(',').map((f) => f.trim()) : [],
    });
    i = end;
  }
  return blocks;
}

/** Fences of shell commands: a `bash`, `shell` or `console` block is read and tested like `sh`. */
const SHELL_LANGS: ReadonlySet<string> = new Set(['sh', 'bash', 'shell', 'console']);

export function isShellBlock(block: Pick<DocBlock, 'lang'>): boolean {
  return SHELL_LANGS.has(block.lang);
}

export async function docBlocks(page: string): Promise<DocBlock[]> {
  return parseDocBlocks(page, await readFile(join(ROOT, page), 'utf8'));
}

/** The first of `blocks` of `lang` (`sh`: any shell fence) under a heading that starts with `heading`. */
export function findDocBlock(
  blocks: readonly DocBlock[],
  heading: string,
  lang = 'sh',
): DocBlock | undefined {
  const matches = (b: DocBlock) => (lang === 'sh' ? isShellBlock(b) : b.lang === lang);
  return blocks.find((b) => matches(b) && b.heading.startsWith(heading));
}

/** The text of the page's block that `findDocBlock` picks. */
export async function docBlock(page: string, heading: string, lang = 'sh'): Promise<string> {
  const found = findDocBlock(await docBlocks(page), heading, lang);
  if (!found) throw new DocBlockNotFoundError(page, heading, lang);
  return found.text;
}

/** A string literal: its quote captured as `<name>Quote`, its text as `<name>`. */
const literal = (name: string) => String.raw`(?<${name}Quote>[\x60'"])(?<${name}>.*?)\k<${name}Quote>`;
const DOC_BLOCK_CALL = new RegExp(
  String.raw`docBlock\(\s*${literal('page')}\s*,\s*${literal('heading')}(?:\s*,\s*${literal('lang')})?\s*,?\s*\)`,
  'g',
);

export interface DocBlockCall {
  readonly page: string;
  readonly heading: string;
  readonly lang: string;
}

/** The `docBlock(page, heading[, lang])` calls of a test's source whose arguments are string literals. */
export function docBlockCalls(source: string): DocBlockCall[] {
  return [...source.matchAll(DOC_BLOCK_CALL)].map(({ groups = {} }) => ({
    page: groups.page ?? '',
    heading: groups.heading ?? '',
    lang: groups.lang ?? 'sh',
  }));
}

/** A sh block's commands: one a line (`\` continues it), trailing `# comments` and blank lines dropped. */
export function shellCommands(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}
