import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { Json } from '../core/codec.js';
import type { CacheApi } from '../cache/cache-types.js';
import { CacheService } from '../cache/cache-service.js';
import { throughCache, type CacheBreaker } from '../cache/fallthrough.js';
import { findDecoratedMethods } from './method-scanner.js';
import { getCacheEvictMetadata, getCachedMetadata, type CacheEvictOptions, type CachedOptions } from './cached-decorator.js';

type Method = (...args: never[]) => unknown;
const resolve = <T>(v: T | ((...args: never[]) => T) | undefined, args: never[]): T | undefined =>
  typeof v === 'function' ? (v as (...a: never[]) => T)(...args) : v;

/**
 * Wraps `@Cached` and `@CacheEvict` provider methods at module init (no I/O here): a cached
 * method answers through `getOrLoad` (L1, L2, one load per key at a time) — or, when the cache
 * is unavailable, by calling the method uncached (the service's breaker then skips the cache
 * for a few seconds); an evicting method invalidates its keys and tags once it has succeeded.
 */
@Injectable()
export class CacheExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly cache: CacheService,
  ) {}

  onModuleInit(): void {
    const api = this.cache as unknown as CacheApi;
    const read = (m: unknown) => {
      const cached = getCachedMetadata(m);
      const evict = getCacheEvictMetadata(m);
      return cached || evict ? { cached, evict } : undefined;
    };
    for (const { meta, bound, name, instance, key } of findDecoratedMethods(this.discovery, this.scanner, read)) {
      let fn = bound as Method;
      if (meta.cached) fn = cachedMethod(api, this.cache.breaker, fn, meta.cached, name);
      if (meta.evict) fn = evictingMethod(api, fn, meta.evict);
      instance[key] = fn;
    }
  }
}

function cachedMethod(api: CacheApi, breaker: CacheBreaker, fn: Method, o: CachedOptions, label: string): Method {
  return (async (...args: never[]) => {
    const owner = o.scope === 'public' ? 'public' : `owner=${o.scope(...args)}`;
    const key = `${owner}:${resolve(o.key, args) ?? `${label}:${JSON.stringify(args)}`}`;
    const { key: _k, scope: _s, tags, ...entry } = o;
    const r = await throughCache(api, breaker, key, async () => (await fn(...args)) as Json | undefined, { ...entry, tags: resolve(tags, args) });
    return r.value;
  }) as Method;
}

function evictingMethod(api: CacheApi, fn: Method, o: CacheEvictOptions): Method {
  return (async (...args: never[]) => {
    const result = await fn(...args);
    const ns = { namespace: o.namespace };
    for (const key of resolve(o.keys, args) ?? []) await api.invalidate(key, ns);
    for (const tag of resolve(o.tags, args) ?? []) await api.invalidateTag(tag, ns);
    return result;
  }) as Method;
}
