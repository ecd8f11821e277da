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

export async function docBlocks(page: string): Promise<DocBlock[]> {
  return parseDocBlocks(page, await readFile(join(ROOT, page), 'utf8'));
}

/** The first block of `lang` under the heading that starts with `heading`. */
export async function docBlock(page: string, heading: string, lang = 'sh'): Promise<string> {
  const found = (await docBlocks(page)).find((b) => b.lang === lang && b.heading.startsWith(heading));
  if (!found) throw new DocBlockNotFoundError(page, heading, lang);
  return found.text;
}

/** A sh block's commands: one a line (`\` continues it), trailing `# comments` and blank lines dropped. */
export function shellCommands(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}
