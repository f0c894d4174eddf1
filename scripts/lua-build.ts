/**
 * `npm run lua:build`: assembles `lua/src/*.lua` with `lua/lib/*.lua` into the committed
 * `lua/<name>.lua` bytes and `lua/manifest.json` (scripts/lua/build.ts). `--check` writes
 * nothing and exits 1 when a committed file differs from a fresh build (a test does the same).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { luaDir } from '../src/core/scripts.js';
import { build, manifestText } from './lua/build.js';

/** The `*.lua` files of a folder, by name without the extension. */
export function readLuaFolder(dir: string): Map<string, string> {
  if (!existsSync(dir)) return new Map();
  return new Map(
    readdirSync(dir)
      .filter((f) => f.endsWith('.lua'))
      .sort()
      .map((f) => [basename(f, '.lua'), readFileSync(join(dir, f), 'utf8')]),
  );
}

/** Builds from the repository's lua/ folder; answers each output path with its fresh text. */
export function freshBuild(dir = luaDir()): Map<string, string> {
  const out = build({ sources: readLuaFolder(join(dir, 'src')), fragments: readLuaFolder(join(dir, 'lib')) });
  const files = new Map<string, string>();
  for (const [name, text] of out.scripts) files.set(join(dir, `${name}.lua`), text);
  files.set(join(dir, 'manifest.json'), manifestText(out.manifest));
  return files;
}

const isMain = process.argv[1] !== undefined && basename(process.argv[1]) === 'lua-build.js';
if (isMain) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [path, text] of freshBuild()) {
    const now = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    if (now === text) continue;
    stale++;
    if (check) console.error(`stale: ${path}`);
    else writeFileSync(path, text);
  }
  console.log(check ? `${stale} stale file(s)` : `wrote ${stale} file(s)`);
  if (check && stale > 0) process.exit(1);
}
