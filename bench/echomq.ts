/**
 * The EchoMQ side of the benchmark: `QueueService` to produce, the `Consumer` loop (no Nest) to
 * consume, configured as `ConsumerOrchestrator` configures it, with a done retention of 1000.
 */
import { Cluster, Redis } from 'iovalkey';
import { EchoMqConnection, queueKeys } from '@echomq/nestjs/protocol';
import { BUILTIN_DEFAULTS, Consumer, MetricsRegistry, countingFailures, countingListener, instrumentHandler, resolveConsumerOptions } from '@echomq/nestjs/unstable';
import { QueueService, type QueueDefaults } from '@echomq/nestjs';
import { groupOf, laneOf, type ConsumerHandle, type ConsumerOptions, type Driver, type LaneOptions, type Producer } from './common.js';

/** Done rows kept per queue, matching BullMQ's `removeOnComplete: { count: 1000 }`. */
export const ECHOMQ_KEEP_DONE = 1000;

/** Where the driver's Valkey is: a standalone server's URL, or a cluster's seed nodes. */
export type EchoTarget = string | { readonly cluster: readonly { host: string; port: number }[] };

async function open(target: EchoTarget): Promise<EchoMqConnection> {
  const conn = new EchoMqConnection(typeof target === 'string' ? { url: target } : { cluster: target.cluster });
  await conn.open();
  return conn;
}

/** Drives EchoMQ on the Valkey at `url` (or a cluster), its producers and consumers using the queue `defaults`. */
export class EchoMqDriver implements Driver {
  readonly name = 'echomq' as const;
  private readonly raw: Redis | Cluster;
  /** The telemetry counters, bumped as the Nest orchestrator bumps them. */
  private readonly metrics = new MetricsRegistry();

  constructor(
    private readonly url: EchoTarget,
    private readonly defaults: QueueDefaults = BUILTIN_DEFAULTS,
  ) {
    this.raw = typeof url === 'string' ? new Redis(url, { maxRetriesPerRequest: 1 }) : new Cluster([...url.cluster], { redisOptions: { maxRetriesPerRequest: 1 } });
  }

  /** Opens a connection and a `QueueService` bound to `queue`. */
  async producer(queue: string, lanes?: LaneOptions): Promise<Producer> {
    const conn = await open(this.url);
    const svc = new QueueService(conn, this.defaults);
    let k = 0;
    const opts = () => {
      const lane = groupOf(lanes, k);
      const priority = laneOf(lanes, k++);
      return lane !== undefined ? { lane } : priority === undefined ? undefined : { priority };
    };
    return {
      add: (payload) => svc.enqueue(queue, payload, opts()),
      addBatch: (payloads) => svc.enqueueMany(queue, payloads.map((payload) => ({ payload, opts: opts() }))),
      close: () => conn.close(),
    };
  }

  /** Opens a connection and builds a `Consumer` of `queue` (`opts.prefetch` as a processor's); `start()` begins claiming. */
  async consumer(queue: string, concurrency: number, onJob: (payload: unknown) => void, opts: ConsumerOptions = {}): Promise<ConsumerHandle> {
    const conn = await open(this.url);
    const d = new QueueService(conn, this.defaults).settings(queue);
    // Metrics on, tracing off: the telemetry the Nest orchestrator wires without OpenTelemetry.
    const counters = this.metrics.queue(queue);
    const consumer = new Consumer(conn, {
      queue,
      handler: instrumentHandler(queue, (job) => {
        onJob(job.payload);
      }, this.metrics),
      ...resolveConsumerOptions({ ...d, keepDone: ECHOMQ_KEEP_DONE }, { concurrency, prefetch: opts.prefetch }),
      rounds: opts.rounds,
      logger: { warn: (m) => console.warn(`[echomq] ${m}`), error: (m) => console.error(`[echomq] ${m}`) },
      onFailure: countingFailures(counters),
      listener: countingListener(counters),
    });
    return {
      start: () => consumer.start(),
      close: async () => {
        await consumer.stop(5000);
        await conn.close();
      },
    };
  }

  /** Pending + scheduled + active jobs of `queue`. */
  async unfinished(queue: string): Promise<number> {
    const k = queueKeys(queue);
    const lists = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((p) => this.raw.llen(k.pendingAt(p)));
    const [s, a, ...p] = await Promise.all([this.raw.zcard(k.scheduled), this.raw.zcount(k.active, '-inf', '(+inf'), ...lists]);
    const ring = [...new Set(await this.raw.lrange(k.laneRing, 0, -1))].filter((g) => g !== '');
    const g = await Promise.all(ring.map((x) => this.raw.llen(k.lane(x))));
    return [...p, ...g].reduce((x, y) => x + y, 0) + s + a;
  }

  /** Closes the inspection client. */
  async close(): Promise<void> {
    await this.raw.quit();
  }
}

/** The defaults the EchoMQ consumers run with (for the report). */
export const echoMqDefaults = { ...BUILTIN_DEFAULTS, keepDone: ECHOMQ_KEEP_DONE };
