/**
 * The BullMQ side of the benchmark: `Queue.add` / `addBulk` to produce, `Worker` to consume, with
 * BullMQ's defaults except `removeOnComplete: { count: 1000 }` on the worker (EchoMQ's retention).
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { laneOf, type ConsumerHandle, type Driver, type LaneOptions, type Producer } from './common.js';

/** Completed jobs BullMQ keeps per queue, matching EchoMQ's done retention. */
export const BULLMQ_REMOVE_ON_COMPLETE = { count: 1000 } as const;

/** The job name every benchmark job carries (BullMQ jobs are named). */
const JOB_NAME = 'bench';

/** Drives BullMQ on the Valkey at `url`. */
export class BullMqDriver implements Driver {
  readonly name = 'bullmq' as const;
  private readonly raw: Redis;
  private readonly connection: { host: string; port: number };

  constructor(url: string) {
    const u = new URL(url);
    this.connection = { host: u.hostname, port: Number(u.port) };
    this.raw = new Redis(url, { maxRetriesPerRequest: 1 });
  }

  /** Opens a `Queue` for `queue`. */
  async producer(queue: string, lanes?: LaneOptions): Promise<Producer> {
    const q = new Queue(queue, { connection: this.connection });
    await q.waitUntilReady();
    let k = 0;
    // BullMQ's priority 1 is its highest and 0 is "none": EchoMQ's p (higher first) is count - p.
    const opts = () => {
      const p = laneOf(lanes, k++);
      return p === undefined ? undefined : { priority: (lanes?.priorities ?? 0) - p };
    };
    return {
      add: (payload) => q.add(JOB_NAME, payload, opts()),
      addBatch: (payloads) => q.addBulk(payloads.map((data) => ({ name: JOB_NAME, data, opts: opts() }))),
      close: () => q.close(),
    };
  }

  /** Opens a `Worker` of `queue` with `autorun: false`; `start()` runs it. BullMQ has no prefetch, so no consumer options apply. */
  async consumer(queue: string, concurrency: number, onJob: (payload: unknown) => void): Promise<ConsumerHandle> {
    const worker = new Worker(
      queue,
      async (job) => {
        onJob(job.data);
      },
      { connection: this.connection, concurrency, autorun: false, removeOnComplete: BULLMQ_REMOVE_ON_COMPLETE },
    );
    worker.on('error', (err) => console.error(`[bullmq] ${err.message}`));
    await worker.waitUntilReady();
    let running: Promise<void> | undefined;
    return {
      start: async () => {
        running = worker.run();
        running.catch((err: Error) => console.error(`[bullmq] run: ${err.message}`));
      },
      close: async () => {
        await worker.close();
        await running;
      },
    };
  }

  /** Waiting + prioritized + delayed + active jobs of `queue`. */
  async unfinished(queue: string): Promise<number> {
    const p = `bull:${queue}:`;
    const [w, pr, d, a] = await Promise.all([
      this.raw.llen(p + 'wait'),
      this.raw.zcard(p + 'prioritized'),
      this.raw.zcard(p + 'delayed'),
      this.raw.llen(p + 'active'),
    ]);
    return w + pr + d + a;
  }

  /** Closes the inspection client. */
  async close(): Promise<void> {
    await this.raw.quit();
  }
}
