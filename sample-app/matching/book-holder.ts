import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { BusService, Processor, QueueService, type Job } from '@echomq/nestjs';
import { holderJobId, SHARDS } from '../engine/ids.js';
import { BOOKS_QUEUE, commandTopic } from '../exchange.names.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { ShardRun } from './shard-run.js';

/** The payload of a book-holder job. */
export interface HolderPayload {
  readonly shard: number;
}

/** How long a holder's lease lasts without extension: a dead holder's shard moves within ~2 lease lengths. */
export const HOLDER_LEASE_MS = 2000;
/** How long the holder waits for a wake-up signal before reading its log anyway. */
const POLL_MS = 250;

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal, wake: { fire?: () => void }): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      wake.fire = undefined;
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done);
    wake.fire = done;
  });
}

/**
 * Single writer per shard: each shard's book is matched by whoever holds that shard's job on the
 * `books` queue. The job never completes: its lease (extended while the process lives, fenced by
 * its token) is the shard's lease. When the holder dies its lease expires and any live instance's
 * reaper hands the job to that instance's consumer, which rebuilds the book from the shard's log.
 * A clean shutdown stops reading and lets EchoMQ hand the job back at once (released, attempt
 * given back), so the other instance takes over without waiting for the lease.
 */
@Injectable()
export class BookHolder implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('BookHolder');
  private stopping = false;
  private readonly runs = new Map<number, ShardRun>();

  constructor(
    private readonly queues: QueueService,
    private readonly bus: BusService,
    private readonly store: ExchangeStore,
  ) {}

  /** Shards this instance holds right now. */
  held(): number[] {
    return [...this.runs.keys()].sort();
  }

  /** Every instance enqueues the holder jobs; their fixed ids make that one job per shard. */
  async onApplicationBootstrap(): Promise<void> {
    const items = Array.from({ length: SHARDS }, (_, shard) => ({
      payload: { shard },
      opts: { id: holderJobId(shard), attempts: 1000, backoff: { type: 'fixed' as const, delayMs: 100 } },
    }));
    await this.queues.enqueueMany<HolderPayload>(BOOKS_QUEUE, items);
  }

  /** Holds one shard until this process stops or loses the lease. */
  @Processor(BOOKS_QUEUE, { concurrency: SHARDS, prefetch: 0, leaseMs: HOLDER_LEASE_MS })
  async hold(job: Job<HolderPayload>): Promise<void> {
    const shard = job.payload.shard;
    const run = new ShardRun(shard, { queues: this.queues, bus: this.bus, store: this.store });
    const wake: { fire?: () => void } = {};
    const sub = this.bus.signals(commandTopic(shard)).subscribe({ next: () => wake.fire?.(), error: () => undefined });
    this.runs.set(shard, run);
    try {
      const t0 = Date.now();
      await run.recover(job.signal);
      this.log.log(`holding shard ${shard} (book rebuilt from its log in ${Date.now() - t0} ms, attempt ${job.attempt})`);
      while (!this.stopping && !job.signal.aborted) {
        try {
          if ((await run.step()) === 0) await pause(POLL_MS, job.signal, wake);
        } catch (err) {
          // Valkey unreachable or a refused write: the batch is redone from the same place.
          this.log.warn(`shard ${shard}: ${err instanceof Error ? err.message : String(err)}; retrying`);
          await pause(500, job.signal, wake);
        }
      }
      // Stopping: wait for EchoMQ to hand the job back (it aborts the signal as it releases it).
      while (!job.signal.aborted) await pause(1000, job.signal, wake);
    } finally {
      sub.unsubscribe();
      if (this.runs.get(shard) === run) this.runs.delete(shard);
    }
    throw new Error(`shard ${shard} released`);
  }

  /** Stops matching before the consumers stop, so the shards are handed back consistent. */
  beforeApplicationShutdown(): void {
    this.stopping = true;
  }
}
