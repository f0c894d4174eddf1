import { InvalidOptionError } from '../core/errors.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, resolveCodec, type Json, type PayloadCodec } from '../core/codec.js';
import { intIn, keySet, optionPath, refuseNonObject, refuseRenamedKeys, refuseUnknownKeys } from '../core/known-keys.js';
import { DEDUP_KEYS, type DedupOptions } from './dedup-options.js';
import { RENAMED_LANE_OPTIONS, checkPolicyOptions, type LaneOptions } from './lane-policy.js';
import { MAX_DELAY_MS, MAX_RUN_AT_MS, backoffWire, type BackoffOptions, type RateLimit } from './base-options.js';

/** Per-queue behaviour; every field has a default. */
export interface QueueDefaults {
  /** Attempts before the morgue (1..1000). Default 3. */
  readonly attempts: number;
  /** Backoff between attempts. Default exponential from 1 s. */
  readonly backoff: BackoffOptions;
  /** Lease of a claimed job in ms; extended while its handler runs. Default 30 s. */
  readonly leaseMs: number;
  /** Done rows kept (newest first); 0 deletes a row as it completes. Default 1000. */
  readonly keepDone: number;
  /** Cap of the morgue. Default 10,000. */
  readonly deadCap: number;
  /** Cancelled rows kept. Default 1000. */
  readonly keepCancelled: number;
  /** Largest payload (JSON bytes). Default 512 KiB. */
  readonly maxPayloadBytes: number;
  /**
   * `strict` (default): a payload value JSON would silently change (a `Date`, `NaN`, a `Map`, a
   * class instance, …) is refused naming its path; `json`: JSON's conversions are accepted
   * (docs/queue.md, "Payloads"). Applies to enqueue, flows and schedules of the queue.
   */
  readonly codec: PayloadCodec;
  /**
   * Length of the queue's lifecycle log (a stream of every transition, trimmed to about this
   * many entries). 0 (default): transitions are only signalled, not logged.
   */
  readonly eventsLog: number;
  /**
   * How long a business key (`enqueue(q, p, { key })`) stays taken by the job it added, in ms
   * (1..2,592,000,000, thirty days): a repeat within it adds nothing. Default one hour.
   */
  readonly dedupWindowMs: number;
  /**
   * At most `max` jobs claimed per `intervalMs` by all consumers of the queue together (a fixed
   * window on the server clock). A limited consumer waits for the window's end, without polling.
   * Default: none.
   */
  readonly rateLimit?: RateLimit;
  /**
   * Fair lanes: per-lane concurrency caps, weights and rate limits, for every lane and for
   * named ones (docs/queue.md, "Fair lanes"). Default: none (every lane weight 1, no cap or limit).
   */
  readonly lanes?: LaneOptions;
}

/** The defaults that apply when neither the module nor the queue says otherwise. */
export const BUILTIN_DEFAULTS: QueueDefaults = {
  attempts: 3,
  backoff: { type: 'exponential', delayMs: 1000 },
  leaseMs: 30_000,
  keepDone: 1000,
  deadCap: 10_000,
  keepCancelled: 1000,
  maxPayloadBytes: DEFAULT_MAX_PAYLOAD_BYTES,
  codec: 'strict',
  eventsLog: 0,
  dedupWindowMs: 3_600_000,
};

/** Most jobs in one `enqueueMany` (one script call, one round trip). */
export const MAX_BATCH = 1000;

/** Highest job priority (`EnqueueOptions.priority` is 0..this; higher is claimed first). */
export const MAX_PRIORITY = 9;
/** Validates a job priority (an integer 0..`MAX_PRIORITY`), else `InvalidOptionError`. */
export const checkPriority = (v: unknown): number => intIn(v, 0, MAX_PRIORITY, 'priority');
const LANE_RE = /^[A-Za-z0-9_.-]{1,100}$/;
/** Validates a job's lane (1..100 of `A-Z a-z 0-9 _ . -`), else `InvalidOptionError`. */
export function checkLane(v: unknown): string {
  if (typeof v !== 'string' || !LANE_RE.test(v)) throw new InvalidOptionError('lane must be 1..100 characters of A-Z a-z 0-9 _ . -');
  return v;
}

/** The enqueue option renamed from "group" to "lane" (issue 36): refused with a hint, never ignored. */
export const RENAMED_ENQUEUE_OPTIONS: Readonly<Record<string, string>> = { group: 'lane' };

const DEFAULTS_KEYS = keySet<QueueDefaults>({
  attempts: true,
  backoff: true,
  leaseMs: true,
  keepDone: true,
  deadCap: true,
  keepCancelled: true,
  maxPayloadBytes: true,
  codec: true,
  eventsLog: true,
  dedupWindowMs: true,
  rateLimit: true,
  lanes: true,
});
/** BullMQ's names for what the queue settings do here. */
const DEFAULTS_HINTS: Readonly<Record<string, string>> = {
  removeOnComplete: 'keepDone: the done rows kept',
  removeOnFail: 'deadCap: the morgue cap',
  limiter: 'rateLimit: { max, intervalMs }',
  lockDuration: 'leaseMs',
  maxAttempts: 'attempts',
  concurrency: 'a processor option: @Processor(queue, { concurrency })',
  timeout: 'timeoutMs, per job (enqueue) or per processor (@Processor)',
};

/**
 * Merges partial defaults over a base and validates the result. Unknown keys of `over` are
 * refused naming their path (`path` under the call `what`, e.g. `queues.orders` of `EchoMqModule
 * options`), as are out-of-range values; BullMQ's names (`removeOnComplete`) with a hint.
 */
export function resolveDefaults(base: QueueDefaults, over?: Partial<QueueDefaults>, what = 'queue options', path?: string): QueueDefaults {
  refuseRenamedKeys(over, RENAMED_LANE_OPTIONS, 'queue options');
  refuseUnknownKeys(over, DEFAULTS_KEYS, what, { path, hints: DEFAULTS_HINTS });
  const d = { ...base, ...(over ?? {}) };
  const at = (k: string): string => optionPath(path, k);
  intIn(d.attempts, 1, 1000, at('attempts'));
  backoffWire(d.backoff, what, at('backoff'));
  intIn(d.leaseMs, 100, 86_400_000, at('leaseMs'));
  intIn(d.keepDone, 0, 1_000_000, at('keepDone'));
  intIn(d.deadCap, 1, 1_000_000, at('deadCap'));
  intIn(d.keepCancelled, 1, 1_000_000, at('keepCancelled'));
  intIn(d.maxPayloadBytes, 1, 64 * 1024 * 1024, at('maxPayloadBytes'));
  resolveCodec(d.codec, at('codec'));
  intIn(d.eventsLog, 0, 1_000_000, at('eventsLog'));
  intIn(d.dedupWindowMs, 1, 2_592_000_000, at('dedupWindowMs'));
  checkPolicyOptions(d, 'queue options', path);
  return d;
}

/**
 * The wire's delay and run-at of one enqueue (0 = none), validated: a delay of 0..`MAX_DELAY_MS`
 * ms (rounded up), or a run-at instant up to `MAX_RUN_AT_MS` (rounded up), not both.
 */
export function scheduleWire(o: Pick<EnqueueOptions, 'delay' | 'runAt'>): { delayMs: number; runAtMs: number } {
  let delayMs = 0;
  let runAtMs = 0;
  if (o.delay !== undefined) {
    if (typeof o.delay !== 'number' || !(o.delay >= 0 && o.delay <= MAX_DELAY_MS)) {
      throw new InvalidOptionError(`delay must be a number of ms in 0..${MAX_DELAY_MS} (ten years), got ${String(o.delay)}`);
    }
    delayMs = Math.ceil(o.delay);
  }
  if (o.runAt !== undefined) {
    const at = o.runAt instanceof Date ? o.runAt.getTime() : o.runAt;
    if (typeof at !== 'number' || !(at >= 0 && at <= MAX_RUN_AT_MS)) {
      throw new InvalidOptionError(`runAt must be a Date or epoch ms in 0..${MAX_RUN_AT_MS} (2200-01-01), got ${String(o.runAt)}`);
    }
    if (delayMs > 0) throw new InvalidOptionError('give delay or runAt, not both');
    runAtMs = Math.ceil(at);
  }
  return { delayMs, runAtMs };
}

/** One item of `enqueueMany`. */
export interface EnqueueItem<T = Json> {
  /** The job's payload (JSON). */
  readonly payload: T;
  /** This job's enqueue options (delay or run-at, attempts, backoff, id). */
  readonly opts?: EnqueueOptions;
}

/** Options of one enqueue. */
export interface EnqueueOptions {
  /**
   * Run no sooner than this many ms from now (0..`MAX_DELAY_MS`, ten years), counted on the
   * server's clock: a skewed producer clock does not move it.
   */
  readonly delay?: number;
  /**
   * Run no sooner than this instant (up to `MAX_RUN_AT_MS`, 2200-01-01), compared with the
   * server's clock: a producer whose clock is off by s schedules the job s off too (use `delay`
   * for "in N ms").
   */
  readonly runAt?: Date | number;
  /** Attempts for this job (overrides the consumer's default). */
  readonly attempts?: number;
  /** Backoff for this job (overrides the consumer's default). */
  readonly backoff?: BackoffOptions;
  /**
   * The job's id: a branded job id minted earlier (`QueueService.mintId()`), or a business id of
   * your own (`'order-42'`: 1..200 bytes, no control characters; a string of the branded form,
   * `job` and 11 base62 digits, is always taken as a branded id). Enqueueing either twice adds the
   * job once (the second call answers the first job's id) for as long as the job is kept; a
   * business id also finds the job (`getJob`, `cancel`, …). The job's wire id stays a minted one.
   */
  readonly id?: string;
  /**
   * A business key (1..256 bytes, no control characters; e.g. `order-42`, an event id): the job
   * is added once per key within the queue's `dedupWindowMs`; a repeat resolves to the id of the
   * job that took the key. In one `enqueueMany`, every item has a key or none does.
   */
  readonly key?: string;
  /**
   * Business-key de-duplication with a mode and a time to live (`key` is the same as
   * `{ key, mode: 'window' }` with the queue's `dedupWindowMs`; give one of the two). The key is
   * freed when its job is cancelled or removed. In one `enqueueMany`, every item has a key or
   * none does, and the keyed ones share one mode and ttlMs.
   */
  readonly dedup?: DedupOptions;
  /**
   * 0..9 (default 0): a pending job of a higher priority is claimed before any of a lower one;
   * FIFO within one priority. Note: higher is more urgent (BullMQ's is the reverse).
   */
  readonly priority?: number;
  /**
   * A fair lane (tenant, account, symbol; the key grammar's name rules, 1..100 characters):
   * claims rotate over the lanes with pending work, so a lane's backlog cannot starve
   * another's. Not with `priority`.
   */
  readonly lane?: string;
  /**
   * This job's own timeout (1..86,400,000 ms): its handler is aborted and the attempt fails with
   * `JobTimeoutError` after it, on every attempt. With a processor `timeoutMs` too, the shorter wins.
   */
  readonly timeoutMs?: number;
  /**
   * The W3C `traceparent` the job carries (its extras `tp`, at most 256 bytes): the consumer's
   * process span continues that trace (docs/telemetry.md). With tracing on, `EchoMqModule` sets
   * it from the enqueue span; give it yourself to continue a trace the producer has no SDK for.
   */
  readonly traceparent?: string;
  /**
   * The job's name (1..128 bytes, no control characters; its extras `n`): `job.name` and
   * `JobView.name` carry it, and a queue's `@Processor(queue, { name })` methods route on it
   * (docs/nest.md, "Job names"). BullMQ's `queue.add(name, data)`.
   */
  readonly name?: string;
}

const ENQUEUE_KEYS = keySet<EnqueueOptions>({
  delay: true,
  runAt: true,
  attempts: true,
  backoff: true,
  id: true,
  key: true,
  dedup: true,
  priority: true,
  lane: true,
  timeoutMs: true,
  traceparent: true,
  name: true,
});
/** BullMQ's job options, refused with what EchoMQ offers instead (never silently ignored). */
const ENQUEUE_HINTS: Readonly<Record<string, string>> = {
  jobId: 'de-duplicate by a business key with key, or pass a minted id (QueueService.mintId()) as id',
  removeOnComplete: "the queue's keepDone (done rows kept) in its defaults",
  removeOnFail: "the queue's deadCap (morgue cap) in its defaults",
  repeat: 'a recurring job is a schedule: QueueService.schedule or @Processor schedules',
  timeout: 'timeoutMs',
  lifo: 'not offered: FIFO within a priority',
  parent: 'a parent waiting for children is a flow: QueueService.flow',
  limiter: "the queue's rateLimit: { max, intervalMs } in its defaults, or QueueService.setPolicy",
  maxAttempts: 'attempts',
  deduplication: 'dedup: { key, mode, ttlMs }',
  debounce: 'dedup: { key, mode, ttlMs }',
  keepLogs: "not offered: the queue's eventsLog keeps its transitions",
};

/**
 * Refuses enqueue options that are not an object, or that have keys EchoMQ does not know
 * (`InvalidOptionError`, EMQ_BAD_OPTION): the renamed `group` with its new name, BullMQ's
 * `jobId`, `removeOnComplete`, … with a hint, any other key naming it (`path`: e.g. `[3].opts`
 * of one `enqueueMany` item). Values are checked where the job's wire form is built.
 */
export function checkEnqueueOptions(o: unknown, what = 'enqueue options', path?: string): void {
  refuseRenamedKeys(o, RENAMED_ENQUEUE_OPTIONS, what, path);
  refuseUnknownKeys(o, ENQUEUE_KEYS, what, { path, hints: ENQUEUE_HINTS });
  const b = (o as EnqueueOptions | undefined)?.backoff;
  if (b !== undefined) backoffWire(b, what, optionPath(path, 'backoff'));
  const d = (o as EnqueueOptions | undefined)?.dedup;
  if (d !== undefined) refuseUnknownKeys(d, DEDUP_KEYS, what, { path: optionPath(path, 'dedup') });
}

const ITEM_KEYS: ReadonlySet<string> = new Set(['payload', 'opts']);
const ITEM_HINTS: Readonly<Record<string, string>> = { data: "the job's data is its payload here", name: "a job's name is one of its options: { payload, opts: { name } }" };

/** Refuses an `enqueueMany` item (number `i`) that is not `{ payload, opts? }` or whose `opts` has unknown keys. */
export function checkEnqueueItem(it: unknown, i: number): void {
  const what = 'enqueueMany items';
  refuseNonObject(it, what, `[${i}]`);
  refuseUnknownKeys(it, ITEM_KEYS, what, { path: `[${i}]`, hints: ITEM_HINTS });
  checkEnqueueOptions((it as { opts?: unknown }).opts, what, `[${i}].opts`);
}
