import { timingSafeEqual } from 'node:crypto';
import { InvalidOptionError } from '../core/errors.js';

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

function header(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Which `Host` and `Origin` values a dashboard answers (docs/dashboard.md, "Hosts and origins"). */
export interface HostPolicy {
  /**
   * The `Host` header values served (`name` matches any port, `name:port` that port only; case
   * does not matter); any other Host is refused with 421. Undefined: no Host check.
   */
  readonly hosts?: readonly string[];
  /**
   * The origins a POST may come from (`http://name:port`). Undefined: `http://` and `https://`
   * of the allowed hosts; with neither, a POST's `Origin` is accepted only when the browser's
   * `Sec-Fetch-Site` says `same-origin` (the guard is then the defence against DNS rebinding).
   */
  readonly origins?: readonly string[];
}

/** The loopback names of a server on `port`: `localhost`, `127.0.0.1` and `[::1]` with that port. */
export function loopbackHosts(port: number): string[] {
  return [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`];
}

/**
 * A host allow-list entry, checked and lower-cased: a DNS name, an IPv4 address or a bracketed
 * IPv6 address, with an optional `:port`. Throws `InvalidOptionError` (EMQ_BAD_OPTION) otherwise.
 */
export function normaliseHost(entry: unknown): string {
  const s = typeof entry === 'string' ? entry.trim().toLowerCase() : '';
  if (!/^(?:[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?|\[[0-9a-f:.]{2,45}\])(?::\d{1,5})?$/.test(s)) {
    throw new InvalidOptionError(`an allowed host must look like name, name:port or [::1]:port, got ${JSON.stringify(entry)}`);
  }
  return s;
}

/** An allowed origin, checked and normalised (`scheme://host[:port]`, no path). Throws EMQ_BAD_OPTION otherwise. */
export function normaliseOrigin(entry: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof entry === 'string' ? new URL(entry) : undefined;
  } catch {
    url = undefined;
  }
  const bare = url && url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
  if (!url || !bare || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new InvalidOptionError(`an allowed origin must look like https://name[:port] (no path), got ${JSON.stringify(entry)}`);
  }
  return url.origin;
}

/** True when a `Host` header value is one of `allowed` (a port-less entry matches any port). */
export function hostAllowed(host: string | undefined, allowed: readonly string[]): boolean {
  if (host === undefined) return false;
  const h = host.trim().toLowerCase();
  const name = h.replace(/:\d+$/, '');
  return allowed.some((a) => a === h || (!/(?:^[^[]*|\]):\d+$/.test(a) && a === name));
}

/**
 * Refuses (421 `HttpRefusal`) a request whose `Host` is not on the allow-list: a page fetched by
 * a DNS-rebound name never reaches the dashboard. No check when `hosts` is undefined.
 */
export function checkHost(headers: Headers, policy: HostPolicy): void {
  if (policy.hosts === undefined) return;
  if (!hostAllowed(header(headers, 'host'), policy.hosts)) throw new HttpRefusal(421, 'misdirected request: this dashboard does not answer that Host (see its allowed hosts)');
}

/** True when an `Origin` is one the policy accepts (never compared with the request's own Host). */
function originAllowed(origin: string, policy: HostPolicy): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` and malformed origins match nothing
  }
  if (policy.origins !== undefined) return policy.origins.includes(url.origin);
  if (policy.hosts !== undefined) return (url.protocol === 'http:' || url.protocol === 'https:') && hostAllowed(url.host, policy.hosts);
  return false;
}

/**
 * A POST must carry the page's token and must not come from another site: `Sec-Fetch-Site`, when
 * sent, is `same-origin` or `none`; `Origin`, when sent, is one of the configured origins (or of
 * the allowed hosts), never judged by the request's own `Host`. With no origin configured, an
 * `Origin` passes only beside `Sec-Fetch-Site: same-origin`. Throws a 403 `HttpRefusal`
 * otherwise (docs/dashboard.md, Security).
 */
export function checkCsrf(headers: Headers, token: unknown, csrf: string, policy: HostPolicy = {}): void {
  const site = header(headers, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new HttpRefusal(403, 'cross-site request refused');
  const origin = header(headers, 'origin');
  const configured = policy.origins !== undefined || policy.hosts !== undefined;
  if (origin !== undefined && (configured ? !originAllowed(origin, policy) : site !== 'same-origin')) throw new HttpRefusal(403, 'cross-origin request refused: the Origin is not one this dashboard allows');
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
