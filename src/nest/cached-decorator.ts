import { InvalidOptionError } from '../core/errors.js';
import { keySet, refuseUnknownKeys } from '../core/known-keys.js';
import type { CacheEntryOptions } from '../cache/cache-types.js';
import { CACHE_HINTS, ENTRY_OPTION_KEYS } from '../cache/cache-options.js';

/** Metadata key of `@Cached`. */
export const CACHED_METADATA = 'echomq:cached';
/** Metadata key of `@CacheEvict`. */
export const CACHE_EVICT_METADATA = 'echomq:cache-evict';

/** A cache key, fixed or computed from the method's arguments. */
export type KeyOf = string | ((...args: never[]) => string);
/** Tags, fixed or computed from the method's arguments. */
export type TagsOf = readonly string[] | ((...args: never[]) => readonly string[]);

/** Options of `@Cached`. */
export interface CachedOptions extends Omit<CacheEntryOptions, 'tags'> {
  /** The key; default `<Class>.<method>:<JSON of the arguments>`. */
  readonly key?: KeyOf;
  /** Tags of the cached value. */
  readonly tags?: TagsOf;
  /**
   * Who may share the value: `public` (everyone), or a function of the arguments naming the
   * owner (a user or tenant id) that becomes part of the key, so one owner's value is never
   * served to another.
   */
  readonly scope: 'public' | ((...args: never[]) => string);
}

/** Options of `@CacheEvict`. */
export interface CacheEvictOptions {
  /** The namespace of the keys and tags. Default: the cache's. */
  readonly namespace?: string;
  /** Keys to invalidate, fixed or computed from the method's arguments. */
  readonly keys?: readonly string[] | ((...args: never[]) => readonly string[]);
  /** Tags to invalidate, fixed or computed from the method's arguments. */
  readonly tags?: TagsOf;
}

// keySet: a key added to CachedOptions (or to the entry options it takes) and not listed fails to compile.
const CACHED_KEYS = keySet<CachedOptions>({ ...ENTRY_OPTION_KEYS, key: true, scope: true });
const EVICT_KEYS = keySet<CacheEvictOptions>({ namespace: true, keys: true, tags: true });

/**
 * Caches a provider method's (JSON) result in the coherent L1/L2 cache, single-flight. Unknown
 * option keys and a missing scope are refused (`InvalidOptionError`) when the class is defined;
 * only writes metadata. The cache explorer wraps the method at module init.
 */
export function Cached(options: CachedOptions): MethodDecorator {
  refuseUnknownKeys(options, CACHED_KEYS, '@Cached options', { hints: CACHE_HINTS });
  if (!options || (options.scope !== 'public' && typeof options.scope !== 'function')) {
    throw new InvalidOptionError(`@Cached needs a scope: 'public' or a function of the arguments naming the owner`);
  }
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(CACHED_METADATA, options, descriptor.value as object);
    return descriptor;
  };
}

/** Invalidates keys and/or tags after the method succeeds (unknown option keys are refused). Only writes metadata. */
export function CacheEvict(options: CacheEvictOptions): MethodDecorator {
  refuseUnknownKeys(options, EVICT_KEYS, '@CacheEvict options');
  if (!options || (!options.keys && !options.tags)) throw new InvalidOptionError('@CacheEvict needs keys or tags');
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(CACHE_EVICT_METADATA, options, descriptor.value as object);
    return descriptor;
  };
}

/** Reads `@Cached` metadata from a method. */
export const getCachedMetadata = (m: unknown): CachedOptions | undefined =>
  typeof m === 'function' ? (Reflect.getMetadata(CACHED_METADATA, m) as CachedOptions | undefined) : undefined;

/** Reads `@CacheEvict` metadata from a method. */
export const getCacheEvictMetadata = (m: unknown): CacheEvictOptions | undefined =>
  typeof m === 'function' ? (Reflect.getMetadata(CACHE_EVICT_METADATA, m) as CacheEvictOptions | undefined) : undefined;
