import type { EchoMqConnection, ValkeyClient } from '../../core/connection/index.js';
import { parkedClaimCall, parseInboxLease, type ParkSpot } from '../../core/wire/index.js';
import type { QueueKeys } from '../../core/keys.js';
import { isNoScript, scripts, type ScriptCall } from '../../core/scripts.js';
import { calls, roundCall, type ClaimReply } from '../../core/wire/index.js';
import { randomBytes } from 'node:crypto';
import type { BatchReplies, WaitBatch } from './wait-batch.js';

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

type Replies = BatchReplies | null;

/**
 * The blocking wait of a consumer that enqueue may hand jobs off to (docs/protocol.md §5,
 * "Parked consumers"). One pipeline on the blocking connection: the consumer's claim for its free
 * slots, with the registration's keys (claim.lua then registers the consumer in `parked` when it
 * left a slot free), then `BLPOP inbox wake`. Valkey flushes the claim's reply while the `BLPOP`
 * blocks, so its jobs run at once (the wait stays armed beside them) and work that reached
 * `pending` while the consumer was busy costs no wake-up. A job enqueued meanwhile onto an empty
 * queue is leased to the consumer by that enqueue and arrives as the `BLPOP`'s reply, with nothing
 * queued behind it on the server: the hand-off's path is the enqueue script and the pop. Woken by
 * `wake` or by the block running out, the consumer simply parks again: the next claim takes what
 * is pending and renews the registration (a lease that raced the wake-up waits in the inbox, and
 * the next `BLPOP` pops it).
 *
 * A consumer that stops ends its registration (`ZREM`); when that finds it used up, the lease is
 * popped from the inbox and handed back. A consumer that dies parked leaves a registration that
 * runs out by itself; a job leased to it meanwhile is active on a lease, and is reaped like any
 * job of a dead consumer.
 */
export class ParkedWait {
  private loading?: Promise<void>;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly k: QueueKeys,
    private readonly spot: ParkSpot,
  ) {}

  /**
   * Queues the claim (which registers) and the wait (`ms`) on `p` (sent after the batch's `CLIENT ID`). `claimed` gets the claim's
   * reply as soon as it arrives (undefined when the claim failed: the consumer then claims in a
   * round, beside the wait). A claim refused NOSCRIPT (a restarted or flushed server) loads
   * claim.lua (round.lua with `complete`), then calls `retry`, which ends the wait so that the next
   * one registers (rather than a whole block unregistered).
   *
   * With `complete`, the claim goes in one round.lua call behind those completions (an idle
   * consumer's finished jobs ride with its park: one script call and no round trip of their own);
   * `complete.settled` gets the complete part's outcome (undefined: the call failed or never ran).
   */
  send(p: WaitBatch, ms: number, claim: ScriptCall<ClaimReply>, claimed: (reply: ClaimReply | undefined) => void, retry: () => void, complete?: ParkedCompletion): void {
    const c = parkedClaimCall(claim, this.spot, ms + REGISTRATION_MARGIN_MS);
    if (complete) {
      const r = roundCall(complete.call, c);
      p.evalsha(scripts().get('round')!.sha, r.keys, r.args, (err, reply) => {
        if (err && isNoScript(err)) void this.load('round').then(retry);
        let parts: ReturnType<typeof r.parse> | undefined;
        try {
          parts = err ? undefined : r.parse(reply);
        } catch {
          parts = undefined;
        }
        complete.settled(parts?.complete);
        claimed(parts?.claim.status === 'fulfilled' ? parts.claim.value : undefined);
      });
    } else {
      p.evalsha(scripts().get(c.name)!.sha, c.keys, c.args, (err, reply) => {
        if (err && isNoScript(err)) void this.load().then(retry);
        claimed(parsedClaim(c, [err ?? null, reply]));
      });
    }
    p.blpop([this.spot.inbox, this.k.wake], ms / 1000);
  }

  /**
   * The job the wait's `BLPOP` (reply index 2 of `send`'s pipeline, after the `CLIENT ID`) popped
   * from the inbox, as a claim reply whose wait is `waitMs`; undefined when it was woken by `wake`,
   * ran out, or failed.
   */
  popped(replies: Replies, waitMs: number): ClaimReply | undefined {
    const [waitErr, popped] = replies?.[2] ?? [null, null];
    if (waitErr || !Array.isArray(popped) || popped[0] !== this.spot.inbox) return undefined;
    return this.reply(String(popped[1]), waitMs);
  }

  /**
   * Ends the registration (a consumer that stops): `ZREM`, and when an enqueue used it up first,
   * the job it leased, popped from the inbox (to be handed back). Never rejects.
   */
  async end(blocker: ValkeyClient): Promise<ClaimReply | undefined> {
    try {
      if ((await blocker.zrem(this.spot.parked, this.spot.member)) === 1) return undefined;
      const leased = await blocker.lpop(this.spot.inbox);
      return leased ? this.reply(leased, -1) : undefined;
    } catch {
      return undefined; // the registration runs out by itself; a leased job is reaped
    }
  }

  private reply(text: string, waitMs: number): ClaimReply | undefined {
    const job = parseInboxLease(text);
    return job ? { jobs: [job], waitMs } : undefined;
  }

  /**
   * Puts claim.lua (or round.lua) in the script cache of the node that serves the queue: an EVAL
   * of its bytes with the queue's keys and no arguments, which the script refuses (EMQ_BAD_ARG)
   * before any read. (Needs no `SCRIPT` permission, and routes by key in a
   * cluster.) Never rejects.
   */
  load(script: 'claim' | 'round' = 'claim'): Promise<void> {
    const keys = parkedClaimCall(calls.claim(this.k, 1, this.spot.leaseMs, 0), this.spot, 1).keys;
    this.loading ??= this.conn.client
      .eval(scripts().get(script)!.source, keys.length, ...keys)
      .then(() => undefined, () => undefined)
      .finally(() => (this.loading = undefined));
    return this.loading;
  }
}

/**
 * Completions sent with a parked wait (round.lua): the complete call, and what to do with its part
 * of the reply. `settled` is called exactly once; undefined when the call failed or never ran (the
 * completions are then sent again; a repeat is refused, harmless).
 */
export interface ParkedCompletion {
  readonly call: ScriptCall<unknown>;
  settled(outcome: PromiseSettledResult<unknown> | undefined): void;
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
