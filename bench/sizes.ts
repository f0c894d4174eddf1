/**
 * How big each phase of `npm run bench` is: the steady run (the default: 30,000 untimed then
 * 20,000 timed jobs per processing row, 3 alternating repetitions) and the `--quick` smoke run.
 */

/** The modes of a run. */
export type BenchMode = 'steady' | 'quick';

/** How big each phase is. */
export interface BenchSizes {
  readonly mode: BenchMode;
  readonly quick: boolean;
  /** Times the whole suite runs (memory and the ceiling only once); ratios are medians of the per-repetition pairs. */
  readonly reps: number;
  /**
   * Untimed jobs (or calls) before every timed phase, as a multiple of the timed count (>= 1):
   * the clock starts on a running, warmed consumer (or producer) of the same queue.
   */
  readonly warmup: number;
  /** Jobs added one at a time (100 in flight). */
  readonly enqueueSingle: number;
  /** Jobs added in batches of 1,000. */
  readonly enqueueBatch: number;
  /** Timed jobs of each processing row (the warm-up comes on top). */
  readonly process: number;
  /** Pending jobs behind the timed ones in the backlog rows (c50). */
  readonly backlogs: readonly number[];
  /** Jobs per second of the latency load, and for how many timed seconds. */
  readonly latencyRate: number;
  readonly latencySeconds: number;
  /** Jobs per second of the 5,000/s latency row (same consumer and concurrency), and for how many timed seconds. */
  readonly latency5kRate: number;
  readonly latency5kSeconds: number;
  /** Concurrency of the consumer in the latency phases. */
  readonly latencyConcurrency: number;
  /** Pending jobs whose memory is measured. */
  readonly memoryJobs: number;
  /** Jobs per run of the Valkey ceiling (valkey-benchmark), per batch size. */
  readonly ceilingJobs: number;
  /** Untimed jobs every system processes at the start of the run (JIT, script cache). */
  readonly startWarmup: number;
  /** Timed jobs of the lifecycle fan-out row (BullMQ's events stream keeps ~10,000 entries: its listeners must keep up). */
  readonly fanout: number;
  /** Sizes of the Bus phases (EchoMQ only). */
  readonly bus: BusSizes;
}

/** How big each Bus phase is. */
export interface BusSizes {
  /** Events published one call each (100 in flight). */
  readonly publishSingle: number;
  /** Events published 1,000 per `publishMany`. */
  readonly publishBatch: number;
  /**
   * Events pre-published and handled by one group consumer, per concurrency; `c1ra` for the c1
   * member with read-ahead (`prefetch: 50`, ~100k/s: about 4× the c1 count for a like window).
   */
  readonly group: Readonly<Record<'c1' | 'c1ra' | 'c50', number>>;
  /** Events per second of the latency load, for how many seconds, and the consumer's concurrency. */
  readonly latencyRate: number;
  readonly latencySeconds: number;
  readonly latencyConcurrency: number;
}

/** The backlog that `--backlog-1m` adds (it takes minutes to enqueue for BullMQ). */
export const BACKLOG_1M = 1_000_000;

/** The sizes of a run in `mode`; `backlog1m` adds the 1M-pending backlog row. */
export function sizes(mode: BenchMode, backlog1m = false): BenchSizes {
  const extra = backlog1m ? [BACKLOG_1M] : [];
  if (mode === 'quick') {
    return {
      mode,
      quick: true,
      reps: 1,
      warmup: 1,
      enqueueSingle: 2000,
      enqueueBatch: 10_000,
      process: 1000,
      backlogs: [10_000, ...extra],
      latencyRate: 500,
      latencySeconds: 1,
      latency5kRate: 5000,
      latency5kSeconds: 1,
      latencyConcurrency: 10,
      memoryJobs: 5000,
      ceilingJobs: 10_000,
      startWarmup: 1000,
      fanout: 1000,
      bus: { publishSingle: 3000, publishBatch: 10_000, group: { c1: 1000, c1ra: 4000, c50: 3000 }, latencyRate: 500, latencySeconds: 1, latencyConcurrency: 10 },
    };
  }
  return {
    mode,
    quick: false,
    reps: 3,
    warmup: 1.5,
    enqueueSingle: 20_000,
    enqueueBatch: 100_000,
    process: 20_000,
    backlogs: [10_000, 100_000, ...extra],
    latencyRate: 500,
    latencySeconds: 10, // 5,000 samples: one stall of the machine (a few ms, ~10 samples) cannot decide the p99 alone
    latency5kRate: 5000,
    latency5kSeconds: 3, // 15,000 samples
    latencyConcurrency: 10,
    memoryJobs: 10_000,
    ceilingJobs: 200_000,
    startWarmup: 2000,
    fanout: 20_000, // ~1.3 s timed at 15,000/s: a 0.3 s window (5,000) was decided by single stalls
    bus: { publishSingle: 20_000, publishBatch: 50_000, group: { c1: 5000, c1ra: 100_000, c50: 120_000 }, latencyRate: 500, latencySeconds: 3, latencyConcurrency: 10 }, // group rows run at 150k–260k events/s: ≥ 0.4 s timed, not ~0.1 s
  };
}
