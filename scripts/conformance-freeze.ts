/**
 * `npm run conformance:freeze`: records in `conformance/frozen.json` a hash of every scenario of
 * `conformance/scenarios/` not recorded yet, under the current protocol version. Recorded hashes
 * are never rewritten: a test fails when a recorded scenario changes (docs/protocol.md §12), so
 * a change that breaks a scenario of a version needs a new version, not an edit.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { luaDir, PROTOCOL_VERSION } from '../src/core/scripts.js';

/** `conformance/frozen.json`: per version, `<file>#<scenario name>` -> hash. */
export type Frozen = Record<string, Record<string, string>>;

/** The repository's conformance folder. */
export const conformanceDir = (): string => join(luaDir(), '..', 'conformance');

/** The hash recorded for a scenario: SHA1 of its JSON text (key order as the file gives it). */
export const scenarioHash = (raw: unknown): string => createHash('sha1').update(JSON.stringify(raw)).digest('hex');

/** Every scenario of the current files, by `<file>#<name>`, with its hash. */
export function currentScenarios(dir = join(conformanceDir(), 'scenarios')): Map<string, string> {
  const out = new Map<string, string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const parsed = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { scenarios: { name: string }[] };
    for (const s of parsed.scenarios) out.set(`${file}#${s.name}`, scenarioHash(s));
  }
  return out;
}

/** The recorded hashes (empty when the file does not exist). */
export function readFrozen(path = join(conformanceDir(), 'frozen.json')): Frozen {
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Frozen) : {};
}

const isMain = process.argv[1] !== undefined && basename(process.argv[1]) === 'conformance-freeze.js';
if (isMain) {
  const path = join(conformanceDir(), 'frozen.json');
  const frozen = readFrozen(path);
  const mine = (frozen[PROTOCOL_VERSION] ??= {});
  let added = 0;
  for (const [key, hash] of currentScenarios()) {
    if (mine[key] === undefined) {
      mine[key] = hash;
      added++;
    }
  }
  const sorted = Object.fromEntries(Object.entries(frozen).map(([v, m]) => [v, Object.fromEntries(Object.entries(m).sort())]));
  writeFileSync(path, `${JSON.stringify(sorted, null, 2)}\n`);
  console.log(`recorded ${added} scenario(s) under protocol ${PROTOCOL_VERSION}`);
}
