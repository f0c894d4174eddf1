import type { EchoMqConnection } from '../core/connection/index.js';
import { adminWire, type BulkReply, type PurgeableStatus } from '../core/wire/index.js';
import { InvalidOptionError, NotFoundError } from '../core/errors.js';
import { fromReplyError } from '../core/reply-errors.js';
import { assertJobIdOrRef } from '../queue/business-ids.js';
import { queueKeys } from '../core/keys.js';
import type { JobCounts, JobView } from '../queue/job.js';
import type { QueueService } from '../queue/queue-service.js';
import { readCounts } from '../queue/queue-counts.js';
import type { Json } from '../core/codec.js';
import { jobPage, type JobListOptions, type JobPage } from './job-pages.js';
import { readProcesses, type ProcessList } from './processes.js';
import { checkSearch, searchJobs, type JobSearchOptions, type JobSearchPage } from './job-search.js';
import { assertKnown, nameProblem, readEntries, registryPage, type EntryProblem } from './registry.js';
import { MAX_METRICS_QUEUES, metricsPlan, readMetrics, type StoredMetricsOptions, type StoredMetrics } from './queue-metrics.js';

/** A queue as an operator sees it. */
export interface QueueInfo {
  /** The queue's name. */
  readonly name: string;
  /** True while the queue is paused (no consumer claims from it). */
  readonly paused: boolean;
  /** The lanes paused fleet-wide (`QueueService.pauseLane`, meta `gpaused`; at most 1000), in the order they were paused. */
  readonly pausedLanes: string[];
  /** Jobs per status. */
  readonly counts: JobCounts;
  /** In a `list` page only: why the entry could not be read (its counts are then 0), as `EMQ_<CODE> message`. */
  readonly error?: string;
  /** In a `list` page only, with `error`: `invalid name` (a registry entry the key grammar refuses) or `unreadable`. */
  readonly problem?: EntryProblem;
}

/** A page of names from a registry; `next` (the last name) is absent on the last page. */
export interface NamePage<T> {
  /** The items of this page, in name order. */
  readonly items: T[];
  /** Pass as `after` for the next page. */
  readonly next?: string;
  /** How many items of this page could not be read (each carries `error` and `problem`). */
  readonly unreadable?: number;
}

/** Options of a bounded bulk call. */
export interface BulkOptions {
  /** The most jobs this call moves, 1..1000 (default 1000). */
  readonly limit?: number;
}

/** What `purge` deletes. */
export interface PurgeOptions extends BulkOptions {
  /** Which finished jobs: `done`, `dead` or `cancelled`. */
  readonly status: PurgeableStatus;
  /** Only jobs that finished at least this long ago (ms, server clock; 0 = all). */
  readonly olderThanMs: number;
}

const MAX_AGE_MS = 315_360_000_000;

/** A bounded call's limit, checked (1..1000, default 1000). */
export function bulkLimit(limit: number | undefined): number {
  const n = limit ?? 1000;
  if (!Number.isSafeInteger(n) || n < 1 || n > 1000) throw new InvalidOptionError(`limit must be an integer 1..1000, got ${String(limit)}`);
  return n;
}

/**
 * The operator surface of the Queue (docs/admin.md): the registry of queues, pause and resume,
 * drain, job listings with cursors, inspect, retry, promote, remove and purge. Every mutation is
 * one script call, bounded per call; every call on a queue nobody announced and that holds no
 * data fails with `NotFoundError` (EMQ_NOT_FOUND), writing nothing.
 */
export class QueueAdmin {
  constructor(
    private readonly conn: EchoMqConnection,
    private readonly queues: QueueService,
  ) {}

  /** One page of the known queues (in name order, after `after`), with counts and pause state. */
  async list(opts: { after?: string; limit?: number } = {}): Promise<NamePage<QueueInfo>> {
    const page = await registryPage(this.conn, 'queues', opts.after, bulkLimit(opts.limit ?? 100));
    const none: JobCounts = { scheduled: 0, pending: 0, active: 0, done: 0, dead: 0, cancelled: 0, waiting: 0 };
    const { items, unreadable } = await readEntries(this.conn, 'queues', page.names, (q) => this.read(q), (q) => ({ name: q, paused: false, pausedLanes: [], counts: none }));
    return { items, next: page.next, unreadable };
  }

  /** One queue's counts and pause state. */
  async info(queue: string): Promise<QueueInfo> {
    await this.assertKnown(queue);
    return this.read(queue);
  }

  /** Pauses the queue fleet-wide: every consumer claims nothing from its next claim on. True when it was running. */
  async pause(queue: string): Promise<boolean> {
    await this.assertKnown(queue);
    return adminWire.pause(this.conn.scriptClient, queueKeys(queue), 'pause');
  }

  /** Resumes a paused queue (one wake marker starts the idle consumers). True when it was paused. */
  async resume(queue: string): Promise<boolean> {
    await this.assertKnown(queue);
    return adminWire.pause(this.conn.scriptClient, queueKeys(queue), 'resume');
  }

  /** Pauses one lane of the queue fleet-wide (`QueueService.pauseLane`). True when it was running. */
  async pauseLane(queue: string, lane: string): Promise<boolean> {
    await this.assertKnown(queue);
    return this.queues.pauseLane(queue, lane);
  }

  /** Resumes a paused lane (`QueueService.resumeLane`). True when it was paused. */
  async resumeLane(queue: string, lane: string): Promise<boolean> {
    await this.assertKnown(queue);
    return this.queues.resumeLane(queue, lane);
  }

  /**
   * The processes view (docs/admin.md "Processes"): every process that describes itself with its
   * node-lease renewals — host, pid, runtime, version, its queue consumers and Bus groups — with
   * its last heartbeat and lease expiry (server clock); ended leases are `gone`, malformed entries
   * `unreadable`. Plain reads only (a monitoring user's grant).
   */
  processes(): Promise<ProcessList> {
    return readProcesses(this.conn);
  }

  /** Drops up to `limit` waiting jobs (removed with their rows); call again while `more`. */
  async drain(queue: string, opts: BulkOptions = {}): Promise<BulkReply> {
    const limit = bulkLimit(opts.limit);
    await this.assertKnown(queue);
    return adminWire.drain(this.conn.scriptClient, queueKeys(queue), limit);
  }

  /** One page of the queue's jobs of one status, newest first (`next` for the page after). */
  async jobs(queue: string, opts: JobListOptions): Promise<JobPage> {
    const k = queueKeys(queue);
    await this.assertKnown(queue);
    return jobPage(this.conn.client, k, opts);
  }

  /**
   * A filtered listing of one status (docs/admin.md, "Search and filters"): time range, error
   * text, payload field or text. Bounded: examines at most `scan` index entries per call and
   * says how many (`examined`); continue with `next`. Read-only; bad filters are refused
   * (`InvalidOptionError`, EMQ_BAD_OPTION) before any read.
   */
  async findJobs(queue: string, opts: JobSearchOptions): Promise<JobSearchPage> {
    const f = checkSearch(opts);
    const k = queueKeys(queue);
    await this.assertKnown(queue);
    return searchJobs(this.conn.client, k, f);
  }

  /** The whole job: row, attempts, error, result, progress, checkpoint, log, timings. */
  async job<T = Json, R = Json>(queue: string, id: string): Promise<JobView<T, R>> {
    assertJobIdOrRef(id); // a wire id or a business id
    await this.assertKnown(queue);
    const view = await this.queues.getJob<T, R>(queue, id);
    if (!view) throw new NotFoundError(`no job ${id} in queue ${queue}`);
    return view;
  }

  /** Retries one dead job with fresh attempts. False when the job exists but is not dead. */
  async retry(queue: string, id: string): Promise<boolean> {
    const wid = await this.wireId(queue, id);
    return this.found(queue, id, await adminWire.reviveOne(this.conn.scriptClient, queueKeys(queue), wid));
  }

  /** Retries the oldest `limit` dead jobs; call again while `more`. */
  async retryDead(queue: string, opts: BulkOptions = {}): Promise<BulkReply> {
    const limit = bulkLimit(opts.limit);
    await this.assertKnown(queue);
    return adminWire.reviveAll(this.conn.scriptClient, queueKeys(queue), limit);
  }

  /** Makes a scheduled job due now. False when the job exists but is not scheduled. */
  async promote(queue: string, id: string): Promise<boolean> {
    const wid = await this.wireId(queue, id);
    return this.found(queue, id, await adminWire.promote(this.conn.scriptClient, queueKeys(queue), wid));
  }

  /** Removes a job and everything it holds. False when it is running, a waiting parent or an unfinished flow child. */
  async remove(queue: string, id: string): Promise<boolean> {
    const wid = await this.wireId(queue, id);
    return this.found(queue, id, await adminWire.remove(this.conn.scriptClient, queueKeys(queue), wid));
  }

  /**
   * Cancels a job (`QueueService.cancel`, `cancel.lua`): a pending or scheduled job (or a `waiting`
   * flow parent) becomes `cancelled` at once; an active one is flagged for a cooperative cancel
   * (its handler sees `job.signal` abort and stops at its next check). `finished` when it had
   * already ended (nothing written); `NotFoundError` when there is no such job.
   */
  async cancel(queue: string, id: string): Promise<'cancelled' | 'flagged' | 'finished'> {
    assertJobIdOrRef(id);
    await this.assertKnown(queue);
    const r = await this.queues.cancel(queue, id);
    if (r === 'missing') throw new NotFoundError(`no job ${id} in queue ${queue}`);
    return r;
  }

  /** Deletes up to `limit` finished jobs of a status older than the bound; call again while `more`. */
  async purge(queue: string, opts: PurgeOptions): Promise<BulkReply> {
    if (!['done', 'dead', 'cancelled'].includes(opts?.status)) throw new InvalidOptionError('purge status must be done, dead or cancelled');
    const age = opts.olderThanMs;
    if (!Number.isSafeInteger(age) || age < 0 || age > MAX_AGE_MS) throw new InvalidOptionError(`olderThanMs must be an integer 0..${MAX_AGE_MS}`);
    const limit = bulkLimit(opts.limit);
    await this.assertKnown(queue);
    return adminWire.purge(this.conn.scriptClient, queueKeys(queue), opts.status, age, limit);
  }

  /**
   * The stored metrics of one queue (docs/admin.md, "Metrics"): per interval of `step`, jobs
   * completed, failed and buried, and run/wait-time percentiles and means. Read only (HGETALL, no
   * SCAN); a bad range is `InvalidOptionError` (EMQ_BAD_OPTION), an unknown queue `NotFoundError`.
   */
  async metrics(queue: string, opts: StoredMetricsOptions = {}): Promise<StoredMetrics> {
    const plan = metricsPlan(opts);
    await this.assertKnown(queue);
    return { queue, ...(await readMetrics(this.conn, [queue], plan)) };
  }

  /** `metrics` of every queue added up (the registry's first `MAX_METRICS_QUEUES`, in name order; entries that are no queue name skipped). */
  async metricsAll(opts: StoredMetricsOptions = {}): Promise<StoredMetrics> {
    const plan = metricsPlan(opts);
    const { names } = await registryPage(this.conn, 'queues', undefined, MAX_METRICS_QUEUES);
    const queues = names.filter((q) => nameProblem(q, 'queue') === undefined);
    return { ...(await readMetrics(this.conn, queues, plan)), queues: queues.length };
  }

  /** Throws `NotFoundError` unless the queue was announced or holds data (no SCAN: two reads). */
  assertKnown(queue: string): Promise<void> {
    return assertKnown(this.conn, 'queues', queue, [queueKeys(queue).meta], 'queue');
  }

  private async read(queue: string): Promise<QueueInfo> {
    const meta = queueKeys(queue).meta; // throws on a bad name before any read starts
    try {
      const [counts, [paused, lanes]] = await Promise.all([readCounts(this.conn.client, queue), this.conn.client.hmget(meta, 'paused', 'gpaused')]);
      const pausedLanes = (lanes ?? '').split(' ').filter((g) => g !== '').slice(0, 1000);
      return { name: queue, paused: paused === '1', pausedLanes, counts };
    } catch (err) {
      throw fromReplyError(err);
    }
  }

  /** The wire id of a job given by its wire id or business id, in a known queue; `NotFoundError` when none holds it. */
  private async wireId(queue: string, id: string): Promise<string> {
    assertJobIdOrRef(id);
    await this.assertKnown(queue);
    const wid = await this.queues.jobId(queue, id);
    if (wid === undefined) throw new NotFoundError(`no job ${id} in queue ${queue}`);
    return wid;
  }

  private found(queue: string, id: string, r: -1 | 0 | 1): boolean {
    if (r === -1) throw new NotFoundError(`no job ${id} in queue ${queue}`);
    return r === 1;
  }
}
