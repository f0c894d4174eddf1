import { connectClient, createClient } from './client.js';
import type { EchoMqConnection } from './connection.js';
import type { BootRetryOptions } from './connection-options.js';
import { EchoMqError, InvalidOptionError, ValkeyUnavailableError } from '../errors.js';
import { describeError } from '../reply-errors.js';
import { keySet, refuseUnknownKeys } from '../known-keys.js';

/** Boot retry with its defaults, or undefined when off. */
export interface ResolvedBootRetry {
  readonly maxWaitMs: number;
  readonly intervalMs: number;
}

/** Longest pause between two attempts at boot (ms). */
const MAX_PAUSE_MS = 5000;
/** Codes worth waiting out at boot: the server is not reachable yet, or still loading its data. */
const TRANSIENT = new Set(['EMQ_UNAVAILABLE', 'EMQ_LOADING']);

const intIn = (v: unknown, dflt: number, lo: number, hi: number, what: string): number => {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) throw new InvalidOptionError(`${what} must be an integer in ${lo}..${hi}, got ${String(v)}`);
  return v;
};

const RETRY_KEYS = keySet<BootRetryOptions>({ maxWaitMs: true, intervalMs: true });

/** Validates `retryAtBoot` (`false`/absent = off, `true` = the defaults); throws `InvalidOptionError`. */
export function resolveBootRetry(o: boolean | BootRetryOptions | undefined): ResolvedBootRetry | undefined {
  if (o === undefined || o === false) return undefined;
  if (o === true) return { maxWaitMs: 30_000, intervalMs: 250 };
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new InvalidOptionError('connection.retryAtBoot must be a boolean or { maxWaitMs?, intervalMs? }');
  refuseUnknownKeys(o, RETRY_KEYS, 'connection options', { path: 'retryAtBoot' });
  return {
    maxWaitMs: intIn(o.maxWaitMs, 30_000, 1, 3_600_000, 'connection.retryAtBoot.maxWaitMs'),
    intervalMs: intIn(o.intervalMs, 250, 10, 60_000, 'connection.retryAtBoot.intervalMs'),
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Opens `conn`, retrying while Valkey is unreachable (or loading) for at most `maxWaitMs`, each
 * failed attempt logged with its cause and the next pause. A refusal that waiting cannot fix —
 * wrong credentials (`EMQ_AUTH`), a missing grant (`EMQ_NOPERM`), an evicting policy — fails at
 * once; so does every failure when `retry` is off (the default: fail fast). After the bound it
 * rejects with `ValkeyUnavailableError` naming the attempts and the last cause.
 */
export async function openAtBoot(conn: EchoMqConnection, retry: ResolvedBootRetry | undefined, log: (message: string) => void): Promise<void> {
  if (!retry) return conn.open();
  const deadline = Date.now() + retry.maxWaitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await probe(conn);
      if (attempt > 1) log(`connected to Valkey at boot attempt ${attempt}`);
      return conn.open();
    } catch (err) {
      if (!(err instanceof EchoMqError) || !TRANSIENT.has(err.code)) throw err;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new ValkeyUnavailableError(`Valkey still unreachable after ${attempt} attempts over ${retry.maxWaitMs} ms (connection.retryAtBoot): ${err.message}`, err);
      }
      const pause = Math.min(retry.intervalMs * 2 ** Math.min(attempt - 1, 20), MAX_PAUSE_MS, left);
      log(`Valkey unreachable at boot, attempt ${attempt} (${describeError(err)}); retrying in ${pause} ms (${left} ms left of connection.retryAtBoot)`);
      await sleep(pause);
    }
  }
}

/**
 * One attempt: a throwaway client with the connection's options connects and pings (so the
 * connection's own client is first connected once Valkey answers: a failed connect can leave an
 * iovalkey client marked 'reconnecting' with no retry behind it).
 */
async function probe(conn: EchoMqConnection): Promise<void> {
  const c = createClient({ ...conn.options, autoPipelining: false });
  try {
    await connectClient(c);
    await c.ping();
  } finally {
    c.disconnect();
  }
}
