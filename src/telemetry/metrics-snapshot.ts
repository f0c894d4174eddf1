import type { CacheStats } from '../cache/cache-types.js';
import type { JobCounts } from '../queue/job.js';

/** A histogram as read: cumulative counts per upper bound (`+Inf` last), sum and count. */
export interface HistogramSnapshot {
  /** Upper bounds in ms, ascending (the `+Inf` bucket is implied after them). */
  readonly boundsMs: readonly number[];
  /** Cumulative counts: `cumulative[i]` observations were at most `boundsMs[i]`; the last is the total. */
  readonly cumulative: readonly number[];
  /** Sum of the observations (ms). */
  readonly sumMs: number;
  /** Number of observations. */
  readonly count: number;
}

/** One queue's figures: this process's counters, and the queue's jobs per status read now. */
export interface QueueMetrics {
  /** The queue's name. */
  readonly queue: string;
  /** Jobs added by this process's enqueue calls (an idempotent repeat of an id counts too). */
  readonly enqueued: number;
  /** Completions the complete script accepted. */
  readonly completed: number;
  /** Failed attempts (the handler threw or timed out); each was then retried or buried. */
  readonly failed: number;
  /** Failed attempts scheduled to run again. */
  readonly retried: number;
  /** Jobs moved to the morgue: after their last failed attempt, or reaped on their last attempt. */
  readonly buried: number;
  /** Jobs whose lease expired and that a reap of this process moved (requeued, buried or cancelled). */
  readonly reaped: number;
  /** Completions the fencing token refused. */
  readonly refused: number;
  /** Handler run time. */
  readonly processing: HistogramSnapshot;
  /** Jobs per status (fleet-wide, from Valkey); undefined when the read failed. */
  readonly jobs?: JobCounts;
}

/** One consumer group of this app: its lag and pending entries, from the group loop's last look. */
export interface GroupMetrics {
  /** The topic the group reads. */
  readonly topic: string;
  /** The group's name. */
  readonly group: string;
  /** Entries not yet delivered to the group; null when the server cannot tell. */
  readonly lag: number | null;
  /** Entries delivered and not yet acknowledged. */
  readonly pending: number;
}

/** Every figure of `EchoMqMetrics` at one moment. */
export interface MetricsSnapshot {
  /** Every queue this process enqueued to or consumes, in first-seen order. */
  readonly queues: readonly QueueMetrics[];
  /** Every consumer group loop of this app. */
  readonly groups: readonly GroupMetrics[];
  /** The cache's counters (`CacheService.stats()`). */
  readonly cache: CacheStats;
}
