/**
 * Rewrites the SHA1 table of docs/protocol.md (between `<!-- shas:start -->` and
 * `<!-- shas:end -->`) from the bytes of lua/*.lua. Run after changing a script:
 * `npm run docs:shas`. A test checks the table against the files.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { luaDir, scripts } from '../src/protocol/scripts.js';

const doc = join(luaDir(), '..', 'docs', 'protocol.md');
const text = readFileSync(doc, 'utf8');
const rows = [...scripts().values()].map((s) => `| \`${s.name}.lua\` | \`${s.sha}\` |`);
const table = ['<!-- shas:start -->', '| script | SHA1 of its bytes |', '|---|---|', ...rows, '<!-- shas:end -->'].join('\n');
const next = text.replace(/<!-- shas:start -->[\s\S]*?<!-- shas:end -->/, table);
if (next === text && !text.includes(table)) throw new Error('docs/protocol.md has no shas block');
writeFileSync(doc, next);
console.log(rows.join('\n'));
