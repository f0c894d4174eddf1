import type { Observable } from 'rxjs';
import type { Json } from '../core/codec.js';
import type { QueueService } from '../queue/queue-service.js';
import type { JobCounts, JobView, QueueEvent } from '../queue/job.js';
import { checkEnqueueOptions, type EnqueueItem, type EnqueueOptions, type QueueDefaults } from '../queue/queue-options.js';

/**
 * One registered queue (`EchoMqModule.forFeature`), typed by its payload `P` and result `R`;
 * inject it with `@InjectQueue(name)`. Every call delegates to `QueueService` with the queue's
 * name, so a handle behaves exactly as `QueueService` does for that queue. `M` maps job names
 * to their payload types, for `add(name, payload)` (default: any name, payload `P`), e.g.
 * `Queue<Payment, Json, { charge: Charge; refund: Refund }>`.
 */
export class Queue<P = Json, R = Json, M extends Record<string, unknown> = Record<string, P>> {
  constructor(
    /** The queue's name. */
    readonly name: string,
    private readonly queues: QueueService,
  ) {}

  /** Adds one job; resolves to its branded id. */
  enqueue(payload: P, opts?: EnqueueOptions): Promise<string> {
    return this.queues.enqueue<P>(this.name, payload, opts);
  }

  /**
   * Adds one job named `name` (`opts.name`; its payload typed by `M[name]`), as BullMQ's
   * `queue.add(name, data, opts)`; resolves to its branded id. A `@Processor(queue, { name })`
   * method takes it (docs/nest.md, "Job names").
   */
  add<K extends keyof M & string>(name: K, payload: M[K], opts?: Omit<EnqueueOptions, 'name'>): Promise<string> {
    checkEnqueueOptions(opts);
    return this.queues.enqueue<M[K]>(this.name, payload, { ...opts, name });
  }

  /** Adds up to 1000 jobs in one script call; resolves to their ids, in order. */
  enqueueMany(items: readonly EnqueueItem<P>[]): Promise<string[]> {
    return this.queues.enqueueMany<P>(this.name, items);
  }

  /** Reads one job (payload `P`, result `R`), or null when no row exists. */
  getJob(id: string): Promise<JobView<P, R> | null> {
    return this.queues.getJob<P, R>(this.name, id);
  }

  /** Cancels a job that has not started, or flags a running one (see `QueueService.cancel`). */
  cancel(id: string): Promise<'cancelled' | 'flagged' | 'finished' | 'missing'> {
    return this.queues.cancel(this.name, id);
  }

  /** Jobs per status, read in one round trip. */
  counts(): Promise<JobCounts> {
    return this.queues.counts(this.name);
  }

  /** The queue's lifecycle events as they happen (see `QueueService.events`). */
  events(): Observable<QueueEvent> {
    return this.queues.events(this.name);
  }

  /** The queue's effective defaults (module defaults, `queues[name]`, then its registration's). */
  get settings(): QueueDefaults {
    return this.queues.settings(this.name);
  }

  /** Mints a job id now, for an idempotent `enqueue(payload, { id })` later. */
  mintId(): string {
    return this.queues.mintId();
  }
}
