/**
 * The options of a `@Processor` consumer loop: their type, their checks (unknown keys and
 * out-of-range values refused with EMQ_BAD_OPTION) and their resolution over the queue's settings.
 */
import { checkJobName } from '../core/extras.js';
import { intIn, keySet, refuseRenamedKeys, refuseUnknownKeys } from '../core/known-keys.js';
import type { ProcessorSchedule } from './schedules/index.js';
import { RENAMED_LANE_OPTIONS, lanePolicyWire } from './lane-policy.js';
import { backoffWire, checkAttempts, type BackoffOptions, type RateLimit } from './base-options.js';
import type { QueueDefaults } from './queue-options.js';

/** Options of a `@Processor` consumer loop. */
export interface ProcessorOptions {
  /** Handlers running at once in this process. Default 1. */
  readonly concurrency?: number;
  /**
   * Jobs claimed ahead of free slots; each starts the moment a slot frees, without a round trip.
   * Default: the concurrency (so a loop holds at most twice that). 0 claims only what can run at once.
   */
  readonly prefetch?: number;
  /** Lease per claimed job in ms. Default: the queue's. */
  readonly leaseMs?: number;
  /** Default attempts for jobs that did not set theirs. */
  readonly attempts?: number;
  /** Default backoff for jobs that did not set theirs. */
  readonly backoff?: BackoffOptions;
  /**
   * Recurring jobs of this queue, upserted by name at bootstrap (the same declaration on every
   * instance is one schedule) and ticked by every instance, exactly one job per tick (docs/queue.md).
   */
  readonly schedules?: readonly ProcessorSchedule[];
  /**
   * Abort a handler still running after this many ms (1..86,400,000) and fail its attempt with
   * `JobTimeoutError` (retried per the backoff, like any failure). Default: no timeout.
   */
  readonly timeoutMs?: number;
  /**
   * Batch handler: the method receives up to `size` jobs at once (`Job[]`), waiting at most
   * `maxWaitMs` for a batch to fill, and returns one outcome per job (see `BatchHandler`).
   */
  readonly batch?: BatchOptions;
  /**
   * The job name this method takes (1..128 bytes, no control characters): the queue's methods
   * with distinct names share its one consumer loop, which routes each job by `job.name`; a
   * method without a name takes the rest (docs/nest.md, "Job names").
   */
  readonly name?: string;
}

/** A batch handler's batching (`@Processor(q, { batch })`). */
export interface BatchOptions {
  /** Most jobs per call (2..1000). */
  readonly size: number;
  /** Longest wait for a batch to fill once its first job arrived (0..60,000 ms). Default 50. */
  readonly maxWaitMs?: number;
}

const PROCESSOR_KEYS = keySet<ProcessorOptions>({ concurrency: true, prefetch: true, leaseMs: true, attempts: true, backoff: true, timeoutMs: true, batch: true, schedules: true, name: true });
const BATCH_KEYS = keySet<BatchOptions>({ size: true, maxWaitMs: true });
/** BullMQ's worker options, refused with what does it here. */
const PROCESSOR_HINTS: Readonly<Record<string, string>> = {
  lockDuration: 'leaseMs',
  limiter: "the queue's rateLimit (module defaults or setPolicy)",
  removeOnComplete: "the queue's keepDone",
  removeOnFail: "the queue's deadCap",
  connection: "the module's connection",
  maxAttempts: 'attempts',
  timeout: 'timeoutMs',
  lockRenewTime: 'not offered: held leases are extended every leaseMs / 3 (at most 5 s)',
};

/**
 * Validates the options of a processor: unknown keys (a typo such as `concurency`) and
 * out-of-range values are refused with `InvalidOptionError` (EMQ_BAD_OPTION); `what` names them
 * in the message (e.g. `@Processor("orders") options`).
 */
export function checkProcessorOptions(o: ProcessorOptions, what = 'processor options'): void {
  refuseRenamedKeys(o, RENAMED_LANE_OPTIONS, what);
  refuseUnknownKeys(o, PROCESSOR_KEYS, what, { hints: PROCESSOR_HINTS });
  if (o.concurrency !== undefined) intIn(o.concurrency, 1, 1000, 'concurrency');
  if (o.prefetch !== undefined) intIn(o.prefetch, 0, 1000, 'prefetch');
  if (o.leaseMs !== undefined) intIn(o.leaseMs, 100, 86_400_000, 'leaseMs');
  if (o.attempts !== undefined) checkAttempts(o.attempts);
  if (o.backoff !== undefined) backoffWire(o.backoff, what);
  if (o.timeoutMs !== undefined) intIn(o.timeoutMs, 1, 86_400_000, 'timeoutMs');
  if (o.name !== undefined) checkJobName(o.name, `${what}: name`);
  if (o.batch !== undefined) {
    refuseUnknownKeys(o.batch, BATCH_KEYS, what, { path: 'batch' });
    intIn(o.batch.size, 2, 1000, 'batch.size');
    if (o.batch.maxWaitMs !== undefined) intIn(o.batch.maxWaitMs, 0, 60_000, 'batch.maxWaitMs');
  }
}

/** What a consumer loop needs from its queue's settings and its processor's options. */
export interface ResolvedConsumerOptions {
  readonly concurrency: number;
  readonly prefetch?: number;
  readonly leaseMs: number;
  readonly attempts: number;
  /** Wire form of the backoff (`f:<ms>` / `e:<ms>`). */
  readonly backoff: string;
  readonly keepDone: number;
  readonly deadCap: number;
  readonly maxResultBytes: number;
  /** Handler timeout in ms (absent: none). */
  readonly timeoutMs?: number;
  /** The queue's rate limit this process declares: written as the queue's stored policy at start. */
  readonly rateLimit?: RateLimit;
  /** The lane policy this process declares, in its wire form (policy.lua): written at start. */
  readonly lanePolicy?: string;
}

/** Resolves a processor's options over its queue's settings (processor first, then queue). */
export function resolveConsumerOptions(d: QueueDefaults, o: ProcessorOptions = {}): ResolvedConsumerOptions {
  checkProcessorOptions(o);
  return {
    // A batch handler needs a whole batch running at once.
    concurrency: Math.max(o.concurrency ?? 1, o.batch?.size ?? 1),
    prefetch: o.prefetch,
    leaseMs: o.leaseMs ?? d.leaseMs,
    attempts: o.attempts ?? d.attempts,
    backoff: backoffWire(o.backoff ?? d.backoff),
    keepDone: d.keepDone,
    deadCap: d.deadCap,
    maxResultBytes: d.maxPayloadBytes,
    timeoutMs: o.timeoutMs,
    rateLimit: d.rateLimit,
    lanePolicy: d.lanes === undefined ? undefined : lanePolicyWire(d.lanes),
  };
}
