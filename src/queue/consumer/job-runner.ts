import { decodePayload, encodePayload } from '../../core/codec.js';
import { FatalJobError } from '../job-signals.js';
import { jobTimeout } from '../../core/extras.js';
import { LazyAbort } from '../../core/lazy-abort.js';
import type { Json } from '../../core/codec.js';
import type { WireClaim } from '../../core/wire/index.js';
import type { RunnerCompletion } from '../telemetry-hooks.js';
import { errorText } from './error-text.js';
import { errorStack } from './attempt-record.js';
import type { JobHandler } from '../job.js';
import { RunningJob, type RunningClaim } from './running-job.js';
import { type JobControls } from '../job-controls.js';
import { JobCancelledError, JobTimeoutError } from '../job-signals.js';

/** A claimed job this process holds: buffered (prefetched) or running (its handler's `RunningJob` reads it). */
export interface Held extends RunningClaim {
  readonly id: string;
  readonly token: string;
  readonly claim: WireClaim;
  /** Its handler's `job.signal`, made on first use (most handlers never read it). */
  readonly abort: LazyAbort;
  /** Set when the lease was lost or the job was abandoned: its outcome is ignored. */
  lost: boolean;
  /** Set when a cancel was requested (extend answered 2): the attempt ends through retry (→ cancelled). */
  cancelled?: boolean;
  /** Set once its slot was given back (the handler ended, or its timeout passed). */
  settled?: boolean;
  /** When this process took the claim (epoch ms, client clock): run time is measured from it. */
  claimedAt: number;
  timer?: NodeJS.Timeout;
}

/** What a runner adds to each job beyond the claim: fenced row writes, a timeout. */
export interface RunnerOptions {
  /** Checkpoint, progress and log writes, and the retried job's last checkpoint. */
  readonly controls?: JobControls;
  /** Abort the handler and fail the attempt after this many ms (0 or absent: no timeout). */
  readonly timeoutMs?: number;
  /** Told each handler's run time (claim → end), for the stored metrics (`StatsMeter`). */
  readonly meter?: { ran(ms: number, now: number): void };
}

/** Where the runner sends what its handlers produce. */
export interface RunnerSink {
  /** A handler finished: complete the job. */
  completed(c: RunnerCompletion): void;
  /** A handler threw: retry or bury the job (`stack`: the thrown error's, for its attempt history). */
  failed(h: Held, error: string, fatal: boolean, stack?: string): void;
  /** A slot freed up (more may be claimed). */
  freed(): void;
}

const MAX_ERROR_BYTES = 8192;
const CANCELLED = 'JobCancelledError: cancel requested';

function abort(h: Held, reason: Error): void {
  h.lost = true;
  h.abort.abort(reason);
}

/**
 * Runs handlers for claimed jobs, at most `concurrency` at once. Jobs claimed beyond that wait
 * in a prefetch buffer and start the moment a slot frees, without a round trip.
 */
export class JobRunner {
  private readonly held = new Map<string, Held>();
  private readonly buffer: Held[] = [];
  private running = 0;

  constructor(
    private readonly queue: string,
    private readonly handler: JobHandler<unknown, unknown>,
    private readonly concurrency: number,
    private readonly maxResultBytes: number,
    private readonly sink: RunnerSink,
    private readonly opts: RunnerOptions = {},
  ) {}

  /** Jobs held (running or buffered). */
  get size(): number {
    return this.held.size;
  }

  /** Handlers running now. */
  get active(): number {
    return this.running;
  }

  /** Takes claimed jobs: starts what fits, buffers the rest. */
  accept(claims: readonly WireClaim[], claimedAt = Date.now()): void {
    for (const claim of claims) {
      const h: Held = { id: claim.id, token: claim.token, claim, abort: new LazyAbort(), lost: false, claimedAt };
      this.held.set(h.id, h);
      this.buffer.push(h);
    }
    this.drain();
  }

  /**
   * Every held job whose lease is still ours and not cancelled: a cancelled job's lease is left
   * to expire, so a handler that never stops is reaped (→ cancelled) after its lease.
   */
  leases(): Held[] {
    return [...this.held.values()].filter((h) => !h.lost && !h.cancelled);
  }

  /**
   * A cancel was requested for a held job (extend answered 2): a running handler's signal aborts
   * with `JobCancelledError` and its attempt ends through retry (→ cancelled) however it ends; a
   * buffered job is ended at once.
   */
  cancel(h: Held): void {
    if (h.lost || h.cancelled) return;
    h.cancelled = true;
    const i = this.buffer.indexOf(h);
    if (i < 0) {
      h.abort.abort(new JobCancelledError());
      return;
    }
    this.buffer.splice(i, 1);
    this.held.delete(h.id);
    h.lost = true;
    this.sink.failed(h, CANCELLED, false);
  }

  /** Marks a job's lease lost: its handler is aborted with `reason` (`LeaseLostError`, …) and its outcome ignored. */
  lose(h: Held, reason: Error): void {
    abort(h, reason);
    const i = this.buffer.indexOf(h);
    if (i >= 0) {
      this.buffer.splice(i, 1);
      this.held.delete(h.id);
    }
  }

  /** Removes and returns the buffered jobs that never started. */
  takeBuffered(): Held[] {
    const out = this.buffer.splice(0);
    for (const h of out) this.held.delete(h.id);
    return out;
  }

  /** Aborts every running handler and returns the jobs it abandons. */
  abandonRunning(reason: string): Held[] {
    const out = [...this.held.values()].filter((h) => !h.lost);
    for (const h of out) abort(h, new Error(reason));
    return out;
  }

  private drain(): void {
    while (this.running < this.concurrency && this.buffer.length > 0) this.start(this.buffer.shift()!);
  }

  private start(h: Held): void {
    this.running++;
    const c = this.opts.controls;
    // A retried job starts with its last checkpoint: one read, only from the second attempt on.
    if (c && h.claim.attempt > 1) {
      c.checkpointed(h.id).then(
        (ckpt) => this.run(h, ckpt),
        () => this.run(h, undefined),
      );
    } else this.run(h, undefined);
  }

  private run(h: Held, checkpointed: Json | undefined): void {
    const job = new RunningJob(h, this.queue, checkpointed, this.opts.controls);
    const limit = jobTimeout(this.opts.timeoutMs, h.claim.extras);
    if (limit > 0) h.timer = setTimeout(() => this.timeout(h, limit), limit);
    // The handler starts synchronously (no extra turn of the event loop before it runs).
    let outcome: unknown;
    try {
      try {
        job.payload = decodePayload(h.claim.payload);
      } catch {
        throw new FatalJobError('payload is not valid JSON');
      }
      outcome = this.handler(job);
    } catch (err) {
      outcome = Promise.reject(err);
    }
    Promise.resolve(outcome).then(
      (res) => this.finish(h, res),
      (err: unknown) => this.fail(h, err),
    );
  }

  /** The timeout passed: the handler is aborted and the attempt fails now (its slot is given back). */
  private timeout(h: Held, ms: number): void {
    if (h.settled || h.lost) return;
    const err = new JobTimeoutError(ms);
    h.abort.abort(err);
    this.fail(h, err);
    h.lost = true; // whatever the handler does later is ignored
  }

  private settle(h: Held): void {
    if (h.settled) return;
    h.settled = true;
    if (this.opts.meter) {
      const now = Date.now();
      this.opts.meter.ran(now - h.claimedAt, now);
    }
    if (h.timer) clearTimeout(h.timer);
    this.running--;
    this.held.delete(h.id);
    this.drain();
    this.sink.freed();
  }

  private finish(h: Held, res: unknown): void {
    let result: string;
    try {
      result = res === undefined ? '' : encodePayload(res, this.maxResultBytes);
    } catch (err) {
      this.fail(h, new FatalJobError(`handler result refused: ${(err as Error).message}`));
      return;
    }
    // A job cancelled while running ends cancelled (through retry), not done.
    if (h.cancelled && !h.lost) this.sink.failed(h, CANCELLED, false);
    else if (!h.lost) this.sink.completed({ id: h.id, token: h.token, result, attempt: h.claim.attempt });
    this.settle(h);
  }

  private fail(h: Held, err: unknown): void {
    if (!h.lost) {
      // An unrouted job name (EMQ_NO_HANDLER) is fatal too: a retry would find the same handlers.
      const fatal = err instanceof FatalJobError || (err instanceof Error && (err.name === 'FatalJobError' || (err as { code?: unknown }).code === 'EMQ_NO_HANDLER'));
      this.sink.failed(h, errorText(err).slice(0, MAX_ERROR_BYTES), fatal, errorStack(err));
    }
    this.settle(h);
  }
}
