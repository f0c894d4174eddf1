import type { QueueKeys } from '../keys.js';
import { PROTOCOL_VERSION, type ScriptCall } from '../scripts.js';
import type { ClaimReply, WireClaim } from './queue.js';

/**
 * A consumer's parked registration (docs/protocol.md §5, "Parked consumers"): its `parked`
 * member, and the inbox enqueue.lua pushes a job it leased to it to.
 */
export interface ParkSpot {
  /** The consumer's tag (its inbox's name). */
  readonly tag: string;
  /** The member of `parked`: `<lease ms>:<tag>`. */
  readonly member: string;
  readonly parked: string;
  readonly inbox: string;
  readonly leaseMs: number;
}

/** The registration of consumer `tag` of queue `k`, whose jobs leased by enqueue get a lease of `leaseMs`. */
export function parkSpot(k: QueueKeys, tag: string, leaseMs: number): ParkSpot {
  return { tag, member: `${leaseMs}:${tag}`, parked: k.parked, inbox: k.inbox(tag), leaseMs };
}

/** A registration's ms on the wire: whole, 1..86400000. */
const registrationMs = (ms: number): number => Math.max(1, Math.min(86_400_000, Math.ceil(ms)));

/** park.lua: registers `spot` for `ttlMs` (server clock). */
export function parkCall(k: QueueKeys, spot: ParkSpot, ttlMs: number): ScriptCall<number> {
  return {
    name: 'park',
    keys: [k.meta, spot.parked],
    args: [PROTOCOL_VERSION, spot.leaseMs, spot.tag, registrationMs(ttlMs)],
    parse: (reply) => Number(reply),
  };
}

/**
 * `claim` (claim.lua, without a rate limit or lane policy) as the parked consumer of `spot` sends
 * it ahead of its `BLPOP`: with the registration's keys and `ttlMs`, it claims, then registers
 * `spot` for `ttlMs` (server clock) when it claimed fewer jobs than it asked for and no lease waits
 * in the inbox, else ends the registration.
 */
export function parkedClaimCall(claim: ScriptCall<ClaimReply>, spot: ParkSpot, ttlMs: number): ScriptCall<ClaimReply> {
  // (claim.lua's args: version, n, lease, promote, then the optional `default-fair` and `stamp`,
  // which stay last: the registration's ms goes before them.)
  if (claim.args.length < 4 || claim.args.length > 6) throw new Error('a parked claim carries no rate limit or lane policy');
  const args = [...claim.args.slice(0, 4), registrationMs(ttlMs), ...claim.args.slice(4)];
  return { ...claim, keys: [...claim.keys, spot.parked, spot.inbox], args };
}

/** Length of a job id on the wire (namespace `job` and 11 base62 digits). */
const ID_LENGTH = 14;

/**
 * The job an inbox entry carries (`<id> <token> <payload>`, enqueue.lua): its first attempt,
 * without extras (enqueue leases plain jobs only). Undefined for text of another shape.
 */
export function parseInboxLease(text: string): WireClaim | undefined {
  if (text.charCodeAt(ID_LENGTH) !== 32) return undefined;
  const sp = text.indexOf(' ', ID_LENGTH + 1);
  if (sp < 0) return undefined;
  const token = text.slice(ID_LENGTH + 1, sp);
  if (!/^\d+$/.test(token)) return undefined;
  return { id: text.slice(0, ID_LENGTH), token, attempt: 1, payload: text.slice(sp + 1), extras: '', flow: '' };
}
