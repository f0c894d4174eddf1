import { decodePayload, encodePayload } from '../protocol/codec.js';
import type { EchoMqConnection, ValkeyClient } from '../protocol/connection.js';
import { FatalJobError } from '../protocol/errors.js';
import { queueKeys, type QueueKeys } from '../protocol/keys.js';
import { wire, type ClaimReply, type WireClaim, type WireCompletion } from '../protocol/wire.js';
import type { Job, JobHandler } from './job.js';

/** Where a consumer reports what it cannot throw to anyone. */
export interface ConsumerLogger {
  warn(message: string): void;
  error(message: string, err?: unknown): void;
}

/** Everything a consumer loop needs, resolved. */
export interface ConsumerConfig {
  readonly queue: string;
  readonly handler: JobHandler<unknown, unknown>;
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly attempts: number;
  /** Wire form of the default backoff (`f:<ms>` / `e:<ms>`). */
  readonly backoff: string;
  readonly keepDone: number;
  readonly deadCap: number;
  readonly maxResultBytes: number;
  /** Longest idle block before re-checking (ms). Default 5000. */
  readonly maxIdleMs?: number;
  readonly logger?: ConsumerLogger;
}

interface Running {
  readonly id: string;
  readonly token: string;
  readonly ctrl: AbortController;
  lost: boolean;
}

const MAX_ERROR_BYTES = 8192;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const silent: ConsumerLogger = { warn: () => undefined, error: () => undefined };

/**
 * A supervised consumer loop for one queue. Claims in batches up to its free concurrency,
 * completes in batches, and pipelines completions with the next claim so a busy loop costs one
 * round trip per batch. Idle, it blocks on the queue's wake list (no polling). A timer extends
 * the leases of running jobs and reaps expired leases. Connection failures back off and retry.
 */
export class Consumer {
  private readonly k: QueueKeys;
  private readonly inflight = new Map<string, Running>();
  private toComplete: WireCompletion[] = [];
  private hasWork = true;
  private waitMs = -2;
  private stopping = false;
  private ticking = false;
  private again = false;
  private kickQueued = false;
  private blocker?: ValkeyClient;
  private blocking = false;
  private maintTimer?: NodeJS.Timeout;
  private failures = 0;
  private readonly log: ConsumerLogger;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly cfg: ConsumerConfig,
  ) {
    this.k = queueKeys(cfg.queue);
    this.log = cfg.logger ?? silent;
  }

  /** Jobs whose handlers are running now. */
  get running(): number {
    return this.inflight.size;
  }

  /** Starts claiming. */
  async start(): Promise<void> {
    this.blocker = await this.conn.blockingClient();
    const every = Math.max(100, Math.min(Math.floor(this.cfg.leaseMs / 3), 5000));
    this.maintTimer = setInterval(() => void this.maintain(), every);
    this.kick();
  }

  /**
   * Stops claiming, waits up to `deadlineMs` for running handlers, then aborts the rest (their
   * jobs stay leased and are re-delivered when the lease expires) and flushes completions.
   */
  async stop(deadlineMs: number): Promise<void> {
    this.stopping = true;
    if (this.blocker) this.conn.release(this.blocker);
    const until = Date.now() + deadlineMs;
    while (this.inflight.size > 0 && Date.now() < until) await sleep(10);
    for (const r of this.inflight.values()) {
      // Abandoned, not failed: its outcome is ignored and the lease expiry re-delivers the job.
      r.lost = true;
      r.ctrl.abort(new Error('EchoMQ consumer shut down'));
    }
    const flushUntil = Date.now() + 2000;
    while ((this.ticking || this.toComplete.length > 0) && Date.now() < flushUntil) {
      this.kick();
      await sleep(5);
    }
    if (this.maintTimer) clearInterval(this.maintTimer);
  }

  private kick(): void {
    if (this.ticking) {
      this.again = true;
      return;
    }
    if (this.kickQueued) return;
    this.kickQueued = true;
    // Defer one turn so completions resolved together go out in one call.
    setImmediate(() => {
      this.kickQueued = false;
      void this.tick();
    });
  }

  private async tick(): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    let done: WireCompletion[] = [];
    try {
      do {
        this.again = false;
        done = this.toComplete.length > 0 ? this.toComplete.splice(0, 1000) : [];
        const free = this.stopping ? 0 : Math.min(this.cfg.concurrency - this.inflight.size, 1000);
        const claim = free > 0 && this.hasWork;
        if (done.length === 0 && !claim) break;
        const c = this.conn.scriptClient;
        // Issued in the same tick, both calls share one write: one round trip.
        const sent = done;
        const [, claimed] = await Promise.all([
          sent.length > 0 ? wire.complete(c, this.k, this.cfg.keepDone, sent).then((r) => this.refused(sent, r)) : undefined,
          claim ? wire.claim(c, this.k, free, this.cfg.leaseMs) : undefined,
        ]);
        done = [];
        this.failures = 0;
        if (claimed) this.onClaimed(claimed, free);
      } while (this.again || this.toComplete.length > 0 || (this.hasWork && !this.stopping && this.inflight.size < this.cfg.concurrency));
    } catch (err) {
      // Supervision: keep unsent completions (a repeated completion is refused, harmless), back off.
      if (done.length > 0) this.toComplete.unshift(...done);
      this.failures++;
      const delay = Math.min(50 * 2 ** this.failures, 5000);
      if (!this.stopping || this.toComplete.length > 0) this.log.warn(`consumer ${this.cfg.queue}: ${(err as Error).message}; retrying in ${delay} ms`);
      this.ticking = false;
      setTimeout(() => {
        this.hasWork = true;
        this.kick();
      }, delay).unref();
      return;
    }
    this.ticking = false;
    this.ensureWaiter();
  }

  /** Reports completions the fencing token refused (the lease was lost before they arrived). */
  private refused(sent: readonly WireCompletion[], replies: readonly number[]): void {
    replies.forEach((ok, i) => {
      if (ok === 0) this.log.warn(`consumer ${this.cfg.queue}: completion of ${sent[i].id} refused (its lease was lost; the job was re-delivered)`);
    });
  }

  private onClaimed(r: ClaimReply, asked: number): void {
    this.waitMs = r.waitMs;
    this.hasWork = r.jobs.length === asked && r.waitMs === -1;
    for (const w of r.jobs) this.run(w);
  }

  private ensureWaiter(): void {
    if (this.stopping || this.blocking || this.hasWork || !this.blocker) return;
    if (this.inflight.size >= this.cfg.concurrency) return;
    const maxIdle = this.cfg.maxIdleMs ?? 5000;
    const ms = this.waitMs < 0 ? maxIdle : Math.max(5, Math.min(this.waitMs, maxIdle));
    this.blocking = true;
    this.blocker.blpop(this.k.wake, ms / 1000).then(
      () => {
        this.blocking = false;
        this.hasWork = true;
        this.kick();
      },
      async (err: Error) => {
        if (this.stopping) return;
        this.failures++;
        const delay = Math.min(50 * 2 ** this.failures, 5000);
        this.log.warn(`consumer ${this.cfg.queue}: wait failed (${err.message}); retrying in ${delay} ms`);
        await sleep(delay);
        this.blocking = false;
        this.hasWork = true;
        this.kick();
      },
    );
  }

  private run(w: WireClaim): void {
    const entry: Running = { id: w.id, token: w.token, ctrl: new AbortController(), lost: false };
    this.inflight.set(w.id, entry);
    let payload: unknown;
    const job: Job<unknown> = {
      id: w.id,
      queue: this.cfg.queue,
      get payload() {
        return payload;
      },
      attempt: w.attempt,
      token: w.token,
      signal: entry.ctrl.signal,
    };
    Promise.resolve()
      .then(() => {
        try {
          payload = decodePayload(w.payload);
        } catch {
          throw new FatalJobError('payload is not valid JSON');
        }
        return this.cfg.handler(job);
      })
      .then(
        (res) => this.finish(entry, res),
        (err: unknown) => this.fail(entry, err),
      );
  }

  private finish(entry: Running, res: unknown): void {
    let result: string;
    try {
      result = res === undefined ? '' : encodePayload(res, this.cfg.maxResultBytes);
    } catch (err) {
      this.fail(entry, new FatalJobError(`handler result refused: ${(err as Error).message}`));
      return;
    }
    this.inflight.delete(entry.id);
    if (!entry.lost) this.toComplete.push({ id: entry.id, token: entry.token, result });
    this.kick();
  }

  private fail(entry: Running, err: unknown): void {
    this.inflight.delete(entry.id);
    this.kick();
    if (entry.lost) return;
    const e = err instanceof Error ? err : new Error(String(err));
    const fatal = e instanceof FatalJobError || e.name === 'FatalJobError';
    const text = `${e.name}: ${e.message}`.slice(0, MAX_ERROR_BYTES);
    wire
      .retry(
        this.conn.scriptClient,
        this.k,
        { id: entry.id, token: entry.token, error: text, fatal },
        { maxAttempts: this.cfg.attempts, backoff: this.cfg.backoff, deadCap: this.cfg.deadCap },
      )
      .catch((e2: Error) => this.log.warn(`consumer ${this.cfg.queue}: retry of ${entry.id} failed (${e2.message}); its lease will expire`));
  }

  private async maintain(): Promise<void> {
    const c = this.conn.scriptClient;
    try {
      const held = [...this.inflight.values()].filter((r) => !r.lost);
      for (let i = 0; i < held.length; i += 1000) {
        const part = held.slice(i, i + 1000);
        const ok = await wire.extend(c, this.k, this.cfg.leaseMs, part);
        ok.forEach((v, j) => {
          if (v === 0) {
            part[j].lost = true;
            part[j].ctrl.abort(new Error('EchoMQ lease lost'));
          }
        });
      }
      if (this.stopping) return;
      const r = await wire.reap(c, this.k, 100, this.cfg.attempts, this.cfg.deadCap);
      if (r.requeued > 0) {
        this.hasWork = true;
        this.kick();
      }
    } catch (err) {
      this.log.warn(`consumer ${this.cfg.queue}: maintenance failed (${(err as Error).message})`);
    }
  }
}
