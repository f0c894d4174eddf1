import { createServer, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { QueueAdmin } from '../admin/queue-admin.js';
import type { BusAdmin } from '../admin/bus-admin.js';
import type { CacheAdmin } from '../admin/cache-admin.js';
import { DashboardApp } from './dashboard-app.js';
import { serveNode, type NodeRequest } from './http-adapter.js';
import { escapeHtml } from './html.js';
import { hostAllowed, loopbackHosts, normaliseHost, sameSecret } from './dashboard-security.js';

/** Options of the standalone dashboard (`npx echomq dashboard`, docs/dashboard.md). */
export interface StandaloneDashboardOptions {
  /** The queue operator surface to serve. */
  readonly queues: QueueAdmin;
  /** The Bus operator surface (topics and group lag). */
  readonly bus?: BusAdmin;
  /** The Cache operator surface (namespaces; this process's counters are not shown). */
  readonly caches?: CacheAdmin;
  /** TCP port (0 = any free port). */
  readonly port: number;
  /** Address to bind (default `127.0.0.1`: loopback only). */
  readonly host?: string;
  /** The access token: a string, undefined to generate one, or null for none (`--no-token`). */
  readonly token?: string | null;
  /** No buttons, every action refused. */
  readonly readOnly?: boolean;
  /** Live refresh period, ms (default 2,000). */
  readonly refreshMs?: number;
  /** False: no charts (default: the stored history's charts, read through `queues`). */
  readonly charts?: boolean;
  /**
   * `Host` values answered besides the loopback names (`localhost`, `127.0.0.1`, `[::1]` with the
   * server's port, always allowed) and the bound address: `name` (any port) or `name:port`. Any
   * other Host is refused with 421, token or not (DNS rebinding, docs/dashboard.md).
   */
  readonly allowedHosts?: readonly string[];
  /** Where the warnings go (serving without a token); default: stderr. */
  readonly logger?: { warn(message: string): void };
}

/** A running standalone dashboard. */
export interface StandaloneDashboard {
  /** The URL to open (with `?token=` when a token is required: the first visit sets a cookie). */
  readonly url: string;
  /** The token, or null when none is required. */
  readonly token: string | null;
  /** Stops the server. */
  close(): Promise<void>;
}

/** The value of cookie `name`, if sent. */
function cookie(req: NodeRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

/**
 * Token gate: `Authorization: Bearer <token>`, the session cookie, or `?token=<token>` on a GET
 * (answered by a redirect to the same URL without it, setting an HttpOnly SameSite=Strict cookie
 * named per port). Anything else is a 401. True when the request may go on.
 */
function admit(req: NodeRequest, res: ServerResponse, token: string, cookieName: string): boolean {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ') && sameSecret(auth.slice(7), token)) return true;
  if (sameSecret(cookie(req, cookieName), token)) return true;
  const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
  if (req.method === 'GET' && sameSecret(url.searchParams.get('token'), token)) {
    url.searchParams.delete('token');
    res.writeHead(303, { Location: url.pathname + url.search, 'Set-Cookie': `${cookieName}=${token}; HttpOnly; SameSite=Strict; Path=/`, 'Cache-Control': 'no-store' });
    res.end();
    return false;
  }
  res.writeHead(401, { 'Content-Type': 'text/html; charset=utf-8', 'WWW-Authenticate': 'Bearer', 'Cache-Control': 'no-store', 'Content-Security-Policy': "default-src 'none'" });
  res.end(`<!doctype html><title>401 Unauthorized</title><h1>401 Unauthorized</h1><p>${escapeHtml('Open the URL `npx echomq dashboard` printed (it carries ?token=…), or send Authorization: Bearer <token>.')}</p>`);
  return false;
}

/** Answers 421 to a request whose `Host` is not allowed; true when the request may go on. */
function hostGate(req: NodeRequest, res: ServerResponse, hosts: readonly string[]): boolean {
  if (hostAllowed(req.headers.host, hosts)) return true;
  res.writeHead(421, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Security-Policy': "default-src 'none'" });
  res.end('<!doctype html><title>421 Misdirected Request</title><h1>421 Misdirected Request</h1><p>This dashboard does not answer that Host. Open the URL it printed, or start it with --allowed-host.</p>');
  return false;
}

/** The `Host` values a server bound to `host` on `port` answers by default, plus `extra` (normalised). */
function allowedHostsOf(host: string, port: number, extra: readonly string[]): string[] {
  const bound = host === '0.0.0.0' || host === '::' ? [] : [`${host.includes(':') ? `[${host}]` : host}:${port}`.toLowerCase()];
  return [...new Set([...loopbackHosts(port), ...bound, ...extra])];
}

/** Starts the dashboard on its own HTTP server (no Nest app, no Express). */
export async function startStandaloneDashboard(o: StandaloneDashboardOptions): Promise<StandaloneDashboard> {
  const host = o.host ?? '127.0.0.1';
  const extra = (o.allowedHosts ?? []).map(normaliseHost); // EMQ_BAD_OPTION before anything listens
  const token = o.token === null ? null : (o.token ?? randomBytes(18).toString('base64url'));
  let hosts: string[] = [];
  const behaviour = { readOnly: o.readOnly === true, refreshMs: o.refreshMs ?? 2000, get allowedHosts(): readonly string[] { return hosts; } };
  const app = new DashboardApp({ queues: o.queues, bus: o.bus, caches: o.caches, charts: o.charts }, behaviour);
  let cookieName = 'echomq_dashboard';
  const server: Server = createServer((req: NodeRequest, res) => {
    if (!hostGate(req, res, hosts)) return; // token or not: a DNS-rebound name gets nothing
    if (token !== null && !admit(req, res, token, cookieName)) return;
    serveNode(app, req, res, '').catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end('internal error');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  cookieName = `echomq_dashboard_${port}`;
  hosts = allowedHostsOf(host, port, extra);
  if (token === null) (o.logger ?? { warn: (m: string) => process.stderr.write(`${m}\n`) }).warn(`EchoMQ dashboard: serving ${host}:${port} without a token: anyone who reaches it can retry, remove, cancel and pause`);
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/${token === null ? '' : `?token=${token}`}`,
    token,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
