/**
 * Where a run's report goes. The committed report — `docs/benchmarks.md` with `bench/results.json`
 * (`npm run bench`), `docs/bounds.md` (`bench:bounds`), `docs/benchmarks-ab.md` (`bench:ab`) — is
 * refreshed deliberately, with `--write`. Without it a run writes the same files under
 * `bench/out/` (gitignored), to read or to diff against the committed ones.
 */
import { mkdirSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** An absolute path from one relative to the repository root (this module runs from `bench/dist/`). */
export const repoPath = (rel: string): string => fileURLToPath(new URL(`../../${rel}`, import.meta.url));

/** Whether this run refreshes the committed report (`--write`). */
export const writesCommitted = (): boolean => process.argv.includes('--write');

/**
 * Where a report file goes: `committed` (relative to the repository root) under `--write`, else
 * `bench/out/` and its base name. Creates the folder; returns the path relative to the root and
 * the absolute one.
 */
export function reportPath(committed: string, write = writesCommitted()): { rel: string; abs: string } {
  const rel = write ? committed : `bench/out/${basename(committed)}`;
  const abs = repoPath(rel);
  mkdirSync(dirname(abs), { recursive: true });
  return { rel, abs };
}

/** The line a run prints after writing: where the files went, and how to refresh the committed ones. */
export function wroteLine(rels: readonly string[], write = writesCommitted()): string {
  return write ? `wrote ${rels.join(' and ')}` : `wrote ${rels.join(' and ')} (the committed report is refreshed with --write)`;
}
