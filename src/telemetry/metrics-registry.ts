/**
 * The in-process counters of EchoMQ's metrics: plain numbers bumped where the runtime already
 * learns a fact (an enqueue's reply, a completion round's reply, the failure listener, a reap's
 * reply), read when scraped. No Valkey call is made to count.
 */

/** Upper bounds (ms) of the processing-time histogram's buckets; a last `+Inf` bucket is implied. */
export const PROCESSING_BUCKETS_MS: readonly number[] = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000];

/** A fixed-bucket histogram (cumulative counts are computed when read). */
export class Histogram {
  /** Observations per bucket (not cumulative); the last slot is `+Inf`. */
  readonly buckets: number[];
  /** Sum of every observation. */
  sum = 0;
  /** Number of observations. */
  count = 0;

  constructor(
    /** The buckets' upper bounds, ascending. */
    readonly bounds: readonly number[] = PROCESSING_BUCKETS_MS,
  ) {
    this.buckets = new Array<number>(bounds.length + 1).fill(0);
  }

  /** Records one observation. */
  observe(v: number): void {
    let i = 0;
    while (i < this.bounds.length && v > this.bounds[i]) i++;
    this.buckets[i]++;
    this.sum += v;
    this.count++;
  }
}

/** The counters of one queue (monotonic since this process started). */
export class QueueCounters {
  /** Jobs added by this process's enqueues (a keyed or idempotent repeat is not counted). */
  enqueued = 0;
  /** Completions the complete script accepted. */
  completed = 0;
  /** Failed attempts (a handler threw or timed out): each is then retried or buried. */
  failed = 0;
  /** Failed attempts scheduled to run again. */
  retried = 0;
  /** Jobs moved to the morgue: after their last failed attempt, or reaped on their last attempt. */
  buried = 0;
  /** Jobs whose lease expired and that a reap by this process moved (requeued, buried or cancelled). */
  reaped = 0;
  /** Completions the fencing token refused (the lease was lost first). */
  refused = 0;
  /** Handler run time in ms, from start to settle. */
  readonly processing = new Histogram();
}

/** Listens to each processing-time observation (the OpenTelemetry histogram, when it is on). */
export type ProcessingObserver = (queue: string, ms: number) => void;

/** Every queue's counters in this process, created on first use. */
export class MetricsRegistry {
  private readonly byQueue = new Map<string, QueueCounters>();
  /** Set by the OpenTelemetry bridge to mirror processing times into its histogram. */
  observer?: ProcessingObserver;

  /** The counters of `queue` (created on first use). */
  queue(name: string): QueueCounters {
    let c = this.byQueue.get(name);
    if (!c) {
      c = new QueueCounters();
      this.byQueue.set(name, c);
    }
    return c;
  }

  /** Records one handler run of `ms` milliseconds. */
  processed(queue: QueueCounters, name: string, ms: number): void {
    queue.processing.observe(ms);
    this.observer?.(name, ms);
  }

  /** The queues counted so far, in first-seen order. */
  queues(): [string, QueueCounters][] {
    return [...this.byQueue];
  }
}
