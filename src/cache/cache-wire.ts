import type { CacheKeys } from '../protocol/keys.js';
import { PROTOCOL_VERSION, runScript, type ScriptCall, type ScriptClient } from '../protocol/scripts.js';

/** The reply of `cache-set.lua`. */
export interface SetReply {
  /** True when the entry was written; false when it holds the same or a newer version. */
  readonly written: boolean;
  /** The version the entry holds when the write was refused. */
  readonly stored?: string;
}

/** One cache-set call, already encoded for the wire. */
export interface WireEntry {
  /** The writer's version (`ver…`), minted when its load began. */
  readonly ver: string;
  /** The value's JSON text; `""` = a cached miss. */
  readonly json: string;
  /** Fresh time in ms, jitter applied. */
  readonly ttlMs: number;
  /** Grace in ms past the fresh time (stale but servable). */
  readonly graceMs: number;
  readonly maxBytes: number;
  readonly tags: readonly string[];
}

/**
 * Typed wrappers of the cache scripts. Every key comes from `CacheKeys`; services never
 * assemble keys.
 */
export const cacheWire = {
  /** `cache-set.lua`: writes the entry unless it holds the same or a newer version. */
  async set(c: ScriptClient, k: CacheKeys, key: string, e: WireEntry): Promise<SetReply> {
    const r = (await runScript(c, 'cache-set', [k.entry(key)], [
      PROTOCOL_VERSION, e.ver, e.json, e.ttlMs, e.maxBytes, e.tags.join(' '), e.graceMs,
    ])) as [number, string?];
    return r[0] === 1 ? { written: true } : { written: false, stored: r[1] };
  },

  /** `cache-invalidate.lua`: tombstones the entry at `ver`; false when it held a newer version. */
  async invalidate(c: ScriptClient, k: CacheKeys, key: string, ver: string, tombstoneMs: number): Promise<boolean> {
    return (await runScript(c, 'cache-invalidate', [k.entry(key)], [PROTOCOL_VERSION, ver, tombstoneMs])) === 1;
  },

  /** `cache-lease.lua` take: true when this token now holds the fill lease of `key`. */
  async takeLease(c: ScriptClient, k: CacheKeys, key: string, token: string, leaseMs: number): Promise<boolean> {
    return (await runScript(c, 'cache-lease', [k.lease(key)], [PROTOCOL_VERSION, 'take', token, leaseMs])) === 1;
  },

  /** `cache-lease.lua` drop: releases the lease if this token holds it. */
  async dropLease(c: ScriptClient, k: CacheKeys, key: string, token: string): Promise<boolean> {
    return (await runScript(c, 'cache-lease', [k.lease(key)], [PROTOCOL_VERSION, 'drop', token, 1])) === 1;
  },
};

/** What one atomic read of an L2 entry found. */
export type L2Read =
  | { readonly state: 'none' | 'tombstone'; readonly leased: boolean }
  | {
      readonly state: 'live';
      readonly leased: boolean;
      readonly ver: string;
      /** JSON text; undefined for a cached miss. */
      readonly json: string | undefined;
      /** ms the entry stays fresh (0 = stale, within its grace). */
      readonly freshMs: number;
      /** ms the entry stays servable (fresh + grace left). */
      readonly liveMs: number;
    };

/**
 * Reads an entry in one command (`cache-get.lua`: its fields, its PTTL and, when asked, whether
 * its fill lease is held — all on the entry's slot). Freshness comes from the server's clock
 * only: fresh while PTTL > g.
 */
export async function readEntry(client: ScriptClient, k: CacheKeys, key: string, withLease = false): Promise<L2Read> {
  const r = (await runScript(client, 'cache-get', [k.entry(key), k.lease(key)], [PROTOCOL_VERSION, withLease ? '1' : '0'])) as (
    | string
    | number
    | null
  )[];
  const [v, d, n, x, g] = r.slice(0, 5).map((f) => (typeof f === 'string' ? f : null));
  const pttl = Number(r[5]);
  const leased = Number(r[6]) === 1;
  if (!v || pttl === -2) return { state: 'none', leased };
  if (x === '1' || (d === null && n !== '1')) return { state: 'tombstone', leased };
  const liveMs = pttl < 0 ? Number.MAX_SAFE_INTEGER : pttl;
  const freshMs = Math.max(0, liveMs - (Number(g) || 0));
  return { state: 'live', leased, ver: v, json: d ?? undefined, freshMs, liveMs };
}

/** A `cache-invalidate.lua` call, for pipelines (`invalidateTag`). */
export function invalidateCall(k: CacheKeys, key: string, ver: string, tombstoneMs: number): ScriptCall<boolean> {
  return { name: 'cache-invalidate', keys: [k.entry(key)], args: [PROTOCOL_VERSION, ver, tombstoneMs], parse: (r) => r === 1 };
}

/** The reply of `cache-tag.lua` add. */
export interface TagReply {
  /** True when the key was recorded in every tag's index; false when a tag's mark refused it. */
  readonly recorded: boolean;
  /** The mark (an invalidateTag's version) at or after the writer's version. */
  readonly mark?: string;
}

/** Keys of `cache-tag.lua` add: each tag's index and mark, in pairs. */
const tagPairs = (k: CacheKeys, tags: readonly string[]): string[] => tags.flatMap((t) => [k.tag(t), k.mark(t)]);

/** `cache-tag.lua` add: records `key` (living `lifeMs` from now) in its tags' indexes, unless a tag was invalidated at or after `ver`. */
export async function addToTags(c: ScriptClient, k: CacheKeys, key: string, tags: readonly string[], ver: string, lifeMs: number): Promise<TagReply> {
  const r = (await runScript(c, 'cache-tag', tagPairs(k, tags), [PROTOCOL_VERSION, 'add', ver, key, lifeMs])) as [number, string?];
  return r[0] === 1 ? { recorded: true } : { recorded: false, mark: r[1] };
}

/** `cache-tag.lua` mark: fences writes older than `ver` out of `tag` for `windowMs`; false when a newer mark is held. */
export async function markTag(c: ScriptClient, k: CacheKeys, tag: string, ver: string, windowMs: number): Promise<boolean> {
  return (await runScript(c, 'cache-tag', [k.mark(tag)], [PROTOCOL_VERSION, 'mark', ver, windowMs])) === 1;
}
