/**
 * Key state expectations (conformance/README.md "Key state expectations"): reads one key with
 * raw commands and matches its type, content, size and TTL.
 */
import type { Redis } from 'iovalkey';
import type { KeyState, Matcher } from './format.js';
import { match, matchUnordered, Mismatch, type Reply } from './match.js';
import type { Scope } from './rewrite.js';

const pairs = (flat: string[]): [string, string][] => {
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
};

/** A zset score as a reply: an integer when it is one, else its text. */
const score = (s: string): Reply => (/^-?\d+$/.test(s) && Number.isSafeInteger(Number(s)) ? Number(s) : s);

async function size(redis: Redis, type: string, key: string): Promise<number> {
  const cmd = { list: 'LLEN', set: 'SCARD', zset: 'ZCARD', hash: 'HLEN', stream: 'XLEN' }[type];
  return Number(await redis.call(cmd!, key));
}

function matchFields(want: Record<string, Matcher>, got: Map<string, string>, exact: boolean, scope: Scope, key: string): void {
  const named = new Set<string>();
  for (const [f, m] of Object.entries(want)) {
    const field = scope.text(f);
    named.add(field);
    const v = got.get(field);
    if (m === null) {
      if (v !== undefined) throw new Mismatch(`${key}.${field}`, null, v, 'field present, expected absent');
      continue;
    }
    if (v === undefined) throw new Mismatch(`${key}.${field}`, m, undefined, 'field absent');
    match(m, v, scope, `${key}.${field}`, true);
  }
  if (exact) {
    const extra = [...got.keys()].filter((f) => !named.has(f));
    if (extra.length > 0) throw new Mismatch(key, Object.keys(want), [...got.keys()], `unexpected fields ${extra.join(', ')}`);
  }
}

/** Checks that `key` is in state `s`; throws `Mismatch`. */
export async function checkState(redis: Redis, key: string, s: KeyState, scope: Scope): Promise<void> {
  const type = String(await redis.call('TYPE', key));
  if (type !== s.type) throw new Mismatch(key, s.type, type, 'wrong key type');
  if (type === 'none') return;
  if (s.ttl) {
    const ttl = Number(await redis.call('PTTL', key));
    if (ttl < s.ttl[0] || ttl > s.ttl[1]) throw new Mismatch(`${key} (PTTL)`, s.ttl, ttl, 'PTTL out of range');
  }
  const n = s.len ?? s.length;
  if (n !== undefined) {
    const got = await size(redis, type, key);
    if (got !== n) throw new Mismatch(`${key} (size)`, n, got, 'wrong number of elements');
  }
  switch (type) {
    case 'string':
      if (s.value !== undefined) match(s.value, (await redis.call('GET', key)) as string, scope, key, true);
      return;
    case 'list':
      if (s.value !== undefined) match(s.value, (await redis.call('LRANGE', key, 0, -1)) as string[], scope, key, true);
      return;
    case 'set':
      if (s.members) matchUnordered(s.members, (await redis.call('SMEMBERS', key)) as string[], scope, key);
      return;
    case 'zset': {
      if (!s.members && !s.scored) return;
      const flat = pairs((await redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')) as string[]);
      if (s.members) match(s.members, flat.map(([m]) => m), scope, key, true);
      if (s.scored) match(s.scored, flat.map(([m, sc]) => [m, score(sc)]), scope, key, true);
      return;
    }
    case 'hash': {
      const want = s.fields ?? s.exact;
      if (!want) return;
      const got = new Map(pairs((await redis.call('HGETALL', key)) as string[]));
      matchFields(want, got, s.exact !== undefined, scope, key);
      return;
    }
    default:
      return;
  }
}
