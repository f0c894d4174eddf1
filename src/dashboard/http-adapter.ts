import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DashboardApp } from './dashboard-app.js';

/** A Node request, possibly an Express one (`originalUrl`, a parsed `body`). */
export type NodeRequest = IncomingMessage & { readonly originalUrl?: string; readonly body?: unknown };

/** The most form bytes read from a POST (the dashboard's forms carry a token only). */
const MAX_FORM_BYTES = 16 * 1024;

/** The urlencoded form of a POST: Express's parsed `body` when present, else read from the stream. */
async function readForm(req: NodeRequest): Promise<Record<string, unknown>> {
  if (req.method !== 'POST') return {};
  if (typeof req.body === 'object' && req.body !== null && !Buffer.isBuffer(req.body)) return req.body as Record<string, unknown>;
  if (req.readableEnded) return {};
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return {}; // refused by the token check
    chunks.push(chunk);
  }
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}

/**
 * Where the mount starts in the path the browser sent: the first `mount` segment (so a global
 * prefix before it is kept in every link). `mount` is `''` for a dashboard served at the root.
 */
export function splitMount(pathname: string, mount: string): { base: string; path: string } {
  if (mount === '') return { base: '', path: pathname };
  let at = pathname.indexOf(mount);
  while (at >= 0 && pathname.length > at + mount.length && pathname[at + mount.length] !== '/') at = pathname.indexOf(mount, at + 1);
  if (at < 0) return { base: mount, path: '/' };
  return { base: pathname.slice(0, at + mount.length), path: pathname.slice(at + mount.length) || '/' };
}

/** Serves one Node (or Express) request with the dashboard. */
export async function serveNode(app: DashboardApp, req: NodeRequest, res: ServerResponse, mount: string): Promise<void> {
  const url = new URL(req.originalUrl ?? req.url ?? '/', 'http://dashboard.invalid');
  const { base, path } = splitMount(url.pathname, mount);
  const form = await readForm(req);
  const reply = await app.handle({ method: req.method ?? 'GET', path, query: url.searchParams, form, headers: req.headers, base });
  res.writeHead(reply.status, reply.headers);
  res.end(req.method === 'HEAD' ? undefined : reply.body);
}
