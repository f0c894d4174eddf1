import type { EchoMqConnection } from '../../core/connection/index.js';
import { describeError } from '../../core/reply-errors.js';
import { queueKeys, type QueueKeys } from '../../core/keys.js';
import { runRound } from '../../core/wire/index.js';
import { calls, type ClaimReply, type CompleteRelayingReply } from '../../core/wire/index.js';
import type { ScriptCall } from '../../core/scripts.js';
import type { ConsumerListener, RunnerCompletion } from '../telemetry-hooks.js';
import type { JobHandler } from '../job.js';
import { Backoff } from './backoff.js';
import type { FailureListener } from './failure-log.js';
import { JobRunner } from './job-runner.js';
import { ConsumerUpkeep } from './upkeep.js';
import { JobControls } from '../job-controls.js';
import type { ResolvedConsumerOptions } from '../processor-options.js';
import { WakeWaiter } from './wake-waiter.js';
import { ParkedWait, consumerTag } from './parked-wait.js';
import { parkSpot } from '../../core/wire/index.js';
import { RoundSizer } from './round-sizer.js';
import { StatsMeter } from './stats-meter.js';
import { announce } from '../../core/announce.js';
import type { ConsumerLogger } from '../../core/logger.js';

/**
 * Everything a consumer loop needs, resolved (see `resolveConsumerOptions`). `prefetch` defaults
 * to the concurrency: jobs claimed ahead of free slots, started without a round trip.
 */
export interface ConsumerConfig extends ResolvedConsumerOptions {
  readonly queue: string;
  readonly handler: JobHandler<unknown, unknown>;
  /** Longest idle block before re-checking (ms). Default 5000. */
  readonly maxIdleMs?: number;
  readonly logger?: ConsumerLogger;
  /** Called once per failed attempt, after the retry script scheduled the job again or buried it. */
  readonly onFailure?: FailureListener;
  /** This process relays the queue's flow hand-offs (docs/flows.md): completions ask for those they write
   * (leased to this process for `leaseMs`) and `relay` runs them at once, with no outbox signal or take. */
  readonly handoff?: { readonly leaseMs: number; relay(entries: readonly { readonly id: string; readonly text: string }[]): void };
  /** Told of landed and refused completions and of reaps (metrics; see `ConsumerListener`). */
  readonly listener?: ConsumerListener;
  /** Claim rounds in flight: 'adaptive' (default) measures whether claiming the capacity in two or three
   * shares, each its own round, is faster than in one (see `RoundSizer`); a number fixes it. */
  readonly rounds?: number | 'adaptive';
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const silent: ConsumerLogger = { warn: () => undefined, error: () => undefined };

/**
 * A supervised consumer loop for one queue. Claims in batches up to its free capacity
 * (concurrency + prefetch), completes in batches, and sends completions with the next claim in
 * one script call (round.lua), so a busy loop costs one round trip per batch. Idle, it blocks on the queue's
 * wake list (no polling). A timer extends the leases it holds and reaps expired leases.
 * Failed calls back off and retry. The loop is live by construction: unless it is stopping, a
 * round, a blocking wait, a back-off timer or a running handler always stands to run it again,
 * and the maintenance timer checks that invariant (and replaces a blocking wait that hung).
 */
export class Consumer {
  private readonly k: QueueKeys;
  private readonly runner: JobRunner;
  private readonly capacity: number;
  private toComplete: RunnerCompletion[] = [];
  private hasWork = true;
  private waitMs = -2;
  private stopping = false;
  private kickQueued = false;
  /** The next park waits for a queued turn (`deferPark`). */
  private parkDeferred = false;
  /** Rounds (complete + claim calls) in flight, and the claim slots they asked for. */
  private rounds = 0;
  /** Rounds in flight that claim (a parked wait may be armed beside rounds that only complete). */
  private claiming = 0;
  private reserved = 0;
  /** The claim slots the current wait's claim asked for (reserved until it answers). */
  private waitAsk = 0;
  private readonly sizer: RoundSizer;
  private readonly backoff: Backoff;
  private readonly waiter: WakeWaiter;
  private maintTimer?: NodeJS.Timeout;
  private readonly log: ConsumerLogger;
  private readonly upkeep: ConsumerUpkeep;
  /** Removes this consumer from the process description (`connection.process`). */
  private undescribe?: () => void;
  /** Counts and latencies per minute, flushed to the queue's stats hashes (docs/dashboard.md). */
  private readonly meter: StatsMeter;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly cfg: ConsumerConfig,
  ) {
    this.k = queueKeys(cfg.queue);
    this.log = cfg.logger ?? silent;
    this.backoff = new Backoff(() => {
      this.hasWork = true;
      this.pump();
    });
    // A wait's claim answered: its jobs run; with `claim` (no claim ran, or it failed) a round claims.
    // A parked wait woken by `wake` parks again, its next claim takes the work. Latency-critical.
    const took = (claimed: ClaimReply | undefined, claim: boolean): void => {
      const asked = this.endWait();
      if (claimed) this.onClaimed(claimed, asked);
      if (claim) this.hasWork = true;
      // Handlers just started: the park waits one turn, so that the completions of handlers that
      // end at once go with it (one call, no round trip of their own: see `pump`).
      if (claimed && claimed.jobs.length > 0 && this.runner.active > 0) this.deferPark();
      this.pump();
    };
    this.waiter = new WakeWaiter(conn, this.k.wake, {
      woke: took,
      claimed: (reply) => took(reply, reply === undefined),
      failed: (err, what) => {
        this.endWait();
        if (!this.stopping) this.supervise(err, what);
      },
      orphaned: (claimed) => this.upkeep.release(claimed.jobs),
      // Every consumer sends the parked claim: claim.lua decides (a queue with a stored rate limit
      // or lane policy is claimed plainly, and nothing is registered).
    }, new ParkedWait(conn, this.k, parkSpot(this.k, consumerTag(), cfg.leaseMs)));
    this.capacity = cfg.concurrency + (cfg.prefetch ?? cfg.concurrency);
    // Rounds in flight keep both the client and Valkey busy: while one round's scripts run, the
    // jobs of another run their handlers. The sizer picks how many claims share the capacity;
    // together they stay within it (`reserved`).
    this.sizer = new RoundSizer(this.capacity, cfg.rounds);
    this.meter = new StatsMeter(conn, this.k, this.log);
    this.runner = new JobRunner(cfg.queue, cfg.handler, cfg.concurrency, cfg.maxResultBytes, {
      completed: (c) => this.toComplete.push(c),
      failed: (h, error, fatal, stack) => this.upkeep.retry(h, error, fatal, stack),
      // The last running handler ended: nothing else finishes this turn, so the round goes now (a microtask).
      freed: () => (this.runner.active === 0 ? queueMicrotask(() => this.pump()) : this.kick()),
    }, { controls: new JobControls(conn, this.k, cfg.maxResultBytes), timeoutMs: cfg.timeoutMs, meter: this.meter });
    this.upkeep = new ConsumerUpkeep(conn, this.k, cfg, this.runner, this.log, this.meter);
  }

  /** Jobs whose handlers are running now. */
  get running(): number {
    return this.runner.active;
  }

  /** Starts claiming. */
  async start(): Promise<void> {
    announce(this.conn, 'queues', this.cfg.queue); // the registry of known queues
    this.undescribe = this.conn.process.add(() => ({ kind: 'queue', queue: this.cfg.queue, concurrency: this.cfg.concurrency, active: this.runner.active }));
    await this.upkeep.declarePolicy();
    await this.waiter.open();
    const every = Math.max(100, Math.min(Math.floor(this.cfg.leaseMs / 3), 5000));
    this.maintTimer = setInterval(() => void this.maintain(), every);
    this.kick();
  }

  /**
   * Stops claiming and hands prefetched jobs back at once; waits up to `deadlineMs` for running
   * handlers, then aborts the rest and hands their jobs back too (re-delivered, their attempt
   * given back); flushes completions last.
   */
  async stop(deadlineMs: number): Promise<void> {
    this.stopping = true;
    this.undescribe?.();
    await this.waiter.close(); // a claim pipelined with its wait is answered (and handed back) first
    const until = Date.now() + deadlineMs;
    while (this.rounds > 0 && Date.now() < until) await sleep(5);
    await this.upkeep.release(this.runner.takeBuffered());
    while (this.runner.active > 0 && Date.now() < until) await sleep(10);
    await this.upkeep.release(this.runner.abandonRunning('EchoMQ consumer shut down'));
    const flushUntil = Date.now() + 2000;
    while ((this.rounds > 0 || this.toComplete.length > 0) && Date.now() < flushUntil) {
      this.kick();
      await sleep(5);
    }
    if (this.maintTimer) clearInterval(this.maintTimer);
    this.backoff.clear();
    await this.meter.flush();
  }

  private kick(): void {
    if (this.kickQueued) return;
    this.kickQueued = true;
    // Defer one turn so completions resolved together go out in one call.
    setImmediate(() => {
      this.kickQueued = false;
      this.pump();
    });
  }

  /** Parks on the next turn rather than now (a queued `setImmediate` pumps). */
  private deferPark(): void {
    if (this.parkDeferred) return;
    this.parkDeferred = true;
    setImmediate(() => {
      this.parkDeferred = false;
      this.pump();
    });
  }

  /** Starts rounds while there is work for them and room in flight. */
  private pump(): void {
    if (this.backoff.holding) return;
    // An idle consumer that is about to park sends its completions with the park (round.lua:
    // complete + the parked claim), rather than in a round of their own and then the park.
    if (this.toComplete.length > 0 && this.claiming === 0 && this.canPark()) this.ensureWaiter(this.toComplete.splice(0, 1000));
    while (this.rounds < this.sizer.maxRounds) {
      const free = this.stopping ? 0 : Math.min(this.capacity - this.runner.size - this.reserved, this.sizer.share);
      const n = free > 0 && this.hasWork ? free : 0;
      // A second round in flight must carry enough work to be worth its own call.
      const worth = this.rounds === 0 ? 1 : Math.max(1, this.cfg.concurrency >> 2);
      if (this.toComplete.length + n < worth) break;
      void this.round(this.toComplete.splice(0, 1000), n);
    }
    // A parked wait needs no claiming round to end first (its claim takes the slots left beside
    // rounds that only complete): it registers while completions are out, so enqueue leases to it.
    if (!this.parkDeferred && (this.rounds === 0 || (this.waiter.parks && this.claiming === 0))) this.ensureWaiter();
  }

  /** True when `ensureWaiter` would park now (a parking waiter, idle, with a free slot). */
  private canPark(): boolean {
    return this.waiter.parks && !this.stopping && !this.waiter.busy && !this.hasWork && this.capacity - this.runner.size - this.reserved > 0;
  }

  /** The complete call for `done` (asking for the flow hand-offs it writes when this process relays them). */
  private completeCall(done: readonly RunnerCompletion[]): ScriptCall<unknown> {
    const handoff = this.cfg.handoff;
    return handoff ? calls.completeRelaying(this.k, this.cfg.keepDone, done, handoff.leaseMs) : calls.complete(this.k, this.cfg.keepDone, done);
  }

  /** The complete part of a parked wait's call: as a round's; failed or not run, the completions are sent again. */
  private parkedCompleted(done: RunnerCompletion[], outcome: PromiseSettledResult<unknown> | undefined): void {
    if (outcome?.status === 'fulfilled') return this.completed(done, outcome.value);
    this.toComplete.unshift(...done);
    if (outcome) this.supervise(outcome.reason);
    this.kick();
  }

  /**
   * One round: completes what finished and claims up to `n`, both in one round.lua call (one
   * round trip, one script call). Each part settles on its own: a claim that succeeded runs even
   * if the completion failed, and completions that failed are kept to be re-sent (a repeat is
   * refused, harmless).
   */
  private async round(done: RunnerCompletion[], n: number): Promise<void> {
    this.rounds++;
    this.claiming += n > 0 ? 1 : 0;
    this.reserved += n;
    const complete = done.length === 0 ? undefined : this.completeCall(done);
    const claim = n > 0 ? calls.claim(this.k, n, this.cfg.leaseMs, 1000) : undefined;
    let failure: unknown;
    let got = 0;
    try {
      const settled = await runRound<unknown, ClaimReply>(this.conn.scriptClient, complete, claim);
      if (settled.complete?.status === 'fulfilled') this.completed(done, settled.complete.value);
      else if (settled.complete) {
        this.toComplete.unshift(...done);
        failure = settled.complete.reason;
      }
      if (settled.claim?.status === 'fulfilled') got = this.onClaimed(settled.claim.value, n);
      else if (settled.claim) failure = settled.claim.reason;
    } catch (err) {
      this.toComplete.unshift(...done);
      failure = err;
    } finally {
      this.reserved -= n;
      this.rounds--;
      this.claiming -= n > 0 ? 1 : 0;
    }
    this.sizer.record(n, got, failure === undefined ? done.length : 0);
    if (failure === undefined) this.backoff.succeeded();
    else this.supervise(failure);
    this.pump();
  }

  /** A failed round or wait backs off (100 ms doubling to 5 s); the back-off's timer resumes the loop. */
  private supervise(err: unknown, what = ''): void {
    const delay = this.backoff.fail();
    if (!this.stopping || this.toComplete.length > 0) this.log.warn(`consumer ${this.cfg.queue}: ${what}${describeError(err)}; retrying in ${delay} ms`);
  }

  /** A completion call's reply: refused completions reported, hand-offs written relayed at once. */
  private completed(done: readonly RunnerCompletion[], reply: unknown): void {
    if (Array.isArray(reply)) return this.refused(done, reply as number[]);
    const r = reply as CompleteRelayingReply;
    this.refused(done, r.ok);
    if (r.handoffs.length > 0) this.cfg.handoff?.relay(r.handoffs);
  }

  /** Reports completions the fencing token refused (the lease was lost before they arrived). */
  private refused(sent: readonly RunnerCompletion[], replies: readonly number[]): void {
    this.cfg.listener?.completions(sent, replies);
    let landed = 0;
    replies.forEach((ok, i) => {
      if (ok === 1) landed++;
      else if (ok === 0) this.log.warn(`job ${sent[i].id} of "${this.cfg.queue}" finished attempt ${sent[i].attempt}, but its completion was refused (error: lease lost; the job was re-delivered)`);
    });
    this.meter.completed(landed);
  }

  /** Takes a claim's jobs; returns how many it got. */
  private onClaimed(r: ClaimReply, asked: number): number {
    this.waitMs = r.waitMs;
    this.hasWork = r.jobs.length === asked && r.waitMs === -1;
    const now = Date.now();
    this.meter.claimed(r.jobs, now);
    this.runner.accept(r.jobs, now);
    return r.jobs.length;
  }

  /**
   * Waits for work, with the claim for the free slots pipelined with the wait (see WakeWaiter);
   * `done` (a parked wait only) is completed in the same call. Completions it does not send go
   * back to `toComplete`.
   */
  private ensureWaiter(done?: RunnerCompletion[]): void {
    const free = Math.min(this.capacity - this.runner.size - this.reserved, 1000);
    if (this.stopping || this.waiter.busy || this.hasWork || free <= 0) {
      if (done) this.toComplete.unshift(...done);
      return;
    }
    const maxIdle = this.cfg.maxIdleMs ?? 5000;
    this.waitAsk = free;
    this.reserved += free;
    const complete = done && done.length > 0 ? { call: this.completeCall(done), settled: (o: PromiseSettledResult<unknown> | undefined) => this.parkedCompleted(done, o) } : undefined;
    this.waiter.wait(this.waitMs < 0 ? maxIdle : Math.max(5, Math.min(this.waitMs, maxIdle)), calls.claim(this.k, free, this.cfg.leaseMs, 1000), complete);
  }

  /** The wait ended: its claim slots are no longer reserved. Returns how many it asked for. */
  private endWait(): number {
    const asked = this.waitAsk;
    this.reserved -= asked;
    this.waitAsk = 0;
    return asked;
  }

  /**
   * The liveness invariant, checked by the maintenance timer: unless stopping, a round, a queued
   * kick, the back-off timer, a running handler or a blocking wait stands to run the loop again (a
   * wait that hung is replaced). Nothing armed would be a bug: it is reported, and the loop kicked.
   */
  private checkLive(): void {
    if (this.stopping || this.rounds > 0 || this.kickQueued || this.parkDeferred || this.backoff.holding || this.runner.active > 0) return;
    if (this.waiter.busy) {
      if (this.waiter.hung()) this.log.warn(`consumer ${this.cfg.queue}: a blocking wait hung past its block; reconnecting`);
      return;
    }
    this.log.warn(`consumer ${this.cfg.queue}: the loop had nothing armed; restarting it`);
    this.hasWork = true;
    this.kick();
  }

  private async maintain(): Promise<void> {
    this.checkLive();
    if (this.meter.due()) void this.meter.flush();
    if (await this.upkeep.maintain(this.stopping)) {
      this.hasWork = true;
      this.kick();
    }
  }
}
