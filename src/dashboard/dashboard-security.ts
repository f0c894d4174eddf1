import { timingSafeEqual } from 'node:crypto';

/** An error with an HTTP status of the dashboard's own (a bad route, a refused POST). */
export class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Request headers, lower-case names. */
export type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** True when `given` equals `secret`, compared in constant time. */
export function sameSecret(given: unknown, secret: string): boolean {
  const x = Buffer.from(typeof given === 'string' ? given : '');
  const y = Buffer.from(secret);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The host of an `Origin` header (`null` and malformed origins match no host). */
function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

function header(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * A POST must carry the page's token and must not come from another site: `Sec-Fetch-Site`, when
 * sent, is `same-origin` or `none`; `Origin`, when sent, names the request's own host. Throws a
 * 403 `HttpRefusal` otherwise (docs/dashboard.md, Security).
 */
export function checkCsrf(headers: Headers, token: unknown, csrf: string): void {
  const site = header(headers, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new HttpRefusal(403, 'cross-site request refused');
  const origin = header(headers, 'origin');
  const host = header(headers, 'host');
  if (origin !== undefined && host !== undefined && originHost(origin) !== host) throw new HttpRefusal(403, 'cross-origin request refused');
  if (!sameSecret(token, csrf)) throw new HttpRefusal(403, 'missing or stale form token: reload the page and try again');
}

/** The headers of every dashboard response: a strict nonce-based CSP, no framing, no caching, no sniffing. */
export function securityHeaders(nonce: string): Record<string, string> {
  return {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'same-origin',
    'Cache-Control': 'no-store',
  };
}
