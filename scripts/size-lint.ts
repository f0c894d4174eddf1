/**
 * The size lint (issue 36), replacing the old 300-line cap: a source file (`src/**.ts`,
 * `lua/src/*.lua`, `lua/lib/*.lua`) over `SOFT_LIMIT` lines is listed as a warning (split it
 * when you next touch it, if it holds more than one concept); one over `HARD_LIMIT` fails
 * `test/unit/size-lint.spec.ts`. Pure: it reads the folders it is given.
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

/** The folders linted and the file ending each holds. */
export const LINTED: readonly (readonly [dir: string, ext: string])[] = [
  ['src', '.ts'],
  ['lua/src', '.lua'],
  ['lua/lib', '.lua'],
];

/** Every file ending in `ext` under `dir` (repository-relative; declaration files excluded), sorted. */
function sourceFiles(root: string, dir: string, ext: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...sourceFiles(root, rel, ext));
    else if (name.endsWith(ext) && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out.sort();
}

/** The linted files (`folders`, under `root`) with more than `limit` lines, longest first. */
export function oversized(root: string, limit = SOFT_LIMIT, folders: readonly (readonly [string, string])[] = [['src', '.ts']]): Oversized[] {
  return folders
    .flatMap(([dir, ext]) => sourceFiles(root, dir, ext))
    .map((file) => ({ file, lines: lineCount(readFileSync(join(root, file), 'utf8')) }))
    .filter((f) => f.lines > limit)
    .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
}
