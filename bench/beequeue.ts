/**
 * The bee-queue side of the benchmark (the second anchor): `createJob().save()` / `saveAll` to
 * produce, `queue.process(concurrency, handler)` to consume, over its own `redis` v3 clients on
 * the bench Valkey. Its defaults, except `removeOnSuccess: true` on the worker (bee-queue has no
 * "keep the newest N": it keeps every succeeded job or none) and no event subscriptions, which
 * nothing in the benchmark listens to (`getEvents: false`; the worker still publishes its job
 * events, `sendEvents` stays on).
 */
import BeeQueue from 'bee-queue';
import { Redis } from 'ioredis';
import type { ConsumerHandle, ConsumerOptions, Driver, LaneOptions, Producer } from './common.js';

/** bee-queue's default key prefix. */
const PREFIX = 'bq';

/** Drives bee-queue on the Valkey at `url`. */
export class BeeQueueDriver implements Driver {
  readonly name = 'beequeue' as const;
  private readonly raw: Redis;
  private readonly redis: { host: string; port: number };

  constructor(url: string) {
    const u = new URL(url);
    this.redis = { host: u.hostname, port: Number(u.port) };
    this.raw = new Redis(url, { maxRetriesPerRequest: 1 });
  }

  /**
   * Opens a producer-only `Queue` with bee-queue's documented producer settings (`isWorker: false`,
   * `getEvents: false`, `storeJobs: false`: otherwise every saved job stays in a map of the
   * producer until an event about it arrives). Priorities and groups: bee-queue has none.
   */
  async producer(queue: string, lanes?: LaneOptions): Promise<Producer> {
    if (lanes?.priorities || lanes?.groups) throw new Error('bee-queue has no priorities or groups');
    const q = new BeeQueue(queue, { redis: this.redis, isWorker: false, getEvents: false, storeJobs: false });
    await q.ready();
    return {
      add: (payload) => q.createJob(payload).save(),
      addBatch: async (payloads) => {
        const failed = await q.saveAll(payloads.map((p) => q.createJob(p)));
        if (failed.size > 0) throw new Error(`bee-queue saveAll: ${failed.size} jobs failed: ${[...failed.values()][0]?.message}`);
      },
      close: () => q.close(),
    };
  }

  /** Opens a worker `Queue`; `start()` calls `process(concurrency, handler)`. Prefetch: bee-queue has none. */
  async consumer(queue: string, concurrency: number, onJob: (payload: unknown) => void, _opts?: ConsumerOptions): Promise<ConsumerHandle> {
    const q = new BeeQueue(queue, { redis: this.redis, removeOnSuccess: true, getEvents: false });
    q.on('error', (err) => console.error(`[bee-queue] ${err.message}`));
    await q.ready();
    return {
      start: async () => {
        q.process(concurrency, async (job) => {
          onJob(job.data);
        });
      },
      close: () => q.close(5000),
    };
  }

  /** Waiting + delayed + active jobs of `queue`. */
  async unfinished(queue: string): Promise<number> {
    const p = `${PREFIX}:${queue}:`;
    const [w, d, a] = await Promise.all([this.raw.llen(p + 'waiting'), this.raw.zcard(p + 'delayed'), this.raw.llen(p + 'active')]);
    return w + d + a;
  }

  /** Closes the inspection client. */
  async close(): Promise<void> {
    await this.raw.quit();
  }
}
