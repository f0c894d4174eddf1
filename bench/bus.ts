/**
 * The Bus side of the benchmark (EchoMQ only: BullMQ has no retained event log read by consumer
 * groups): the metric names, and how a phase opens a `BusService` and a `GroupConsumer` without
 * Nest, the way `GroupOrchestrator` would.
 */
import { Redis } from 'iovalkey';
import { BusService, type BusEvent } from '@echomq/nestjs';
import { EchoMqConnection, topicKeys } from '@echomq/nestjs/protocol';
import { GroupConsumer } from '@echomq/nestjs/unstable';
import { BATCH, payload100 } from './common.js';

/** The Bus metrics written under `"bus"` in `bench/results.json`, in table order. */
export const BUS_METRICS = [
  'bus_publish_single_per_s',
  'bus_publish_batch_per_s',
  'bus_group_c1_per_s',
  'bus_group_c1_prefetch50_per_s',
  'bus_group_c50_per_s',
  'bus_latency_p50_ms',
  'bus_latency_p99_ms',
] as const;

/** One Bus metric name. */
export type BusMetric = (typeof BUS_METRICS)[number];

/**
 * The raw anchor of each Bus throughput row (`bus-raw.ts`), measured in the same phase right
 * before or after EchoMQ's run (the order alternating per repetition): hand-written commands over
 * the same stream. Written under `"bus"` beside the row; the ratio is EchoMQ / raw.
 */
export const BUS_ANCHORS = {
  bus_publish_single_per_s: 'raw_xadd_single_per_s',
  bus_publish_batch_per_s: 'raw_xadd_batch_per_s',
  bus_group_c1_per_s: 'raw_group_c1_per_s',
  // The same raw COUNT 50 loop as raw_group_c1_per_s, measured again beside the read-ahead row under its own name.
  bus_group_c1_prefetch50_per_s: 'raw_group_c1_ra_per_s',
  bus_group_c50_per_s: 'raw_group_c50_per_s',
} as const satisfies Partial<Record<BusMetric, string>>;

/** A Bus row that has a raw anchor. */
export type AnchoredBusMetric = keyof typeof BUS_ANCHORS;

/** One raw anchor metric name. */
export type BusAnchorMetric = (typeof BUS_ANCHORS)[AnchoredBusMetric];

/** The Bus rows with an anchor, in table order. */
export const ANCHORED_BUS_METRICS = BUS_METRICS.filter((m): m is AnchoredBusMetric => m in BUS_ANCHORS);

/** The queue row measured with the lifecycle log on (EchoMQ only; written under `"echomq"`). */
export const EVENTS_LOG_METRIC = 'process_c50_events_log_per_s';
/** The EchoMQ-only fair-lanes row: `process_c50_per_s` with the jobs over 100 groups (BullMQ OSS has no groups). */
export const GROUPS_METRIC = 'process_c50_groups_per_s';

/** The `eventsLog` bound the lifecycle-log phase sets on the queue defaults. */
export const EVENTS_LOG_ENTRIES = 10_000;

/**
 * The read-ahead (`prefetch`, docs/bus.md "Read-ahead") of the `bus_group_c1_prefetch50_per_s`
 * member: one read fetches up to 1 + 50 entries, as its raw anchor's `XREADGROUP … COUNT 50`.
 */
export const BUS_READ_AHEAD = 50;

/** The group every benchmark consumer joins. */
export const BENCH_GROUP = 'bench';

/** A publisher: one connection and a `BusService` with its defaults. */
export interface Publisher {
  readonly bus: BusService;
  /** Closes the service (pending automatic trims) and its connection. */
  close(): Promise<void>;
}

/** Opens a connection and a `BusService` with its defaults (automatic trims every 5 s). */
export async function openPublisher(url: string): Promise<Publisher> {
  const conn = new EchoMqConnection({ url });
  await conn.open();
  const bus = new BusService(conn);
  return {
    bus,
    close: async () => {
      await bus.close();
      await conn.close();
    },
  };
}

/** A connected group member that has not started reading yet. */
export interface Member {
  /** Creates the group if needed and starts reading. */
  start(): Promise<void>;
  /** Stops reading, waits for running handlers, flushes acks, closes its connection. */
  close(): Promise<void>;
}

/** Publishes `n` events made by `make(i)` on `topic`, `BATCH` per `publishMany` call. */
export async function publishBatches(pub: Publisher, topic: string, n: number, make: (i: number) => unknown): Promise<void> {
  for (let i = 0; i < n; i += BATCH) {
    const part = Array.from({ length: Math.min(BATCH, n - i) }, (_, j) => make(i + j));
    await pub.bus.publishMany(topic, part);
  }
}

/** Fills `topic`'s log with `n` 100-byte events before a group reads it (its own publisher, closed after). */
export async function prefill(url: string, topic: string, n: number): Promise<void> {
  const pub = await openPublisher(url);
  try {
    await publishBatches(pub, topic, n, payload100);
  } finally {
    await pub.close();
  }
}

/**
 * Opens a connection and builds a `GroupConsumer` of `topic` (group `bench`, from the start of
 * the log, the given concurrency and `prefetch` (0: none, the default), every other option its
 * default) whose handler calls `onEvent`.
 */
export async function openMember(url: string, topic: string, concurrency: number, onEvent: (e: BusEvent) => void, prefetch = 0): Promise<Member> {
  const conn = new EchoMqConnection({ url });
  await conn.open();
  const member = new GroupConsumer(conn, {
    topic,
    consumer: 'bench-1',
    options: { group: BENCH_GROUP, concurrency, prefetch, from: 'start' },
    handler: async (e) => {
      onEvent(e);
    },
    logger: { warn: (m) => console.warn(`[echomq bus] ${m}`), error: (m) => console.error(`[echomq bus] ${m}`) },
  });
  return {
    start: () => member.start(),
    close: async () => {
      await member.stop(5000);
      await conn.close();
    },
  };
}

/** Reads a topic's group state for the phases: entries still pending (unacknowledged). */
export class BusInspector {
  private readonly raw: Redis;

  constructor(url: string) {
    this.raw = new Redis(url, { maxRetriesPerRequest: 1 });
  }

  /** The pending-entry count of `group` on `topic` (the `XPENDING` summary's first field). */
  async pending(topic: string, group = BENCH_GROUP): Promise<number> {
    const r = (await this.raw.call('XPENDING', topicKeys(topic).log, group)) as [number | string, ...unknown[]];
    return Number(r[0]);
  }

  /** Resolves once nothing is pending in `group` on `topic`; throws after `timeoutMs`. */
  async acked(topic: string, timeoutMs = 60_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while ((await this.pending(topic)) > 0) {
      if (Date.now() > until) throw new Error(`bus: topic ${topic} still has pending entries after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 1));
    }
  }

  /** Closes the inspection client. */
  async close(): Promise<void> {
    await this.raw.quit();
  }
}
