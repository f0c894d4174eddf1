import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PROTOCOL_VERSION, SCRIPT_NAMES, scripts, sha1 } from '../../src/protocol.js';
import { luaDir } from '../../src/core/scripts.js';

const LUA = luaDir();
const DOC = join(dirname(LUA), 'docs', 'protocol.md');
const START = '<!-- shas:start -->';
const END = '<!-- shas:end -->';
const ROW = /^\|\s*`([^`]+)\.lua`\s*\|\s*`([0-9a-fA-F]{40})`\s*\|/;

/** The exact bytes of lua/<name>.lua. */
const bytesOf = (name: string): Buffer => readFileSync(join(LUA, `${name}.lua`));
const sha1Hex = (b: Buffer): string => createHash('sha1').update(b).digest('hex');

/** Parses the SHA table of docs/protocol.md: script name → sha (lower-case). */
function documentedShas(text: string): Map<string, string> {
  const lines = text.split(/\r?\n/);
  const start = lines.findIndex((l) => l.trim() === START);
  const end = lines.findIndex((l, i) => i > start && l.trim() === END);
  if (start < 0 || end < 0) throw new Error(`docs/protocol.md lacks the ${START} … ${END} block`);
  const out = new Map<string, string>();
  for (const line of lines.slice(start + 1, end)) {
    if (!line.trim().startsWith('| `')) continue; // header, separator, blank lines
    const m = ROW.exec(line.trim());
    if (!m) throw new Error(`malformed SHA row in docs/protocol.md: ${line}`);
    if (out.has(m[1])) throw new Error(`script ${m[1]} is listed twice in docs/protocol.md`);
    out.set(m[1], m[2].toLowerCase());
  }
  return out;
}

describe('the script registry', () => {
  it('has one lua/<name>.lua per script name, and SHA1 of the exact file bytes', () => {
    const loaded = scripts();
    expect([...loaded.keys()].sort()).toEqual([...SCRIPT_NAMES].sort());
    for (const name of SCRIPT_NAMES) {
      const bytes = bytesOf(name);
      const s = loaded.get(name)!;
      expect(s.name).toBe(name);
      expect(Buffer.from(s.source, 'utf8').equals(bytes)).toBe(true);
      expect(s.sha).toBe(sha1Hex(bytes));
      expect(sha1(bytes)).toBe(s.sha);
      expect(s.sha).toMatch(/^[0-9a-f]{40}$/);
    }
  });

  it('every script starts with its header comment naming the protocol version', () => {
    for (const name of SCRIPT_NAMES) {
      expect(bytesOf(name).toString('utf8')).toMatch(new RegExp(`^(#!lua flags=[a-z,-]+\\n)?-- ${name}\\.lua: EchoMQ protocol v${PROTOCOL_VERSION}\\.`));
    }
  });
});

describe('docs/protocol.md records every script SHA', () => {
  it('exists', () => {
    expect(existsSync(DOC)).toBe(true);
  });

  it('lists exactly the scripts of SCRIPT_NAMES, each with the SHA1 of its file', () => {
    const shas = documentedShas(readFileSync(DOC, 'utf8'));
    expect([...shas.keys()].sort()).toEqual([...SCRIPT_NAMES].sort());
    for (const name of SCRIPT_NAMES) {
      expect({ name, sha: shas.get(name) }).toEqual({ name, sha: sha1Hex(bytesOf(name)) });
    }
  });

  it('is the table of lua/manifest.json (npm run docs:shas writes it from there)', () => {
    const manifest = JSON.parse(readFileSync(join(dirname(DOC), '..', 'lua', 'manifest.json'), 'utf8')) as { scripts: { name: string; sha1: string }[] };
    const fromManifest = new Map(manifest.scripts.map((s) => [s.name, s.sha1]));
    expect(documentedShas(readFileSync(DOC, 'utf8'))).toEqual(fromManifest);
  });

  it('the parser reads the agreed format (self-check on a sample)', () => {
    const sample = ['# x', START, '| Script | SHA1 |', '|---|---|', `| \`enqueue.lua\` | \`${'a'.repeat(40)}\` |`, END].join('\n');
    expect([...documentedShas(sample)]).toEqual([['enqueue', 'a'.repeat(40)]]);
    expect(() => documentedShas(sample.replace('a'.repeat(40), 'a'.repeat(39)))).toThrow(/malformed/);
    expect(() => documentedShas('no block')).toThrow(/lacks/);
  });
});
