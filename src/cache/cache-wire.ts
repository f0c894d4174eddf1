import type { CacheKeys } from '../core/keys.js';
import { PROTOCOL_VERSION, call, callPipeline, runScript, type ScriptCall, type ScriptClient } from '../core/scripts.js';

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
  set(c: ScriptClient, k: CacheKeys, key: string, e: WireEntry): Promise<SetReply> {
    return call(c, setCall(k, key, e));
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

/** A `cache-set.lua` call (see `cacheWire.set`), for pipelines (`set` sends its announcement behind it). */
export function setCall(k: CacheKeys, key: string, e: WireEntry): ScriptCall<SetReply> {
  return {
    name: 'cache-set',
    keys: [k.entry(key)],
    args: [PROTOCOL_VERSION, e.ver, e.json, e.ttlMs, e.maxBytes, e.tags.join(' '), e.graceMs],
    parse: (reply) => {
      const r = reply as [number, string?];
      return r[0] === 1 ? { written: true } : { written: false, stored: r[1] };
    },
  };
}

/** What `writeThenAnnounce` does once the writes succeeded, and whether to announce them. */
export interface AfterWrites<T> {
  /** Runs once every write succeeded, before any announcement failure is thrown (L1 follows L2). */
  readonly written?: (replies: readonly T[]) => void;
  /** Without a pipeline: announce only when this holds (default: always). */
  readonly announceIf?: (replies: readonly T[]) => boolean;
}

/**
 * Runs `writes` (cache-set or cache-invalidate calls), then their announcements. `pipelined`
 * (one connection to a standalone Valkey): all in one write, the announcements behind the
 * writes, which Valkey therefore runs first — one round trip, and no node can apply an
 * announcement before its write is in L2; the announcements go out even when a write is
 * refused (harmless: they drop only L1 copies older than what L2 then holds). Otherwise (a
 * cluster): the writes concurrently, then the announcements in order when `announceIf` holds.
 * Rejects with the first failure (`written` has run when only an announcement failed);
 * resolves to the writes' replies.
 */
export async function writeThenAnnounce<T>(
  c: ScriptClient,
  writes: readonly ScriptCall<T>[],
  announce: readonly ScriptCall<string>[],
  pipelined: boolean,
  after: AfterWrites<T> = {},
): Promise<T[]> {
  if (!pipelined) {
    const replies = await Promise.all(writes.map((w) => call(c, w)));
    after.written?.(replies);
    if (after.announceIf?.(replies) ?? true) for (const a of announce) await call(c, a);
    return replies;
  }
  const settled = await callPipeline(c, [...writes, ...announce]);
  const failedWrite = settled.slice(0, writes.length).find((s) => s.status === 'rejected');
  if (failedWrite) throw failedWrite.reason;
  const replies = settled.slice(0, writes.length).map((s) => (s as PromiseFulfilledResult<T>).value);
  after.written?.(replies);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return replies;
}

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

/** One entry to read: its namespace's keys, its key, and whether to report its fill lease. */
export interface EntryRead {
  readonly k: CacheKeys;
  readonly key: string;
  readonly withLease: boolean;
}

/** Fields of one entry in a `cache-get.lua` reply: `{ v, d, n, x, g, pttl, leased }`. */
const GROUP = 7;

/**
 * The read of 1..N entries in one command (`cache-get.lua`: each entry's fields, its PTTL and,
 * when asked, whether its fill lease is held), as one call. N > 1 only where every key is on
 * one node (a standalone Valkey: `ReadBatch`). Freshness comes from the server's clock only:
 * fresh while PTTL > g.
 */
export function readEntriesCall(reads: readonly EntryRead[]): ScriptCall<L2Read[]> {
  const keys: string[] = new Array<string>(reads.length * 2);
  let flags = '';
  for (let i = 0; i < reads.length; i++) {
    const r = reads[i];
    keys[2 * i] = r.k.entry(r.key);
    keys[2 * i + 1] = r.k.lease(r.key);
    flags += r.withLease ? '1' : '0';
  }
  return {
    name: 'cache-get',
    keys,
    args: [PROTOCOL_VERSION, flags],
    parse: (reply) => {
      const r = reply as (string | number | null)[];
      if (!Array.isArray(r) || r.length !== reads.length * GROUP) throw new Error(`cache-get replied ${Array.isArray(r) ? r.length : typeof r} fields for ${reads.length} entries`);
      const out: L2Read[] = new Array<L2Read>(reads.length);
      for (let i = 0; i < reads.length; i++) out[i] = parseEntry(r, i * GROUP);
      return out;
    },
  };
}

/** The read of one entry (see `readEntriesCall`). */
export function readEntryCall(k: CacheKeys, key: string, withLease = false): ScriptCall<L2Read> {
  const c = readEntriesCall([{ k, key, withLease }]);
  return { ...c, parse: (reply) => c.parse(reply)[0] };
}

/** Reads an entry in one command (see `readEntriesCall`). */
export function readEntry(client: ScriptClient, k: CacheKeys, key: string, withLease = false): Promise<L2Read> {
  return call(client, readEntryCall(k, key, withLease));
}

/** One entry's group of a `cache-get.lua` reply (at `at`) as an `L2Read`. */
function parseEntry(r: readonly (string | number | null)[], at: number): L2Read {
  const str = (i: number): string | null => {
    const x = r[at + i];
    return typeof x === 'string' ? x : null;
  };
  const v = str(0);
  const d = str(1);
  const pttl = Number(r[at + 5]);
  const leased = Number(r[at + 6]) === 1;
  if (!v || pttl === -2) return { state: 'none', leased };
  if (str(3) === '1' || (d === null && str(2) !== '1')) return { state: 'tombstone', leased };
  const liveMs = pttl < 0 ? Number.MAX_SAFE_INTEGER : pttl;
  const freshMs = Math.max(0, liveMs - (Number(str(4)) || 0));
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
