import { createHash } from 'node:crypto';
import { Injectable, Logger, SetMetadata, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { defer, lastValueFrom, type Observable } from 'rxjs';
import type { Json } from '../core/codec.js';
import { InvalidOptionError } from '../core/errors.js';
import { describeError } from '../core/reply-errors.js';
import { keySet, refuseUnknownKeys } from '../core/known-keys.js';
import { CacheService } from '../cache/cache-service.js';
import { CACHE_HINTS, checkTags } from '../cache/cache-options.js';
import type { CacheApi } from '../cache/cache-types.js';
import { throughCache } from '../cache/fallthrough.js';

/** Who may share a cached HTTP response. */
export type HttpCacheScope = 'public' | 'user' | 'tenant';

/** Tags of a cached response: fixed, or computed from the request (`(req) => ['product:' + req.params?.id]`). */
export type HttpTagsOf = readonly string[] | ((req: HttpRequestLike) => readonly string[]);

/** Options of `@CacheScope`. */
export interface HttpCacheOptions {
  /** TTL of the cached response (ms). Default: the cache's. */
  readonly ttlMs?: number;
  /**
   * Namespace. Default: the cache's default namespace, the one `@Cached`, `@CacheEvict` and
   * `CacheService` use, so an eviction of a tag reaches method and HTTP entries alike.
   */
  readonly namespace?: string;
  /**
   * Tags of the cached response, for `invalidateTag` and `@CacheEvict({ tags })`: fixed, or a
   * function of the request. A function that throws or returns anything but an array of legal
   * tags gets the response served uncached (`X-Cache: BYPASS`) and the error logged.
   */
  readonly tags?: HttpTagsOf;
}

/** Metadata key of `@CacheScope`. */
export const CACHE_SCOPE_METADATA = 'echomq:cache-scope';

const SCOPE_KEYS = keySet<HttpCacheOptions>({ ttlMs: true, namespace: true, tags: true });

/**
 * Declares that a route may be cached by `CacheInterceptor`, and for whom: `public` (one copy for
 * everyone), `user` (one per authenticated user) or `tenant` (one per tenant). A route without a
 * scope is never cached. An unknown scope or option key is refused (`InvalidOptionError`) when the
 * class is defined.
 */
export const CacheScope = (scope: HttpCacheScope, options: HttpCacheOptions = {}) => {
  if (scope !== 'public' && scope !== 'user' && scope !== 'tenant') throw new InvalidOptionError(`@CacheScope scope must be 'public', 'user' or 'tenant', got ${String(scope)}`);
  refuseUnknownKeys(options, SCOPE_KEYS, '@CacheScope options', { hints: CACHE_HINTS });
  if (options.tags !== undefined && typeof options.tags !== 'function') checkTags(options.tags);
  return SetMetadata(CACHE_SCOPE_METADATA, { scope, ...options });
};

interface ScopeMeta extends HttpCacheOptions {
  readonly scope: HttpCacheScope;
}

/** A cached response: status, the headers worth replaying, and the body. */
type CachedResponse = {
  status: number;
  headers: { [name: string]: string };
  body: Json;
};

/** The request and response shapes the interceptor reads (Express and compatible). */
export interface HttpRequestLike {
  /** The HTTP method. */
  readonly method: string;
  /** The URL as sent (Express keeps it here when routers rewrite `url`). */
  readonly originalUrl?: string;
  /** The URL. */
  readonly url: string;
  /** The authenticated user, set by your authentication: `id` for `user` routes, `tenantId` for `tenant` routes. */
  readonly user?: { readonly id?: string | number; readonly tenantId?: string | number };
  /** Route parameters (Express: `req.params`). */
  readonly params?: Readonly<Record<string, string>>;
  /** The parsed query (Express: `req.query`). */
  readonly query?: Readonly<Record<string, unknown>>;
}
interface HttpResponseLike {
  statusCode: number;
  getHeaders(): Record<string, unknown>;
  setHeader(name: string, value: string): void;
  status(code: number): unknown;
}

/** Headers never stored: they belong to one response or one client. */
const PRIVATE_HEADERS = new Set(['set-cookie', 'x-cache', 'date', 'connection', 'content-length', 'transfer-encoding', 'etag']);

/**
 * The canonical form of a request for the cache: method, path (as sent), the query with its
 * parameters sorted by name (repeated names keep their order; `+` and `%20` are one), the
 * scope and its owner — hashed (SHA-256, base64url), so any URL or owner id gives a key that
 * fits the key grammar.
 */
export function requestKey(method: string, url: string, scope: HttpCacheScope, owner: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  let query = q < 0 ? '' : url.slice(q + 1);
  try {
    const params = new URLSearchParams(query);
    params.sort();
    query = params.toString();
  } catch {
    // an unparsable query is keyed as sent
  }
  const digest = createHash('sha256').update(JSON.stringify([method, path, query, scope, owner])).digest('base64url');
  return `http:${scope}:${digest}`;
}

/** True when a response's Cache-Control forbids storing it here (`no-store`; `private` on a shared route). */
function forbidsStore(headers: Record<string, string>, scope: HttpCacheScope): boolean {
  const cc = Object.entries(headers).find(([name]) => name.toLowerCase() === 'cache-control')?.[1]?.toLowerCase() ?? '';
  const directives = cc.split(',').map((d) => d.trim().split('=')[0]);
  return directives.includes('no-store') || (scope === 'public' && directives.includes('private'));
}

/**
 * Caches GET responses (status, headers, body) in the coherent cache, single-flight, with
 * `X-Cache: HIT|MISS|BYPASS`. The key is a digest of the canonical request (`requestKey`) and
 * always carries the route's declared scope (`@CacheScope`), so a personalised route is never
 * shared by accident: a `user` route without an authenticated user is not cached. A response
 * marked `Cache-Control: no-store` (or `private`, on a public route) is not stored. The cache
 * never turns a working endpoint into an error: when it is unavailable or slow the handler runs
 * uncached (`BYPASS`), and the service's breaker skips the cache for a few seconds. Entries live
 * in the cache's default namespace (unless the route names one) and carry the route's tags, fixed
 * or computed from the request, so `@CacheEvict({ tags })`, `invalidateTag` and
 * `cache.invalidateOn` reach them as they reach `@Cached` values; a tag function that fails serves
 * the response uncached and logs why. Extension points: `trackBy`, `tagsOf` and `isRequestCacheable`.
 */
@Injectable()
export class CacheInterceptor implements NestInterceptor {
  /** Where a failing tag function is reported. */
  protected readonly logger = new Logger('EchoMQ');

  constructor(
    protected readonly cache: CacheService,
    protected readonly reflector: Reflector,
  ) {}

  /** Only GET requests are cached; override to widen or narrow. */
  protected isRequestCacheable(ctx: ExecutionContext): boolean {
    return ctx.getType() === 'http' && ctx.switchToHttp().getRequest<HttpRequestLike>().method === 'GET';
  }

  /** The cache key of a request, or undefined to pass it through uncached. */
  protected trackBy(ctx: ExecutionContext, meta: ScopeMeta): string | undefined {
    const req = ctx.switchToHttp().getRequest<HttpRequestLike>();
    const url = req.originalUrl ?? req.url;
    if (meta.scope === 'public') return requestKey(req.method, url, 'public', '');
    const owner = meta.scope === 'user' ? req.user?.id : req.user?.tenantId;
    return owner === undefined || owner === null || owner === '' ? undefined : requestKey(req.method, url, meta.scope, String(owner));
  }

  /**
   * The tags of a request's cached response, or undefined when its tag function threw or
   * returned anything but legal tags: the error is logged and the response served uncached.
   */
  protected tagsOf(ctx: ExecutionContext, meta: ScopeMeta): readonly string[] | undefined {
    const t = meta.tags;
    if (typeof t !== 'function') return t ?? [];
    try {
      return checkTags(t(ctx.switchToHttp().getRequest<HttpRequestLike>()));
    } catch (err) {
      const route = `${ctx.getClass().name}.${ctx.getHandler().name}`;
      this.logger.error(`@CacheScope tags of ${route} failed (${describeError(err)}): the response is served uncached`);
      return undefined;
    }
  }

  /** Reads the route's `@CacheScope` and answers through the cache (see the class comment). */
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const meta = this.reflector.getAllAndOverride<ScopeMeta | undefined>(CACHE_SCOPE_METADATA, [ctx.getHandler(), ctx.getClass()]);
    if (!meta || !this.isRequestCacheable(ctx)) return next.handle();
    const key = this.trackBy(ctx, meta);
    if (key === undefined) return next.handle();
    const res = ctx.switchToHttp().getResponse<HttpResponseLike>();
    const tags = this.tagsOf(ctx, meta);
    if (tags === undefined) {
      this.cache.breaker.bypassed();
      res.setHeader('X-Cache', 'BYPASS');
      return next.handle();
    }
    const work = async (): Promise<CachedResponse> => {
      const body = (await lastValueFrom(next.handle())) as Json;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.getHeaders())) {
        if (!PRIVATE_HEADERS.has(name.toLowerCase()) && (typeof value === 'string' || typeof value === 'number')) headers[name] = String(value);
      }
      return { status: res.statusCode, headers, body };
    };
    const opts = { namespace: meta.namespace ?? this.cache.namespace, ttlMs: meta.ttlMs, tags };
    const answer = async (): Promise<unknown> => {
      const r = await throughCache(this.cache as CacheApi, this.cache.breaker, key, work, opts, (v) => !forbidsStore(v.headers, meta.scope));
      res.setHeader('X-Cache', r.via.toUpperCase());
      if (r.via === 'hit') {
        res.status(r.value.status);
        for (const [name, v] of Object.entries(r.value.headers)) res.setHeader(name, v);
      }
      return r.value.body;
    };
    return defer(answer);
  }
}
