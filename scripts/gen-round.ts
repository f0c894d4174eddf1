/** Writes `lua/round.lua` from complete.lua and claim.lua (`npm run lua:round`; see round-gen.ts). */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { luaDir } from '../src/protocol/scripts.js';
import { generateRound } from './round-gen.js';

const dir = luaDir();
const read = (name: string): string => readFileSync(join(dir, `${name}.lua`), 'utf8');
writeFileSync(join(dir, 'round.lua'), generateRound(read('complete'), read('claim')));
console.log(`wrote ${join(dir, 'round.lua')}`);
