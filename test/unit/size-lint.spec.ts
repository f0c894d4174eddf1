/**
 * The size lint of src/ and the Lua sources (scripts/size-lint.ts): files over 400 lines are
 * listed as a warning, files over 600 lines fail.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HARD_LIMIT, LINTED, SOFT_LIMIT, lineCount, oversized } from '../../scripts/size-lint.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('the size lint of src/ and lua/', () => {
  it(`lists the files over ${SOFT_LIMIT} lines (a warning, not a failure)`, () => {
    const long = oversized(ROOT, SOFT_LIMIT, LINTED);
    if (long.length > 0) {
      console.warn(`source files over ${SOFT_LIMIT} lines (split them when you next touch them):\n${long.map((f) => `  ${f.file}: ${f.lines}`).join('\n')}`);
    }
    expect(long.every((f) => f.lines > SOFT_LIMIT)).toBe(true);
  });

  it(`has no file over the hard ceiling of ${HARD_LIMIT} lines`, () => {
    expect(oversized(ROOT, HARD_LIMIT, LINTED).map((f) => `${f.file}: ${f.lines}`)).toEqual([]);
  });

  it('counts lines as wc -l does, walks subfolders, skips .d.ts and other files, longest first', () => {
    expect([lineCount(''), lineCount('a'), lineCount('a\n'), lineCount('a\nb'), lineCount('a\n\n')]).toEqual([0, 1, 1, 2, 2]);
    const root = mkdtempSync(join(tmpdir(), 'size-lint-'));
    try {
      mkdirSync(join(root, 'src', 'deep'), { recursive: true });
      const lines = (n: number): string => 'x\n'.repeat(n);
      writeFileSync(join(root, 'src', 'short.ts'), lines(3));
      writeFileSync(join(root, 'src', 'five.ts'), lines(5));
      writeFileSync(join(root, 'src', 'deep', 'seven.ts'), lines(7));
      writeFileSync(join(root, 'src', 'deep', 'types.d.ts'), lines(9));
      writeFileSync(join(root, 'src', 'notes.md'), lines(9));
      expect(oversized(root, 4)).toEqual([
        { file: join('src', 'deep', 'seven.ts'), lines: 7 },
        { file: join('src', 'five.ts'), lines: 5 },
      ]);
      expect(oversized(root)).toEqual([]);
      mkdirSync(join(root, 'lua', 'src'), { recursive: true });
      writeFileSync(join(root, 'lua', 'src', 'x.lua'), lines(6));
      expect(oversized(root, 5, [['lua/src', '.lua']])).toEqual([{ file: join('lua', 'src', 'x.lua'), lines: 6 }]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
