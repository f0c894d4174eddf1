/**
 * Rewrites the SHA1 table of docs/protocol.md (between `<!-- shas:start -->` and
 * `<!-- shas:end -->`) from `lua/manifest.json`, which the Lua build writes with the SHA1 of each
 * built file. Run after `npm run lua:build`: `npm run docs:shas`. Tests check the table against
 * the files and the manifest against a fresh build.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { luaDir } from '../src/core/scripts.js';
import type { Manifest } from './lua/build.js';

const doc = join(luaDir(), '..', 'docs', 'protocol.md');
const text = readFileSync(doc, 'utf8');
const manifest = JSON.parse(readFileSync(join(luaDir(), 'manifest.json'), 'utf8')) as Manifest;
const rows = manifest.scripts.map((s) => `| \`${s.name}.lua\` | \`${s.sha1}\` |`);
const table = ['<!-- shas:start -->', '| script | SHA1 of its bytes |', '|---|---|', ...rows, '<!-- shas:end -->'].join('\n');
const next = text.replace(/<!-- shas:start -->[\s\S]*?<!-- shas:end -->/, table);
if (next === text && !text.includes(table)) throw new Error('docs/protocol.md has no shas block');
writeFileSync(doc, next);
console.log(rows.join('\n'));
