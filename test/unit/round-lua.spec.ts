import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { luaDir } from '../../src/core/scripts.js';
import { splitSource } from '../../scripts/lua/header.js';

const built = (name: string): string => readFileSync(join(luaDir(), `${name}.lua`), 'utf8');
const source = (name: string): string => readFileSync(join(luaDir(), 'src', `${name}.lua`), 'utf8');
const count = (text: string, what: string): number => text.split(what).length - 1;

describe('lua/round.lua (built from lua/src/round.lua: @compose complete claim)', () => {
  const round = built('round');

  it('is a composition: its source composes complete and claim, and holds no copy of their bodies', () => {
    expect(source('round')).toMatch(/^-- @compose complete claim$/m);
    for (const name of ['complete', 'claim']) expect(source('round')).not.toContain(splitSource(source(name)).body);
  });

  it('runs each part body exactly once, unchanged, inside its own part function, and the driver in main', () => {
    for (const [name, part] of [['complete', 'complete_part'], ['claim', 'claim_part']] as const) {
      const body = splitSource(source(name)).body;
      expect(body.length).toBeGreaterThan(1000);
      expect(count(round, `local function ${part}(KEYS, ARGV)\n${body}\nend\n`)).toBe(1);
      expect(count(round, body)).toBe(1);
      // The standalone script carries the same body as its main.
      expect(built(name)).toContain(`local function main(KEYS, ARGV)\n${body}\nend\nreturn run(main)\n`);
    }
    expect(round).toContain(`local function main(KEYS, ARGV)\n${splitSource(source('round')).body}\nend\nreturn run(main)\n`);
  });

  it('holds every fragment once, the shared per-call memos (meta, clock) among them', () => {
    const defs = [...round.matchAll(/^local function (\w+)\(/gm)].map((m) => m[1]);
    expect(defs.filter((d, i) => defs.indexOf(d) !== i)).toEqual([]);
    for (const f of ['queue_meta', 'now_ms', 'claim_lanes', 'claim_fair_lanes', 'policy_groups', 'emit', 'checked', 'run']) expect(defs).toContain(f);
    // One meta HMGET and one TIME in the whole file: both parts read through the memos.
    expect(count(round, "redis.pcall('HMGET', key, 'v'")).toBe(1);
    expect(count(round, "redis.call('TIME')")).toBe(1);
    for (const name of ['complete', 'claim']) {
      expect(count(source(name), "'TIME'")).toBe(0);
      expect(count(source(name), "HMGET', KEYS[1]")).toBe(0);
    }
  });
});
