import type { CoordKeys } from '../keys.js';
import { PROTOCOL_VERSION, call, type ScriptCall, type ScriptClient } from '../scripts.js';

/** The operations of lease.lua and semaphore.lua. */
export type CoordOp = 'acquire' | 'renew' | 'release' | 'read';

/** Shortest and longest lease or permit the scripts accept, in ms. */
export const COORD_TTL_MS = { min: 100, max: 3_600_000 } as const;

/** Largest semaphore limit semaphore.lua accepts. */
export const SEMAPHORE_MAX_LIMIT = 100_000;

/** lease.lua's reply: `{status, owner, token, exp}`. */
export interface LeaseReply {
  /** acquire/renew/release: the call took effect; read: the lease is held (unexpired). */
  readonly ok: boolean;
  /** The owner after a success, the current (or last) holder after a refusal; `""` when none. */
  readonly owner: string;
  /** The token (of the lease after a success, of the current holder otherwise); null when none was ever issued. */
  readonly token: bigint | null;
  /** Expiry on the server clock, epoch ms; 0 = released or never held. */
  readonly exp: number;
}

/** semaphore.lua's reply: `{status, count, exp}` (read: `{count, 0, 0}`, parsed as ok = count > 0). */
export interface SemaphoreReply {
  /** acquire/renew/release: the call took effect. */
  readonly ok: boolean;
  /** Live permits after the call. */
  readonly count: number;
  /** acquire/renew: the permit's expiry; a refused acquire: the earliest live expiry; else 0 (server ms). */
  readonly exp: number;
}

function parseLease(reply: unknown): LeaseReply {
  const [status, owner, token, exp] = reply as [number, string, string, number];
  if (typeof status !== 'number' || typeof owner !== 'string' || typeof token !== 'string' || typeof exp !== 'number') {
    throw new Error(`lease.lua answered an unexpected shape: ${JSON.stringify(reply)}`);
  }
  return { ok: status === 1, owner, token: token === '' ? null : BigInt(token), exp };
}

function parseSemaphore(op: CoordOp, reply: unknown): SemaphoreReply {
  const [a, b, c] = reply as [number, number, number];
  if (typeof a !== 'number' || typeof b !== 'number' || typeof c !== 'number') {
    throw new Error(`semaphore.lua answered an unexpected shape: ${JSON.stringify(reply)}`);
  }
  return op === 'read' ? { ok: a > 0, count: a, exp: 0 } : { ok: a === 1, count: b, exp: c };
}

/**
 * The lease.lua call: `token` is null for acquire and read (sent as `""`); `ttlMs` is sent as
 * "0" for release and read (ignored there).
 */
export function leaseCall(k: CoordKeys, op: CoordOp, owner: string, token: bigint | null, ttlMs: number): ScriptCall<LeaseReply> {
  const timed = op === 'acquire' || op === 'renew';
  return {
    name: 'lease',
    keys: [k.lease],
    args: [PROTOCOL_VERSION, op, owner, token === null ? '' : token.toString(), timed ? ttlMs : 0],
    parse: parseLease,
  };
}

/** The semaphore.lua call; `limit` is sent only with acquire, `ttlMs` with acquire and renew ("0" otherwise). */
export function semaphoreCall(k: CoordKeys, op: CoordOp, holder: string, limit: number, ttlMs: number): ScriptCall<SemaphoreReply> {
  return {
    name: 'semaphore',
    keys: [k.sem],
    args: [PROTOCOL_VERSION, op, holder, op === 'acquire' ? limit : 0, op === 'acquire' || op === 'renew' ? ttlMs : 0],
    parse: (reply) => parseSemaphore(op, reply),
  };
}

/** Typed wrappers of the coordination scripts (docs/protocol.md, "Coordination"). */
export const coordWire = {
  /** Runs lease.lua (see `leaseCall`). */
  lease(c: ScriptClient, k: CoordKeys, op: CoordOp, owner: string, token: bigint | null, ttlMs: number): Promise<LeaseReply> {
    return call(c, leaseCall(k, op, owner, token, ttlMs));
  },
  /** Runs semaphore.lua (see `semaphoreCall`). */
  semaphore(c: ScriptClient, k: CoordKeys, op: CoordOp, holder: string, limit: number, ttlMs: number): Promise<SemaphoreReply> {
    return call(c, semaphoreCall(k, op, holder, limit, ttlMs));
  },
};

/**
 * The fencing check a resource runs (docs/coordination.md, "Fencing a resource"), as Lua to put
 * at the top of the resource's own script: with the fence key `KEYS[1]` (in the resource's slot)
 * and the holder's token `ARGV[1]` (decimal), it refuses a token lower than the highest accepted
 * with the error `EMQ_STALE_TOKEN` and records an equal or higher one. Tokens are below 2^53, so
 * Lua's `tonumber` compares them exactly. Use other indices by editing the two references.
 */
export const FENCE_CHECK_LUA =
  "if tonumber(ARGV[1]) < tonumber(redis.call('GET', KEYS[1]) or '0') then return redis.error_reply('EMQ_STALE_TOKEN') end\n" +
  "redis.call('SET', KEYS[1], ARGV[1])\n";
