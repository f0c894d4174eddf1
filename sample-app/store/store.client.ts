/**
 * The store's Valkey client and its outage policy. While it first connects (the boot), commands
 * wait for it; once it has been ready, a command sent while the connection is down fails at once
 * (no offline queue), so an HTTP request answers 503 with `Retry-After` (web/store-unavailable.filter.ts)
 * instead of hanging, and the background loops (matching, settlement) retry on their own. The
 * client reconnects every ≤ 1 s. Its `error` events are logged once per outage (the first) and
 * the reconnection once, never the "[ioredis] Unhandled error event" of a client with no handler.
 */
import { Logger } from '@nestjs/common';
import { Redis } from 'iovalkey';

/** The longest pause between two reconnection attempts (ms). */
const RECONNECT_MAX_MS = 1000;

/** A client for the store at `url`, with the outage policy above. */
export function storeClient(url: string, log: Logger = new Logger('ExchangeStore')): Redis {
  // Auto-pipelining: commands issued in one event-loop turn share one socket write.
  const client = new Redis(url, {
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => Math.min(attempt * 100, RECONNECT_MAX_MS),
  });
  let downSince: number | undefined;
  client.on('error', (err: Error) => {
    if (downSince !== undefined) return;
    downSince = Date.now();
    log.warn(`store connection lost (${err.message}); requests that need it answer 503 until it is back`);
  });
  client.on('ready', () => {
    // From the first ready on, fail fast while disconnected rather than queue.
    client.options.enableOfflineQueue = false;
    if (downSince === undefined) return;
    log.log(`store connection back after ${Date.now() - downSince} ms`);
    downSince = undefined;
  });
  return client;
}

/** True when `err` says the store's connection is down (not a refused command). */
export function isStoreConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  const code = (err as Error & { code?: unknown }).code;
  if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTCONN|EHOSTUNREACH|ENETUNREACH)$/.test(code)) return true;
  return /Stream isn't writeable|Connection is closed|^LOADING |^READONLY |^MASTERDOWN /.test(err.message);
}
