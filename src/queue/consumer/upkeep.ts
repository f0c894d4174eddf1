import type { EchoMqConnection } from '../../core/connection/index.js';
import { LeaseLostError } from '../../core/errors.js';
import { describeError } from '../../core/reply-errors.js';
import { JobCancelledError } from '../job-signals.js';
import type { QueueKeys } from '../../core/keys.js';
import { wire } from '../../core/wire/index.js';
import { declarePolicy, describePolicy, readPolicy, samePolicy, type ClaimLimits } from '../../core/wire/index.js';
import type { ConsumerLogger } from '../../core/logger.js';
import type { ResolvedConsumerOptions } from '../processor-options.js';
import type { ConsumerListener } from '../telemetry-hooks.js';
import { describeReap, reportFailure, type FailureListener } from './failure-log.js';
import { WORKER } from './attempt-record.js';
import type { Held, JobRunner } from './job-runner.js';
import type { StatsMeter } from './stats-meter.js';

/**
 * The consumer settings upkeep reads (its consumer passes its `ConsumerConfig`): the queue, the
 * declared policy, the retry and reap limits, and where failures and reaps are reported.
 */
export interface UpkeepConfig
  extends Pick<ResolvedConsumerOptions, 'leaseMs' | 'attempts' | 'backoff' | 'deadCap' | 'rateLimit' | 'lanePolicy'> {
  readonly queue: string;
  readonly onFailure?: FailureListener;
  readonly listener?: Pick<ConsumerListener, 'reaped'>;
}

/**
 * A consumer's calls beside its claim/complete rounds: handing jobs back (`release.lua`), failing
 * an attempt (`retry.lua`), and the maintenance tick that extends the leases it holds and reaps
 * expired ones (`extend.lua`, `reap.lua`). None of them can stall the loop: a failure is logged
 * and the lease it concerns is left to expire.
 */
export class ConsumerUpkeep {
  /** The stored policy last seen that differs from the declared one (warned once per change). */
  private warnedPolicy?: ClaimLimits;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly k: QueueKeys,
    private readonly cfg: UpkeepConfig,
    private readonly runner: JobRunner,
    private readonly log: ConsumerLogger,
    private readonly meter?: StatsMeter,
  ) {}

  /** The policy this process declares for the queue (its rateLimit / lanes options), if any. */
  private declared(): ClaimLimits | undefined {
    const { rateLimit, lanePolicy } = this.cfg;
    return rateLimit === undefined && lanePolicy === undefined ? undefined : { rateLimit, lanePolicy };
  }

  /**
   * Writes the declared policy as the queue's stored one (policy.lua), which every claim of every
   * runtime enforces: one rule, the stored one. Replacing a different stored policy is a warning
   * naming both, never a silent mix. Nothing declared: nothing written (the stored policy holds).
   */
  async declarePolicy(): Promise<void> {
    const mine = this.declared();
    if (!mine) return;
    const before = await declarePolicy(this.conn.scriptClient, this.k, mine);
    if (before) {
      this.log.warn(`consumer ${this.cfg.queue}: its policy (${describePolicy(mine)}) replaced the queue's stored policy (${describePolicy(before)}); every claim now enforces the new one`);
    }
    this.warnedPolicy = undefined;
  }

  /**
   * Upkeep's check of the stored policy: when it differs from the declared one (another process
   * declared another), a warning once per change; every claim enforces the stored one.
   */
  async checkPolicy(): Promise<void> {
    const mine = this.declared();
    if (!mine) return;
    const stored = await readPolicy(this.conn.client, this.k);
    if (samePolicy(stored, mine)) {
      this.warnedPolicy = undefined;
      return;
    }
    if (this.warnedPolicy && samePolicy(stored, this.warnedPolicy)) return;
    this.warnedPolicy = stored;
    this.log.warn(`consumer ${this.cfg.queue}: the queue's stored policy (${describePolicy(stored)}) differs from the one this process declared (${describePolicy(mine)}); every claim enforces the stored one`);
  }

  /** Hands jobs back to the front of pending, their attempt given back (in calls of 1000). */
  async release(held: readonly { id: string; token: string }[]): Promise<void> {
    for (let i = 0; i < held.length; i += 1000) {
      await wire.release(this.conn.scriptClient, this.k, held.slice(i, i + 1000)).catch((err: unknown) => {
        this.log.warn(`consumer ${this.cfg.queue}: release failed (${describeError(err)}); the leases will expire`);
      });
    }
  }

  /**
   * A failed attempt: scheduled again after its backoff, or buried (fatal, or its last attempt);
   * its history record names this process (`WORKER`) and carries the error's stack.
   */
  retry(h: Held, error: string, fatal: boolean, stack?: string): void {
    wire
      .retry(
        this.conn.scriptClient,
        this.k,
        { id: h.id, token: h.token, error, fatal, worker: WORKER, stack },
        { maxAttempts: this.cfg.attempts, backoff: this.cfg.backoff, deadCap: this.cfg.deadCap },
      )
      .then(
        (r) => {
          if (r.outcome === 'retry' || r.outcome === 'dead') this.meter?.failed(r.outcome === 'dead');
          reportFailure(this.cfg.onFailure, { queue: this.cfg.queue, id: h.id, attempt: h.claim.attempt, defaultMaxAttempts: this.cfg.attempts }, error, fatal, r);
        },
        (e: unknown) => this.log.warn(`consumer ${this.cfg.queue}: retry of ${h.id} failed (${describeError(e)}); its lease will expire`),
      );
  }

  /**
   * Aborts the handlers of jobs whose lease was lost (extend answered 0) with the reason that
   * tells why: `JobCancelledError` when the job was cancelled meanwhile (its row is `cancelled`,
   * or a cancel is requested: the reaper ends such a job cancelled), else `LeaseLostError`. The
   * extend reply cannot tell these apart, so the rows are read (one round trip, only on a loss;
   * a cancel is sticky, so a read after the refusal sees it). A failed read means `LeaseLostError`.
   */
  private async loseAll(lost: readonly Held[]): Promise<void> {
    const rows = await Promise.all(
      lost.map((h) => this.conn.client.hmget(this.k.claimedRow(h.id), 'status', 'cancel').catch(() => [null, null] as (string | null)[])),
    );
    lost.forEach((h, i) => {
      const [status, cancel] = rows[i];
      const cancelled = status === 'cancelled' || cancel === '1';
      this.runner.lose(h, cancelled ? new JobCancelledError('cancel requested (the lease was lost meanwhile)') : new LeaseLostError(h.id, this.cfg.queue));
    });
  }

  /**
   * Extends the leases held (a lost one aborts its handler with `LeaseLostError`, or
   * `JobCancelledError` when it was cancelled meanwhile; a requested cancel aborts it with
   * `JobCancelledError`), then, unless stopping, reaps expired leases. Returns true when the reap
   * put jobs back in pending (the loop should claim).
   */
  async maintain(stopping: boolean): Promise<boolean> {
    const c = this.conn.scriptClient;
    try {
      const held = this.runner.leases();
      for (let i = 0; i < held.length; i += 1000) {
        const part = held.slice(i, i + 1000);
        const ok = await wire.extend(c, this.k, this.cfg.leaseMs, part);
        const lost: Held[] = [];
        ok.forEach((v, j) => {
          if (v === 0) lost.push(part[j]);
          else if (v === 2) this.runner.cancel(part[j]); // a cancel was requested: abort the handler
        });
        if (lost.length > 0) await this.loseAll(lost);
      }
      if (stopping) return false;
      await this.checkPolicy();
      const r = await wire.reap(c, this.k, 100, this.cfg.attempts, this.cfg.deadCap);
      if (r.requeued + r.buried + r.cancelled > 0) this.cfg.listener?.reaped(r);
      this.meter?.failed(false, r.requeued);
      this.meter?.failed(true, r.buried);
      for (const j of r.jobs) this.log[j.outcome === 'buried' ? 'error' : 'warn'](describeReap(this.cfg.queue, j));
      return r.requeued > 0;
    } catch (err) {
      this.log.warn(`consumer ${this.cfg.queue}: maintenance failed (${describeError(err)})`);
      return false;
    }
  }
}
