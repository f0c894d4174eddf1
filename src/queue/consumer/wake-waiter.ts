import { Cluster } from 'iovalkey';
import { waitAtMost } from '../../core/wait-at-most.js';
import type { EchoMqConnection, ValkeyClient } from '../../core/connection/index.js';
import { scripts, type ScriptCall } from '../../core/scripts.js';
import type { ClaimReply } from '../../core/wire/index.js';
import { parsedClaim, type ParkedCompletion, type ParkedWait } from './parked-wait.js';
import { waitBatch, type WaitBatch } from './wait-batch.js';

/** What a waiter tells its consumer: the wait ended (woken, or its block ran out), or it failed. */
export interface WaiterEvents {
  /**
   * The wait ended; `claimed` is the reply of the claim sent behind it, when that claim ran (or a
   * parked wait's job leased by enqueue). `claim`: work may be pending beyond `claimed`, claim in a round.
   */
  woke(claimed: ClaimReply | undefined, claim: boolean): void;
  /**
   * A parked wait's claim, sent ahead of its `BLPOP`, answered (undefined: it failed, claim in a
   * round); the wait goes on.
   */
  claimed(reply: ClaimReply | undefined): void;
  failed(err: unknown, what: string): void;
  /**
   * The claim behind a wait that nobody awaits any more (closed, superseded, or the wait failed)
   * got jobs: the consumer hands them back (their attempt given back).
   */
  orphaned(claimed: ClaimReply): Promise<void>;
}

/** A wait longer than its block by this much is taken for a dead (half-open) connection. */
const HANG_MS = 15_000;
/** How long `close` waits for the reply of an unblocked wait (and its claim) before giving up on it. */
const CLOSE_WAIT_MS = 1000;

/**
 * An idle consumer's blocking wait on its queue's wake list (`BLPOP` with a finite block), on a
 * dedicated connection. The claim the consumer would send on waking is pipelined behind the
 * `BLPOP` on the same connection: Valkey runs it the moment the wait ends, so a wake-up costs no
 * round trip of its own (the claim's reply arrives with the wait's).
 *
 * Each wait ends in exactly one event, unless it was superseded (a later wait, `close`): a
 * superseded wait's claim, if it got jobs, is reported as orphaned so they are handed back. A wait
 * that hangs past its block, or a connection that could not be opened, is replaced by a fresh
 * connection; the reconnect stands in for the wait and ends in an event too, so the waiter never
 * leaves its consumer with nothing armed. `close` unblocks a wait in progress (`CLIENT UNBLOCK`)
 * and waits for its claim's reply, so a claim that ran is never left holding leases nobody works.
 */
export class WakeWaiter {
  private blocker?: ValkeyClient;
  private gen = 0;
  private since = 0;
  private blockMs = 0;
  private closed = false;
  /** The server's id of the connection the current wait blocks (from `CLIENT ID`, sent ahead of it). */
  private blockedId?: number;
  /** The generation of the last wait sent (`close` moves `gen` on, not this). */
  private waitGen = 0;
  /** Settles when the current wait's replies are in (and any orphaned jobs were handed back). */
  private inflight?: Promise<void>;
  /** A wait (or the reconnect standing in for one) is in progress. */
  busy = false;

  /** True when this waiter parks (enqueue may lease jobs to it; its claim goes ahead of its wait). */
  get parks(): boolean {
    return this.parked !== undefined;
  }

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly key: string,
    private readonly events: WaiterEvents,
    /** Set for a consumer to which enqueue may lease jobs (no rate limit, no lane policy). */
    private readonly parked?: ParkedWait,
  ) {}

  /** Opens the blocking connection (at start, so a consumer that cannot connect does not start). */
  async open(): Promise<void> {
    this.blocker = await this.conn.blockingClient();
    await this.parked?.load();
    await this.parked?.load('round'); // (completions may go with a park: see ParkedWait.send)
  }

  /**
   * Blocks up to `ms` on the wake list, then runs `claim` (whether woken or timed out). A waiter
   * with a park spot runs `claim` first, registers, and blocks on its inbox too (see `ParkedWait`);
   * `complete` (parked waits only) goes in one call with that claim, and is settled exactly once.
   */
  wait(ms: number, claim: ScriptCall<ClaimReply>, complete?: ParkedCompletion): void {
    if (!this.blocker || !this.parked) complete?.settled(undefined); // (sent again in a round)
    if (!this.blocker) return void this.reopen();
    this.busy = true;
    const gen = ++this.gen;
    this.since = Date.now();
    this.blockMs = ms;
    this.blockedId = undefined;
    this.waitGen = gen;
    const p = waitBatch(this.blocker);
    p.clientId((err, id) => {
      if (!err && gen === this.waitGen) this.blockedId = Number(id);
    });
    if (this.parked) return this.waitParked(gen, p, ms, claim, once(complete));
    p.blpop([this.key], ms / 1000);
    p.evalsha(scripts().get(claim.name)!.sha, claim.keys, claim.args);
    this.inflight = p.exec().then(
      (replies) => {
        const [waitErr] = replies?.[1] ?? [new Error('no reply to the wait')];
        return this.end(gen, waitErr ?? undefined, 'wait failed: ', parsedClaim(claim, replies?.[2]));
      },
      (err: unknown) => this.end(gen, err, 'wait failed: '),
    );
  }

  private waitParked(gen: number, p: WaitBatch, ms: number, claim: ScriptCall<ClaimReply>, complete?: ParkedCompletion): void {
    const parked = this.parked!;
    // The claim's reply arrives while the BLPOP still blocks: its jobs run now. `fresh` is its
    // wait, from which a lease popped later reports what is left; `handedBack` an orphan's release.
    let fresh = { waitMs: -2, at: Date.now() };
    let handedBack: Promise<void> | undefined;
    parked.send(p, ms, claim, (reply) => {
      if (gen !== this.gen || this.closed) {
        if (reply && reply.jobs.length > 0) handedBack = this.events.orphaned(reply);
        return;
      }
      if (reply) fresh = { waitMs: reply.waitMs, at: Date.now() };
      // A scheduled job due before the block ends (enqueued while the consumer was away): the
      // wait is cut, so that the next one blocks only until it is due.
      if (reply && reply.waitMs >= 0 && reply.waitMs + 5 < ms) this.cut(gen);
      this.events.claimed(reply);
    }, () => {
      // claim.lua was missing and is loaded now: end this wait (it did not register) so the
      // next one registers. (A wait already over, or superseded, is left alone.)
      this.cut(gen);
    }, complete);
    this.inflight = p.exec().then(
      async (replies) => {
        complete?.settled(undefined); // (a no-op when its reply came)
        await handedBack;
        const [waitErr] = replies?.[2] ?? [new Error('no reply to the wait')];
        const left = fresh.waitMs < 0 ? fresh.waitMs : Math.max(0, fresh.waitMs - (Date.now() - fresh.at));
        return this.end(gen, waitErr ?? undefined, 'wait failed: ', parked.popped(replies, left), false);
      },
      async (err: unknown) => {
        complete?.settled(undefined);
        await handedBack;
        return this.end(gen, err, 'wait failed: ');
      },
    );
  }

  /** Unblocks the wait of generation `gen`, if it is still the current one and blocked. */
  private cut(gen: number): void {
    if (gen === this.gen && !this.closed && this.blockedId !== undefined) void this.conn.unblock(this.blockedId, this.key).catch(() => false);
  }

  /** True (and the connection is being replaced) when the current wait outlived its block by 15 s. */
  hung(): boolean {
    if (!this.busy || Date.now() - this.since <= this.blockMs + HANG_MS) return false;
    void this.reopen();
    return true;
  }

  /**
   * Ends every wait and closes the connection. A wait in progress is unblocked first and its
   * claim's reply awaited (up to 1 s), so jobs that claim got are handed back, not left to expire.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.gen++;
    const inflight = this.busy ? this.inflight : undefined;
    if (inflight) {
      // A wait sent a moment ago has no id yet: its `CLIENT ID` reply is awaited, so that the
      // wait is unblocked rather than left to run out its block. A wait that had just ended has
      // its reply on the way: it is awaited all the same.
      let settled = false;
      void inflight.then(() => (settled = true));
      for (let t = 0; this.blockedId === undefined && !settled && t < CLOSE_WAIT_MS; t += 5) await new Promise((r) => setTimeout(r, 5));
      if (this.blockedId !== undefined && !settled) await this.conn.unblock(this.blockedId, this.key).catch(() => false);
      await waitAtMost(inflight, CLOSE_WAIT_MS);
    }
    // A parked consumer's registration outlives its waits (the next one renews it): it ends here,
    // and a job an enqueue leased to it first is handed back.
    let leased: ClaimReply | undefined;
    if (this.parked && this.blocker) await waitAtMost(this.parked.end(this.blocker).then((r) => (leased = r)), CLOSE_WAIT_MS);
    if (leased) await this.events.orphaned(leased);
    this.drop();
  }

  private async end(gen: number, err?: unknown, what = '', claimed?: ClaimReply, claim = claimed === undefined): Promise<void> {
    const current = gen === this.gen && !this.closed;
    // A failed wait on a cluster (a failover: UNBLOCKED, then MOVED) refreshes the blocking
    // client's slot map: a pipeline's redirects do not, so every later wait would go to the old
    // primary again, and a parked consumer would never reach the inbox its jobs are leased to.
    if (err !== undefined && this.blocker instanceof Cluster) this.blocker.refreshSlotsCache();
    if (!current || err !== undefined) {
      if (claimed && claimed.jobs.length > 0) await this.events.orphaned(claimed);
      if (!current) return;
      this.busy = false;
      return this.events.failed(err, what);
    }
    this.busy = false;
    this.events.woke(claimed, claim);
  }

  private drop(): void {
    const b = this.blocker;
    this.blocker = undefined;
    if (b) this.conn.release(b);
  }

  private async reopen(): Promise<void> {
    const gen = ++this.gen;
    this.busy = true;
    this.since = Date.now();
    this.blockMs = 0;
    this.drop();
    try {
      const fresh = await this.conn.blockingClient();
      if (this.closed) this.conn.release(fresh);
      else this.blocker = fresh;
      await this.end(gen);
    } catch (err) {
      await this.end(gen, err, 'reconnect failed: ');
    }
  }
}

/** `c` whose `settled` runs once only (later calls are ignored). */
function once(c: ParkedCompletion | undefined): ParkedCompletion | undefined {
  if (!c) return undefined;
  let done = false;
  return {
    call: c.call,
    settled: (outcome) => {
      if (done) return;
      done = true;
      c.settled(outcome);
    },
  };
}
