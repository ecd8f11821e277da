import { describe, expect, it } from 'vitest';
import { physicalLines } from '../../../src/cli/status.ts';

describe('physicalLines (how far --watch moves the cursor up to redraw)', () => {
  it.each<[string, number | undefined, number]>([
    ['a\nb\n', 80, 2],
    ['a\n\nb\n', 80, 3],
    ['x'.repeat(80), 80, 1],
    [`${'x'.repeat(81)}\nshort\n`, 80, 3],
    [`${'x'.repeat(200)}\n`, undefined, 1],
    [`${'x'.repeat(200)}\n`, 0, 1],
  ])('%j on %s columns takes %i lines', (text, columns, lines) => {
    expect(physicalLines(text, columns)).toBe(lines);
  });
});
