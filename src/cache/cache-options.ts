import { DEFAULT_MAX_PAYLOAD_BYTES, resolveCodec, type PayloadCodec } from '../core/codec.js';
import { InvalidOptionError } from '../core/errors.js';
import { keySet, refuseUnknownKeys as knownKeys } from '../core/known-keys.js';
import { assertCacheKey, type CacheKeys } from '../core/keys.js';
import type { CacheEntryOptions, CacheOptions } from './cache-types.js';

/** Longest TTL or grace the scripts accept: ten years in ms. */
export const MAX_TTL_MS = 315_360_000_000;
/** Longest tombstone window the scripts accept: one day. */
export const MAX_TOMBSTONE_MS = 86_400_000;
/** Longest fill lease the scripts accept: ten minutes. */
export const MAX_LEASE_MS = 600_000;
/** Most tags on one entry. */
export const MAX_TAGS = 100;

/** The cache's options with every default applied. */
export interface ResolvedCacheOptions {
  readonly namespace: string;
  readonly ttlMs: number;
  readonly l1MaxEntries: number;
  readonly l1MaxBytes: number;
  readonly maxValueBytes: number;
  readonly tombstoneMs: number;
  readonly pollMs: number;
  readonly clockSkewMs: number;
  readonly codec: PayloadCodec;
}

/** One call's entry options with every default applied. */
export interface ResolvedEntryOptions {
  readonly ttlMs: number;
  readonly jitter: number;
  readonly graceMs: number;
  readonly negativeTtlMs: number;
  readonly tags: readonly string[];
  readonly fillLease: boolean;
  readonly fillLeaseMs: number;
}

/** Longest clock skew allowance between nodes: one minute. */
export const MAX_CLOCK_SKEW_MS = 60_000;

/** Every key of `CacheOptions`, as a record: options that extend them (the module's) spread it. */
export const CACHE_OPTION_KEYS: { readonly [K in keyof Required<CacheOptions>]: true } = {
  namespace: true,
  ttlMs: true,
  l1MaxEntries: true,
  l1MaxBytes: true,
  maxValueBytes: true,
  tombstoneMs: true,
  pollMs: true,
  clockSkewMs: true,
  codec: true,
};
const SERVICE_KEYS = keySet<CacheOptions>(CACHE_OPTION_KEYS);
/** Other caches' names (cache-manager, lru-cache), refused with what EchoMQ calls them. */
export const CACHE_HINTS: Readonly<Record<string, string>> = {
  ttl: 'ttlMs: milliseconds, always (cache-manager took seconds before v5)',
  max: 'l1MaxEntries: the in-process copies kept',
  store: 'not offered: Valkey is the store',
};
/** Every key of `CacheEntryOptions`, as a record: options that extend them (`@Cached`'s) spread it. */
export const ENTRY_OPTION_KEYS: { readonly [K in keyof Required<CacheEntryOptions>]: true } = {
  namespace: true,
  ttlMs: true,
  jitter: true,
  graceMs: true,
  negativeTtlMs: true,
  tags: true,
  fillLease: true,
  fillLeaseMs: true,
};
/** The keys of `CacheEntryOptions` (anything else is refused). */
export const ENTRY_KEYS = keySet<CacheEntryOptions>(ENTRY_OPTION_KEYS);

/**
 * Checks a list of tags (or keys: `what`) before any I/O: an array of at most `MAX_TAGS` legal
 * names (the cache key grammar). Throws `InvalidOptionError` for anything but an array, `InvalidNameError` for a bad tag.
 */
export function checkTags(tags: unknown, what = 'tags'): readonly string[] {
  if (!Array.isArray(tags) || tags.length > MAX_TAGS) throw new InvalidOptionError(`${what} must be an array of at most ${MAX_TAGS} ${what}`);
  for (const t of tags as unknown[]) assertCacheKey(t);
  return tags as readonly string[];
}

/** Checks a number option; integer options are checked for integrality too. */
function num(v: number | undefined, dflt: number, what: string, lo: number, hi: number, integer = true): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi || (integer && !Number.isInteger(v))) {
    throw new InvalidOptionError(`${what} must be ${integer ? 'an integer' : 'a number'} in ${lo}..${hi}, got ${String(v)}`);
  }
  return v;
}

/** Resolves and validates the service options; unknown keys are refused (throws `InvalidOptionError`). */
export function resolveCacheOptions(o: CacheOptions): ResolvedCacheOptions {
  knownKeys(o, SERVICE_KEYS, 'cache options', { hints: CACHE_HINTS });
  return {
    namespace: o.namespace ?? 'default',
    ttlMs: num(o.ttlMs, 60_000, 'cache ttlMs', 1, MAX_TTL_MS),
    l1MaxEntries: num(o.l1MaxEntries, 10_000, 'cache l1MaxEntries', 0, 100_000_000),
    l1MaxBytes: num(o.l1MaxBytes, 64 * 1024 * 1024, 'cache l1MaxBytes', 0, Number.MAX_SAFE_INTEGER),
    maxValueBytes: num(o.maxValueBytes, DEFAULT_MAX_PAYLOAD_BYTES, 'cache maxValueBytes', 1, 536_870_912),
    tombstoneMs: num(o.tombstoneMs, 10_000, 'cache tombstoneMs', 1, MAX_TOMBSTONE_MS),
    pollMs: num(o.pollMs, 1000, 'cache pollMs', 1, 3_600_000),
    clockSkewMs: num(o.clockSkewMs, 0, 'cache clockSkewMs', 0, MAX_CLOCK_SKEW_MS),
    codec: resolveCodec(o.codec, 'cache codec'),
  };
}

/**
 * Resolves and validates one call's entry options against the service defaults (unknown keys
 * are refused). Tags are
 * checked by the key grammar of `keys` (throws `InvalidNameError`); numbers throw
 * `InvalidOptionError`. Runs before any I/O.
 */
export function resolveEntryOptions(base: ResolvedCacheOptions, o: CacheEntryOptions | undefined, keys: CacheKeys): ResolvedEntryOptions {
  knownKeys(o, ENTRY_KEYS, 'cache entry options', { hints: CACHE_HINTS });
  if (o?.fillLease !== undefined && typeof o.fillLease !== 'boolean') throw new InvalidOptionError('fillLease must be a boolean');
  const tags = checkTags(o?.tags ?? []);
  for (const t of tags) keys.tag(t);
  return {
    ttlMs: Math.ceil(num(o?.ttlMs, base.ttlMs, 'ttlMs', Number.MIN_VALUE, MAX_TTL_MS, false)),
    jitter: num(o?.jitter, 0.1, 'jitter', 0, 1, false),
    graceMs: Math.ceil(num(o?.graceMs, 0, 'graceMs', 0, MAX_TTL_MS, false)),
    negativeTtlMs: Math.ceil(num(o?.negativeTtlMs, 0, 'negativeTtlMs', 0, MAX_TTL_MS, false)),
    tags: [...new Set(tags)],
    fillLease: o?.fillLease === true,
    fillLeaseMs: num(o?.fillLeaseMs, 2000, 'fillLeaseMs', 1, MAX_LEASE_MS),
  };
}

/** The fresh time of one write: `ttl · (1 + jitter · random)`, whole ms, within the script's bound. */
export function jittered(ttlMs: number, jitter: number, random: () => number = Math.random): number {
  return Math.min(MAX_TTL_MS, Math.max(1, Math.ceil(ttlMs * (1 + jitter * random()))));
}
