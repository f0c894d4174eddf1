import { encodePayload, decodePayload, type Json } from '../protocol/codec.js';
import type { EchoMqConnection } from '../protocol/connection.js';
import { BatchTooLargeError, InvalidOptionError, fromReplyError } from '../protocol/errors.js';
import { assertBrandedId, parseId } from '../protocol/ids.js';
import { queueKeys } from '../protocol/keys.js';
import { wire, type WireJob } from '../protocol/wire.js';
import { map, type Observable } from 'rxjs';
import { SignalHub } from '../protocol/signal-hub.js';
import type { JobCounts, JobStatus, JobView, QueueEvent, QueueEventKind } from './job.js';
import {
  BUILTIN_DEFAULTS,
  MAX_BATCH,
  backoffWire,
  checkAttempts,
  resolveDefaults,
  type EnqueueOptions,
  type QueueDefaults,
} from './queue.options.js';

/** One item of `enqueueMany`. */
export interface EnqueueItem<T = Json> {
  readonly payload: T;
  readonly opts?: EnqueueOptions;
}

const STATUSES: readonly JobStatus[] = ['scheduled', 'pending', 'active', 'done', 'dead', 'cancelled'];

/**
 * The producer and operator surface of the Queue: enqueue, inspect, count, cancel. Every write
 * is one script call (one round trip), whatever the batch size.
 */
export class QueueService {
  private readonly perQueue = new Map<string, QueueDefaults>();
  private hub?: SignalHub;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly defaults: QueueDefaults = BUILTIN_DEFAULTS,
    private readonly overrides: Readonly<Record<string, Partial<QueueDefaults>>> = {},
  ) {}

  /** The effective defaults of `queue` (module defaults, then the queue's own). */
  settings(queue: string): QueueDefaults {
    let d = this.perQueue.get(queue);
    if (!d) {
      d = resolveDefaults(this.defaults, this.overrides[queue]);
      this.perQueue.set(queue, d);
    }
    return d;
  }

  /** Mints a job id now, to pass later as `opts.id` for an idempotent enqueue. */
  mintId(): string {
    return this.conn.ids.next('job');
  }

  /** Adds one job; resolves to its branded id. */
  async enqueue<T = Json>(queue: string, payload: T, opts?: EnqueueOptions): Promise<string> {
    const [id] = await this.enqueueMany(queue, [{ payload, opts }]);
    return id;
  }

  /** Adds up to 1000 jobs in one script call; resolves to their ids, in order. */
  async enqueueMany<T = Json>(queue: string, items: readonly EnqueueItem<T>[]): Promise<string[]> {
    const keys = queueKeys(queue);
    if (!Array.isArray(items) || items.length === 0) throw new InvalidOptionError('enqueueMany needs at least one item');
    if (items.length > MAX_BATCH) throw new BatchTooLargeError(items.length, MAX_BATCH);
    const { maxPayloadBytes, eventsLog } = this.settings(queue);
    const jobs = items.map((it) => this.toWire(it, maxPayloadBytes));
    await wire.enqueue(this.conn.scriptClient, keys, maxPayloadBytes, jobs, eventsLog);
    return jobs.map((j) => j.id);
  }

  private toWire<T>(item: EnqueueItem<T>, maxBytes: number): WireJob {
    const o = item.opts ?? {};
    let id: string;
    if (o.id !== undefined) {
      assertBrandedId(o.id, 'job');
      id = o.id;
    } else {
      id = this.conn.ids.next('job');
    }
    let delayMs = 0;
    let runAtMs = 0;
    if (o.delay !== undefined) {
      if (typeof o.delay !== 'number' || !Number.isFinite(o.delay) || o.delay < 0) {
        throw new InvalidOptionError(`delay must be a non-negative number of ms`);
      }
      delayMs = Math.ceil(o.delay);
    }
    if (o.runAt !== undefined) {
      runAtMs = o.runAt instanceof Date ? o.runAt.getTime() : o.runAt;
      if (typeof runAtMs !== 'number' || !Number.isFinite(runAtMs) || runAtMs < 0) {
        throw new InvalidOptionError(`runAt must be a Date or epoch ms`);
      }
      if (delayMs > 0) throw new InvalidOptionError('give delay or runAt, not both');
    }
    return {
      id,
      payload: encodePayload(item.payload, maxBytes),
      delayMs,
      runAtMs,
      maxAttempts: o.attempts === undefined ? undefined : checkAttempts(o.attempts),
      backoff: o.backoff === undefined ? undefined : backoffWire(o.backoff),
    };
  }

  /** Reads one job, or null when no row exists (never enqueued, or past its retention). */
  async getJob<T = Json, R = Json>(queue: string, id: string): Promise<JobView<T, R> | null> {
    const row = await wire.peek(this.conn.scriptClient, queueKeys(queue), id);
    if (!row.status) return null;
    return {
      id,
      queue,
      status: row.status as JobStatus,
      attempts: Number(row.attempts ?? 0),
      maxAttempts: row.max ? Number(row.max) : undefined,
      payload: decodePayload<T>(row.payload) as T,
      result: decodePayload<R>(row.result),
      error: row.error || undefined,
      createdAt: new Date(parseId(id).ms),
      finishedAt: row.finished ? new Date(Number(row.finished)) : undefined,
      cancelRequested: row.cancel === '1',
    };
  }

  /**
   * The queue's lifecycle events as they happen (sharded pub/sub; at most once: events sent while
   * nobody listens are gone — set `eventsLog` to also keep them in the queue's bounded stream).
   * One message per script call and kind, carrying every job id it moved.
   */
  events(queue: string): Observable<QueueEvent> {
    const channel = queueKeys(queue).events;
    this.hub ??= new SignalHub(this.conn, 64 * 1024 * 1024);
    return this.hub.observe<{ e: QueueEventKind; ids: string[]; at: number }>(channel).pipe(
      map((m) => ({ queue, kind: m.e, ids: m.ids, at: new Date(m.at) })),
    );
  }

  /** Jobs per status, read in one round trip. */
  async counts(queue: string): Promise<JobCounts> {
    const k = queueKeys(queue);
    const c = this.conn.client;
    const n = await Promise.all([
      c.zcard(k.scheduled),
      c.llen(k.pending),
      c.zcard(k.active),
      c.zcard(k.done),
      c.zcard(k.dead),
      c.zcard(k.cancelled),
    ]).catch((err: unknown) => {
      throw fromReplyError(err);
    });
    return Object.fromEntries(STATUSES.map((s, i) => [s, n[i]])) as JobCounts;
  }

  /**
   * Cancels a job that has not started (pending or scheduled → cancelled). An active job is
   * flagged for cooperative cancel instead. Resolves to what happened.
   */
  async cancel(queue: string, id: string): Promise<'cancelled' | 'flagged' | 'finished' | 'missing'> {
    const k = queueKeys(queue);
    const r = await wire.cancel(this.conn.scriptClient, k, id, this.settings(queue).keepCancelled);
    return r === 1 ? 'cancelled' : r === 2 ? 'flagged' : r === 0 ? 'finished' : 'missing';
  }
}
