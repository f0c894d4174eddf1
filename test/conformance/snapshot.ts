/**
 * Snapshots (conformance/README.md "Snapshots"): the type, absolute expiry and canonical content
 * of every key of a scenario's queue, topic and cache namespace, so `unchanged` can assert that a
 * refused call wrote nothing.
 */
import type { Redis } from 'iovalkey';
import { show } from './match.js';
import { NODE_KEYS, type Scope } from './rewrite.js';

/** key -> canonical JSON of {type, expireAt, content}. */
export type Snapshot = Map<string, string>;

async function scan(redis: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = (await redis.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)) as [string, string[]];
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out;
}

const sortedPairs = (flat: string[]): string[][] => {
  const out: string[][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
};

async function content(redis: Redis, key: string, type: string): Promise<unknown> {
  switch (type) {
    case 'string':
      return redis.call('GET', key);
    case 'list':
      return redis.call('LRANGE', key, 0, -1);
    case 'set':
      return ((await redis.call('SMEMBERS', key)) as string[]).sort();
    case 'zset':
      return redis.call('ZRANGE', key, 0, -1, 'WITHSCORES');
    case 'hash':
      return sortedPairs((await redis.call('HGETALL', key)) as string[]);
    case 'stream': {
      const entries = await redis.call('XRANGE', key, '-', '+');
      const groups = ((await redis.call('XINFO', 'GROUPS', key)) as unknown[][]).map((g) => {
        const m = new Map<string, unknown>();
        for (let i = 0; i < g.length; i += 2) m.set(String(g[i]), g[i + 1]);
        return [m.get('name'), m.get('consumers'), m.get('pending'), m.get('last-delivered-id')];
      });
      return { entries, groups };
    }
    default:
      return null;
  }
}

/** The node-lease hashes every live process on the server writes (each renewal rewrites its own field). */
const SHARED_HASHES: ReadonlySet<string> = new Set([NODE_KEYS.nodes, NODE_KEYS.procs]);

/**
 * Records every key of the scenario (plus the node-lease keys when `withNodes`). In the shared
 * node-lease hashes only the fields whose owner (a value's first word) is one of `owners` (the
 * strings the scenario sends) are kept: another process's renewal between two snapshots is not
 * the scenario's write.
 */
export async function takeSnapshot(redis: Redis, scope: Scope, withNodes: boolean, owners?: ReadonlySet<string>): Promise<Snapshot> {
  const keys = new Set<string>();
  for (const name of [scope.Q, scope.T, scope.NS]) for (const k of await scan(redis, `emq:{${name}}:*`)) keys.add(k);
  for (const k of await scan(redis, `emq:{c:${scope.NS}:*`)) keys.add(k);
  if (withNodes) for (const k of Object.values(NODE_KEYS)) keys.add(k);
  const snap: Snapshot = new Map();
  for (const key of [...keys].sort()) {
    const type = String(await redis.call('TYPE', key));
    if (type === 'none') continue;
    const expireAt = await redis.call('PEXPIRETIME', key);
    let c = await content(redis, key, type);
    if (owners && type === 'hash' && SHARED_HASHES.has(key)) c = (c as string[][]).filter(([, v]) => owners.has(v.split(' ')[0]));
    snap.set(key, JSON.stringify({ type, expireAt, content: c }));
  }
  return snap;
}

/** The differences between two snapshots, one line per key ("" when equal). */
export function diffSnapshots(before: Snapshot, after: Snapshot): string {
  const lines: string[] = [];
  for (const [k, v] of before) {
    const now = after.get(k);
    if (now === undefined) lines.push(`  deleted ${k} (was ${show(JSON.parse(v))})`);
    else if (now !== v) lines.push(`  changed ${k}: before ${show(JSON.parse(v))}, after ${show(JSON.parse(now))}`);
  }
  for (const [k, v] of after) if (!before.has(k)) lines.push(`  created ${k}: ${show(JSON.parse(v))}`);
  return lines.join('\n');
}
