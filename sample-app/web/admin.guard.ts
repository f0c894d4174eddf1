import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';

/** The header that carries the operator's key (as an account's key: `x-api-key`). */
export const ADMIN_KEY_HEADER = 'x-api-key';
/** The cookie a browser gets from one `?key=` visit. */
export const ADMIN_COOKIE = 'exchange_admin';

/** The request and response calls the guard uses (Express). */
interface AdminRequest {
  readonly method: string;
  readonly originalUrl?: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}
interface AdminResponse {
  setHeader(name: string, value: string): unknown;
  redirect(status: number, url: string): unknown;
}

const sha = (s: string): Buffer => createHash('sha256').update(s).digest();
const same = (a: string, b: Buffer): boolean => timingSafeEqual(sha(a), b);

/** The value of cookie `name` in a Cookie header, if any. */
function cookie(header: string | string[] | undefined, name: string): string | undefined {
  for (const part of (Array.isArray(header) ? header.join(';') : (header ?? '')).split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The operator's guard (`/stats`, `/metrics`, the dashboard at `/admin/queues`): the request
 * carries the admin key (`ExchangeConfig.adminKey`) in `x-api-key`, or the cookie a browser got
 * from one visit with `?key=<admin key>`: that GET is answered by a 303 to the same URL without
 * the key, setting `exchange_admin` (HttpOnly, SameSite=Strict, 8 h), so the key leaves the
 * address bar and the history. The cookie holds an HMAC of the key, not the key. Anything else
 * is 401. Comparisons are constant-time (SHA-256 digests, `timingSafeEqual`).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly key: Buffer;
  private readonly cookieValue: string;

  constructor(@Inject(EXCHANGE_CONFIG) config: Pick<ExchangeConfig, 'adminKey'>) {
    this.key = sha(config.adminKey);
    this.cookieValue = createHmac('sha256', config.adminKey).update('exchange-admin-cookie').digest('hex');
  }

  /** Lets the operator in; redirects a `?key=` visit; 401 otherwise. */
  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<AdminRequest>();
    const header = req.headers[ADMIN_KEY_HEADER];
    if (typeof header === 'string' && same(header, this.key)) return true;
    const c = cookie(req.headers.cookie, ADMIN_COOKIE);
    if (c !== undefined && same(c, sha(this.cookieValue))) return true;
    const url = new URL(req.originalUrl ?? req.url, 'http://x');
    const given = url.searchParams.get('key');
    if (req.method === 'GET' && given !== null && same(given, this.key)) {
      url.searchParams.delete('key');
      const res = ctx.switchToHttp().getResponse<AdminResponse>();
      res.setHeader('Set-Cookie', `${ADMIN_COOKIE}=${this.cookieValue}; HttpOnly; SameSite=Strict; Path=/; Max-Age=28800`);
      res.redirect(303, `${url.pathname}${url.search}`);
      return false; // answered: the 403 that Nest raises next finds the response sent and ends it
    }
    throw new UnauthorizedException(`the admin key is required (${ADMIN_KEY_HEADER} header, or ?key= once in a browser)`);
  }
}
