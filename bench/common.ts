/**
 * Shared pieces of the benchmark: the metric names, the run sizes, payloads, percentiles, and
 * the driver interface both systems implement.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';

/** The metrics written to `bench/results.json`, in table order. */
export const METRICS = [
  'enqueue_single_per_s',
  'enqueue_batch_per_s',
  'process_c1_per_s',
  'process_c1_prefetch0_per_s',
  'process_c10_per_s',
  'process_c50_per_s',
  'process_c200_per_s',
  'process_c50_prio_per_s',
  'process_2x50_per_s',
  'process_c50_backlog_10k_per_s',
  'process_c50_backlog_100k_per_s',
  'process_c50_backlog_1m_per_s',
  'latency_p50_ms',
  'latency_p99_ms',
  'latency_5k_p50_ms',
  'latency_5k_p99_ms',
  'fanout_completed_x4_per_s',
  'bytes_per_pending_job',
] as const;

/** One metric name. */
export type Metric = (typeof METRICS)[number];

/** The measured value of each metric for one system (a metric it did not run is absent). */
export type Results = Partial<Record<Metric, number>>;

/** The systems under test: EchoMQ, and its two anchors. */
export const SYSTEMS = ['echomq', 'bullmq', 'beequeue'] as const;

/** One system name. */
export type SystemName = (typeof SYSTEMS)[number];

/** The anchors EchoMQ is compared with (every ratio is EchoMQ / anchor). */
export const ANCHORS = ['bullmq', 'beequeue'] as const;

/** One anchor. */
export type AnchorName = (typeof ANCHORS)[number];

/** How each system is named in tables. */
export const SYSTEM_LABEL: Readonly<Record<SystemName, string>> = { echomq: 'EchoMQ', bullmq: 'BullMQ', beequeue: 'bee-queue' };

/** True for the metrics where a smaller number is better. */
export const lowerIsBetter = (m: string): boolean => m.startsWith('latency') || m.startsWith('bytes') || m.includes('_lag_');

/** Jobs per call of a batch enqueue. */
export const BATCH = 1000;

/** Enqueue calls in flight in the single-enqueue phase. */
export const IN_FLIGHT = 100;

/** A fresh random queue name (letters, digits and `-` are legal in both systems). */
export const randomQueue = (prefix: string): string => `${prefix}-${randomBytes(6).toString('hex')}`;

/** The payload of the throughput and memory phases: exactly 100 bytes of JSON. */
export interface BenchPayload {
  readonly i: number;
  readonly pad: string;
}

/** Builds payload `i`, padded so its JSON text is exactly 100 bytes. */
export function payload100(i: number): BenchPayload {
  const bare = JSON.stringify({ i, pad: '' }).length;
  return { i, pad: 'x'.repeat(Math.max(0, 100 - bare)) };
}

/** The payload of the latency phase: the enqueue instant (ms, sub-ms precision). */
export interface StampPayload {
  readonly t: number;
  /** False for warm-up jobs, whose latency is not recorded. */
  readonly m: boolean;
}

/**
 * Ms with sub-millisecond precision on the machine's monotonic clock (`process.hrtime`, Linux
 * CLOCK_MONOTONIC): one clock for every process on the machine, and unmoved when the wall clock
 * is stepped. (`performance.timeOrigin + now()` is not: timeOrigin is read from the wall clock at
 * process start, so a clock step between two processes' starts offsets one from the other; a
 * 10.65 s step did, in the run of 2026-12-03 17:44Z.)
 */
export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** The value at quantile `q` (0..1) of ascending `sorted` (nearest rank). */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `lanes` loops that together call `step` exactly `n` times. */
export async function inLanes(n: number, lanes: number, step: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < n) await step(next++);
  };
  await Promise.all(Array.from({ length: Math.min(lanes, n) }, lane));
}

/** Enqueues `n` payloads in batches of `BATCH`, one batch at a time. */
export async function inBatches<P>(producer: Producer, n: number, make: (i: number) => P): Promise<void> {
  for (let i = 0; i < n; i += BATCH) {
    const part = Array.from({ length: Math.min(BATCH, n - i) }, (_, j) => make(i + j));
    await producer.addBatch(part);
  }
}

/** How a producer spreads its jobs over priorities (or groups): job k gets `k % count`. */
export interface LaneOptions {
  /** Priorities 0..count-1 in turn (EchoMQ: higher first; BullMQ gets 1..count, lower first). */
  readonly priorities?: number;
  /** Groups g0..g(count-1) in turn (EchoMQ fair lanes; BullMQ OSS has no groups). */
  readonly groups?: number;
}

/** The group of the k-th job of a producer with `lanes` (undefined: none). */
export function groupOf(lanes: LaneOptions | undefined, k: number): string | undefined {
  return lanes?.groups ? `g${k % lanes.groups}` : undefined;
}

/** The priority of the k-th job of a producer with `lanes` (undefined: none). */
export function laneOf(lanes: LaneOptions | undefined, k: number): number | undefined {
  return lanes?.priorities ? k % lanes.priorities : undefined;
}

/** The producer side of a system, bound to one queue. */
export interface Producer {
  /** Adds one job. */
  add(payload: unknown): Promise<unknown>;
  /** Adds up to `BATCH` jobs in one call. */
  addBatch(payloads: readonly unknown[]): Promise<unknown>;
  /** Closes its connections. */
  close(): Promise<void>;
}

/** A connected consumer that has not started taking jobs yet. */
export interface ConsumerHandle {
  /** Starts taking jobs. */
  start(): Promise<void>;
  /** Stops taking jobs, waits for running handlers, closes its connections. */
  close(): Promise<void>;
}

/** Consumer settings a phase may change (a system without the setting ignores it). */
export interface ConsumerOptions {
  /** EchoMQ's `prefetch` (default: the concurrency); BullMQ and bee-queue have no prefetch. */
  readonly prefetch?: number;
  /** EchoMQ's claim rounds in flight (`ConsumerConfig.rounds`; default adaptive). */
  readonly rounds?: number | 'adaptive';
}

/** What a benchmark needs from a queue system. */
export interface Driver {
  readonly name: SystemName;
  /** Opens a producer for `queue` (with `lanes`, its jobs carry priorities or groups). */
  producer(queue: string, lanes?: LaneOptions): Promise<Producer>;
  /** Opens a consumer of `queue` whose handler calls `onJob` with the payload. */
  consumer(queue: string, concurrency: number, onJob: (payload: unknown) => void, opts?: ConsumerOptions): Promise<ConsumerHandle>;
  /** Jobs of `queue` not finished yet (waiting, delayed or active), read from Valkey. */
  unfinished(queue: string): Promise<number>;
  /** Closes the driver's own inspection client. */
  close(): Promise<void>;
}
