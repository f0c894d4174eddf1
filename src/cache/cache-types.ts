import type { Json, PayloadCodec } from '../core/codec.js';

/** Options of one cached read or write. */
export interface CacheEntryOptions {
  /** Namespace (key grammar). Default: the service's default namespace ("default"). */
  readonly namespace?: string;
  /** Time to live in ms (> 0). Default: the service's `ttlMs`. */
  readonly ttlMs?: number;
  /** Random spread added to the TTL, as a fraction (0..1). Default 0.1 (cohorts never expire in step). */
  readonly jitter?: number;
  /** How long past expiry a stale value may still be served while one refresh runs, or when the loader fails (ms). Default 0. */
  readonly graceMs?: number;
  /** Cache a loader's `undefined`/`null` result for this long (ms); 0 (default) = never cache misses. */
  readonly negativeTtlMs?: number;
  /** Tags, for `invalidateTag`. */
  readonly tags?: readonly string[];
  /** Across processes, let one node load while the others wait briefly or serve stale (default false). */
  readonly fillLease?: boolean;
  /** How long the fill lease is held, and how long the others poll L2 before loading themselves (ms, 1..600,000). Default 2000. */
  readonly fillLeaseMs?: number;
}

/** Options of the cache, under `EchoMqModuleOptions.cache`. */
export interface CacheOptions {
  /** Default namespace. Default "default". */
  readonly namespace?: string;
  /** Default TTL in ms. Default 60,000. */
  readonly ttlMs?: number;
  /** L1 bound: entries. Default 10,000. */
  readonly l1MaxEntries?: number;
  /** L1 bound: bytes of JSON. Default 64 MiB. */
  readonly l1MaxBytes?: number;
  /** Largest value (JSON bytes). Default 512 KiB. */
  readonly maxValueBytes?: number;
  /** How long an invalidation's tombstone refuses older writes (ms). Default 10,000. */
  readonly tombstoneMs?: number;
  /** Poll period of the invalidation log, the staleness bound when a signal is missed (ms). Default 1000. */
  readonly pollMs?: number;
  /**
   * How far (ms, 0..60,000) another node's clock may lag this one's: a fill's version is taken
   * this much earlier, so a write minted on a lagging node after the load began still wins.
   * Default 0 (clocks agree to the millisecond, e.g. NTP on one network).
   */
  readonly clockSkewMs?: number;
  /**
   * `strict` (default): a value JSON would silently change (a `Date` would read back as a
   * string, `NaN` as null, a `Map` as `{}`, a class instance as a plain object) is refused by
   * `set`, `getOrLoad` and `@Cached` naming its path; `json`: JSON's conversions are accepted
   * (docs/queue.md, "Payloads").
   */
  readonly codec?: PayloadCodec;
}

/** Counters readable from the service. */
export interface CacheStats {
  /** Calls served fresh from L1. */
  readonly l1Hits: number;
  /** Flights served fresh from L2. */
  readonly l2Hits: number;
  /** Flights that found no live value. */
  readonly misses: number;
  /** Loader runs. */
  readonly loads: number;
  /** Values served past their TTL within their grace, while a refresh ran. */
  readonly staleServed: number;
  /** Keys invalidated (by `invalidate` and `invalidateTag`). */
  readonly invalidations: number;
  /** L1 entries pushed out by its bounds (`l1MaxEntries`, `l1MaxBytes`), least recently used first. */
  readonly l1Evictions: number;
  /** Calls that ran their loader uncached because the cache (L2) was unavailable. */
  readonly bypasses: number;
}

/** A loader for `getOrLoad`. */
export type Loader<T> = () => Promise<T> | T;

/** The cache surface the Nest layer (decorators, interceptor) relies on. */
export interface CacheApi {
  /** The value of `key`, running `loader` on a miss (single-flight). */
  getOrLoad<T extends Json | undefined>(key: string, loader: Loader<T>, opts?: CacheEntryOptions): Promise<T>;
  /** The fresh value of `key`, or undefined. */
  get<T extends Json>(key: string, opts?: { namespace?: string }): Promise<T | undefined>;
  /** Writes `value` under a new version and tells the other processes. */
  set<T extends Json>(key: string, value: T, opts?: CacheEntryOptions): Promise<void>;
  /** Tombstones `key` everywhere. */
  invalidate(key: string, opts?: { namespace?: string }): Promise<void>;
  /** Invalidates every key carrying `tag`. */
  invalidateTag(tag: string, opts?: { namespace?: string }): Promise<void>;
  /** A snapshot of the counters. */
  stats(): CacheStats;
}
