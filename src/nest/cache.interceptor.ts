import { Injectable, SetMetadata, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { from, lastValueFrom, of, switchMap, type Observable } from 'rxjs';
import type { Json } from '../protocol/codec.js';
import { CacheService } from '../cache/cache.service.js';
import type { CacheApi } from '../cache/cache.types.js';

/** Who may share a cached HTTP response. */
export type HttpCacheScope = 'public' | 'user' | 'tenant';

/** Options of `@CacheScope`. */
export interface HttpCacheOptions {
  /** TTL of the cached response (ms). Default: the cache's. */
  readonly ttlMs?: number;
  /** Namespace. Default "http". */
  readonly namespace?: string;
  readonly tags?: readonly string[];
}

/** Metadata key of `@CacheScope`. */
export const CACHE_SCOPE_METADATA = 'echomq:cache-scope';

/**
 * Declares that a route may be cached by `CacheInterceptor`, and for whom: `public` (one copy for
 * everyone), `user` (one per authenticated user) or `tenant` (one per tenant). A route without a
 * scope is never cached.
 */
export const CacheScope = (scope: HttpCacheScope, options: HttpCacheOptions = {}) =>
  SetMetadata(CACHE_SCOPE_METADATA, { scope, ...options });

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
  readonly method: string;
  readonly originalUrl?: string;
  readonly url: string;
  readonly user?: { readonly id?: string | number; readonly tenantId?: string | number };
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
 * Caches GET responses (status, headers, body) in the coherent cache, single-flight, with
 * `X-Cache: HIT|MISS`. The key always carries the route's declared scope (`@CacheScope`), so a
 * personalised route is never shared by accident: a `user` route without an authenticated user is
 * not cached. Extension points: `trackBy` and `isRequestCacheable`.
 */
@Injectable()
export class CacheInterceptor implements NestInterceptor {
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
    if (meta.scope === 'public') return `public:${url}`;
    const owner = meta.scope === 'user' ? req.user?.id : req.user?.tenantId;
    return owner === undefined || owner === null || owner === '' ? undefined : `${meta.scope}=${String(owner)}:${url}`;
  }

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const meta = this.reflector.getAllAndOverride<ScopeMeta | undefined>(CACHE_SCOPE_METADATA, [ctx.getHandler(), ctx.getClass()]);
    if (!meta || !this.isRequestCacheable(ctx)) return next.handle();
    const key = this.trackBy(ctx, meta);
    if (key === undefined) return next.handle();
    const res = ctx.switchToHttp().getResponse<HttpResponseLike>();
    let loaded = false;
    const api = this.cache as unknown as CacheApi;
    const load = async (): Promise<CachedResponse> => {
      loaded = true;
      const body = (await lastValueFrom(next.handle())) as Json;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.getHeaders())) {
        if (!PRIVATE_HEADERS.has(name.toLowerCase()) && (typeof value === 'string' || typeof value === 'number')) headers[name] = String(value);
      }
      return { status: res.statusCode, headers, body };
    };
    const opts = { namespace: meta.namespace ?? 'http', ttlMs: meta.ttlMs, tags: meta.tags };
    return from(api.getOrLoad<CachedResponse>(key, load, opts)).pipe(
      switchMap((value) => {
        const entry = value;
        res.setHeader('X-Cache', loaded ? 'MISS' : 'HIT');
        if (!loaded) {
          res.status(entry.status);
          for (const [name, v] of Object.entries(entry.headers)) res.setHeader(name, v);
        }
        return of(entry.body);
      }),
    );
  }
}
