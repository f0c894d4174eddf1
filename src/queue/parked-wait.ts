import type { EchoMqConnection, ValkeyClient } from '../protocol/connection.js';
import { REGISTRATION_USED, parkCall, parkedClaimCall, parseInboxLease, type ParkSpot } from '../protocol/park-wire.js';
import type { QueueKeys } from '../protocol/keys.js';
import { isNoScript, scripts, type ScriptCall } from '../protocol/scripts.js';
import type { ClaimLimits, ClaimReply } from '../protocol/wire.js';
import { randomBytes } from 'node:crypto';

/**
 * A consumer enqueue may lease jobs to: one without a rate limit or a group policy (enqueue's lease
 * knows neither; their jobs go through the claim, which applies them).
 */
export function parkable(limits: ClaimLimits): boolean {
  return limits.rateLimit === undefined && limits.groupPolicy === undefined;
}

/** A fresh consumer tag: 16 random base62 characters (its inbox's name). */
export function consumerTag(): string {
  const bytes = randomBytes(16);
  let tag = '';
  for (const b of bytes) tag += BASE62[b % 62];
  return tag;
}
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** How much longer than its block a registration holds (a lease that races the block's end is still taken). */
const REGISTRATION_MARGIN_MS = 2000;

type Pipeline = ReturnType<ValkeyClient['pipeline']>;
type Replies = [Error | null, unknown][] | null;

/** What a parked wait ended with: a job leased by enqueue, and whether the consumer should claim too. */
export interface ParkedEnd {
  readonly claimed?: ClaimReply;
  /** Woken by `wake` or by the block running out: work may be pending, so the consumer claims. */
  readonly claim: boolean;
}

/**
 * The blocking wait of a consumer that enqueue may hand jobs off to (docs/protocol.md §5,
 * "Parked consumers"). One pipeline on the blocking connection: park.lua registers the consumer,
 * `BLPOP inbox wake` blocks, the consumer's claim runs behind it on the condition that the
 * registration is still current, and `ZREM` ends the registration. A job enqueued meanwhile onto
 * an empty queue is leased to the consumer by that enqueue and arrives as the BLPOP's reply: the
 * claim behind it finds the registration used up and takes nothing (no second lease, no claim
 * work on the hand-off's path). Woken by `wake` (work enqueued while the consumer was busy,
 * several jobs in one call, a retry, a resume) or by the block running out, the claim behind the
 * wait takes the pending jobs in the same round trip, as a plain wait's claim does.
 *
 * Nothing is lost between the wake-up and the `ZREM`: a registration that was used up (the claim
 * answers -3, or `ZREM` answers 0) while the wait returned something else has its job in the
 * inbox, which is popped then. A consumer that dies parked leaves a registration that runs out
 * by itself; a job leased to it meanwhile is active on a lease, and is reaped like any job of a
 * dead consumer.
 */
export class ParkedWait {
  private loading?: Promise<void>;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly k: QueueKeys,
    private readonly spot: ParkSpot,
  ) {}

  /**
   * Queues the registration, the wait (`ms`), the conditional `claim` and the registration's end
   * on `p`. A registration refused NOSCRIPT (a restarted or flushed server) loads park.lua, then
   * calls `retry`, which ends the wait so that the next one registers (rather than a whole block
   * unregistered). A claim refused NOSCRIPT is left to the round the consumer then claims in.
   */
  send(p: Pipeline, ms: number, claim: ScriptCall<ClaimReply>, retry: () => void): void {
    const park = parkCall(this.k, this.spot, ms + REGISTRATION_MARGIN_MS);
    p.evalsha(scripts().get('park')!.sha, park.keys.length, ...park.keys, ...park.args, (err?: Error | null) => {
      if (err && isNoScript(err)) void this.load().then(retry);
    });
    p.blpop(this.spot.inbox, this.k.wake, ms / 1000);
    const c = parkedClaimCall(claim, this.spot);
    p.evalsha(scripts().get(c.name)!.sha, c.keys.length, ...c.keys, ...c.args);
    p.zrem(this.spot.parked, this.spot.member);
  }

  /**
   * Reads the replies of `send` (after the `CLIENT ID` at index 0); `waitMs` is what the lease's
   * reply reports as the wait left (the last claim's, less the time parked).
   */
  async settle(blocker: ValkeyClient, replies: Replies, waitMs: number, claim: ScriptCall<ClaimReply>): Promise<ParkedEnd> {
    const [parkErr] = replies?.[1] ?? [null];
    const [waitErr, popped] = replies?.[2] ?? [null, null];
    if (!waitErr && Array.isArray(popped) && popped[0] === this.spot.inbox) {
      return { claimed: this.reply(String(popped[1]), waitMs), claim: false };
    }
    const claimed = parsedClaim(claim, replies?.[3]);
    const [, removed] = replies?.[4] ?? [null, 1];
    // Used up after the wait's wake-up (by a lease between the claim and the ZREM, or before the
    // claim, which then took nothing), or the registration ran out: its job, if any, is in the inbox.
    const leased = !parkErr && removed === 0 ? await blocker.lpop(this.spot.inbox) : null;
    const job = leased ? this.reply(leased, -1) : undefined;
    if (claimed && claimed.waitMs !== REGISTRATION_USED) {
      // The claim ran on a current registration: its jobs (and a lease that raced it) are the wait's.
      return { claimed: job ? { jobs: [...claimed.jobs, ...job.jobs], waitMs: claimed.waitMs } : claimed, claim: false };
    }
    return { claimed: job, claim: true };
  }

  private reply(text: string, waitMs: number): ClaimReply | undefined {
    const job = parseInboxLease(text);
    return job ? { jobs: [job], waitMs } : undefined;
  }

  /**
   * Puts park.lua in the script cache of the node that serves the queue: an EVAL of its bytes
   * with the real keys and no arguments, which the script refuses (EMQ_BAD_ARG) before any read.
   * (Needs no `SCRIPT` permission, and routes by key in a cluster.) Never rejects.
   */
  load(): Promise<void> {
    this.loading ??= this.conn.client
      .eval(scripts().get('park')!.source, 2, this.k.meta, this.spot.parked)
      .then(() => undefined, () => undefined)
      .finally(() => (this.loading = undefined));
    return this.loading;
  }
}

/**
 * The reply of a claim pipelined behind a wait, or undefined when it did not run or failed
 * (NOSCRIPT after a restart, OOM…): the consumer then claims in a round of its own, which loads
 * the script or reports the error.
 */
export function parsedClaim(claim: ScriptCall<ClaimReply>, reply: [Error | null, unknown] | undefined): ClaimReply | undefined {
  if (!reply || reply[0]) return undefined;
  try {
    return claim.parse(reply[1]);
  } catch {
    return undefined;
  }
}
