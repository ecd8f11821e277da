// Generated regions of hand-written pages: the text between `<!-- generated:NAME -->` and
// `<!-- end:NAME -->` belongs to a generator (`npm run docs`); a test fails when it is stale.

export class MissingRegionError extends Error {
  override readonly name = 'MissingRegionError';
  readonly file: string;
  readonly region: string;
  constructor(file: string, region: string) {
    super(`${file} has no region <!-- generated:${region} --> … <!-- end:${region} -->`);
    this.file = file;
    this.region = region;
  }
}

/** The page with the region's content replaced (the markers stay; content ends with a newline). */
export function replaceRegion(page: string, file: string, region: string, content: string): string {
  const begin = `<!-- generated:${region} -->`;
  const end = `<!-- end:${region} -->`;
  const from = page.indexOf(begin);
  const to = page.indexOf(end, from);
  if (from < 0 || to < 0) throw new MissingRegionError(file, region);
  const body = content.endsWith('\n') ? content : `${content}\n`;
  return `${page.slice(0, from + begin.length)}\n${body}${page.slice(to)}`;
}
