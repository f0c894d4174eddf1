/**
 * Rewrites test/unit/public-surface.json, the pinned exported names of each entry point, from the
 * sources (scripts/surface.ts): `npm run surface:pin`, after a deliberate change of the public
 * surface. Prints what changed.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PIN_FILE, pinText, surfaceDrift, surfaceNames, surfaceProgram } from './surface.js';

// dist/scripts/surface-pin.js → the repository.
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const file = join(root, PIN_FILE);
const live = surfaceNames(surfaceProgram(root), root);
const before = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof surfaceDrift>[0]) : {};
writeFileSync(file, pinText(live));
const drift = surfaceDrift(before, live);
console.log(drift.length > 0 ? drift.join('\n') : 'unchanged');
console.log(`wrote ${PIN_FILE}`);
