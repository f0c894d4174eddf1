import type { CacheKeys } from '../protocol/keys.js';
import { PROTOCOL_VERSION, runScript, type ScriptClient } from '../protocol/scripts.js';

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
