/**
 * The size lint of `src/` (issue 36), replacing the old informal 300-line cap: a `.ts` file over
 * `SOFT_LIMIT` lines is listed as a warning (split it when you next touch it); one over
 * `HARD_LIMIT` fails `test/unit/size-lint.spec.ts`. Pure: it reads the files under `src/` only.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Above this many lines a file is listed (a warning). */
export const SOFT_LIMIT = 400;
/** Above this many lines a file fails the lint. */
export const HARD_LIMIT = 600;

/** One file over the limit: repository-relative path and its line count. */
export interface Oversized {
  readonly file: string;
  readonly lines: number;
}

/** The number of lines of a text (as `wc -l` counts them, plus an unterminated last line). */
export function lineCount(text: string): number {
  if (text === '') return 0;
  const n = text.split('\n').length;
  return text.endsWith('\n') ? n - 1 : n;
}

/** Every `.ts` file under `dir` (repository-relative; declaration files excluded), sorted. */
function tsFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...tsFiles(root, rel));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out.sort();
}

/** The `.ts` files under `root`/src with more than `limit` lines, longest first. */
export function oversized(root: string, limit = SOFT_LIMIT): Oversized[] {
  return tsFiles(root, 'src')
    .map((file) => ({ file, lines: lineCount(readFileSync(join(root, file), 'utf8')) }))
    .filter((f) => f.lines > limit)
    .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
}
