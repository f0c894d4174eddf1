import type { ValkeyClient } from '../core/connection/index.js';
import { InvalidOptionError } from '../core/errors.js';
import { describeError, fromReplyError } from '../core/reply-errors.js';
import { isBrandedId, parseId } from '../core/ids.js';
import type { QueueKeys } from '../core/keys.js';
import { decodeCursor, encodeCursor, NO_SKIP, type CursorPoint, type JobCursor, type ListableStatus } from './job-cursor.js';

/** One job of a listing: enough for a table row; `QueueAdmin.job` reads the whole job. */
export interface JobSummary {
  /** The branded job id. */
  readonly id: string;
  /** The status it was listed under. */
  readonly status: ListableStatus;
  /** When the id was minted (the enqueue time unless it was minted earlier). */
  readonly createdAt: Date;
  /** The index's instant: run-at (scheduled), lease deadline (active), finished / buried / cancelled at. Absent for pending. */
  readonly at?: Date;
  /** Attempts started so far. */
  readonly attempts: number;
  /** The last error, when an attempt failed. */
  readonly error?: string;
  /**
   * Why this entry could not be read, as `EMQ_<CODE> message`: an index member that is not a job
   * id, or a job row of another type (written by hand). Its other fields are then defaults
   * (`createdAt` the epoch when the id does not say it, `attempts` 0). Never fails the page.
   */
  readonly unreadable?: string;
}

/** One page of jobs, newest first; `next` is absent on the last page. */
export interface JobPage {
  /** The jobs of this page. */
  readonly jobs: JobSummary[];
  /** The cursor of the next page (opaque), absent when this page is the last. */
  readonly next?: JobCursor;
}

/** How to list jobs (`QueueAdmin.jobs`). */
export interface JobListOptions {
  /** Which index to page through. */
  readonly status: ListableStatus;
  /** Jobs per page, 1..1000 (default 50). */
  readonly limit?: number;
  /** The `next` of the previous page. */
  readonly cursor?: JobCursor;
}

/** Most ties (jobs sharing one instant) skipped when a cursor's own job has left its index. */
const MAX_TIE_SCAN = 10_000;
/** How far from the head a pending list is searched for a cursor's job that moved. */
const MAX_LIST_SCAN = 10_000;

/** One index entry: its member and position (zset score, list offset or scan step). */
export type Entry = { id: string; pos: number };

const pairs = (flat: string[]): Entry[] => {
  const out: Entry[] = [];
  for (let i = 0; i < flat.length; i += 2) out.push({ id: flat[i], pos: Number(flat[i + 1]) });
  return out;
};

/** Score bounds of a zset listing: `lo` and `hi` in BYSCORE syntax, `floor` the lowest score as a number. Open by default. */
export interface ScoreWindow {
  /** The lowest score (inclusive), BYSCORE syntax (`-inf`, `1733.5`). */
  readonly lo: string;
  /** Absent: the top (`+inf`, or `(+inf` for `active`, whose anchor is not a job). */
  readonly hi?: string;
  /** `lo` as a number (`-Infinity` when open): entries below it end the listing. */
  readonly floor: number;
}

const OPEN: ScoreWindow = { lo: '-inf', floor: -Infinity };

/** A zset index newest first (score descending, then id descending: a total order) within a score window: up to `limit + 1` entries after `at`. */
export async function zsetEntries(c: ValkeyClient, key: string, status: ListableStatus, limit: number, at?: CursorPoint, w: ScoreWindow = OPEN): Promise<Entry[]> {
  const top = w.hi ?? (status === 'active' ? '(+inf' : '+inf'); // not the anchor of `active` (docs/protocol.md §2)
  if (!at) return pairs(await c.zrange(key, top, w.lo, 'BYSCORE', 'REV', 'LIMIT', 0, limit + 1, 'WITHSCORES'));
  const score = await c.zscore(key, at.id);
  if (score !== null && Number(score) === at.pos) {
    const rank = await c.zrevrank(key, at.id);
    if (rank !== null) return pairs(await c.zrange(key, rank + 1, rank + limit + 1, 'REV', 'WITHSCORES')).filter((e) => e.pos >= w.floor);
  }
  // The cursor's job left the index: continue by score, skipping the ties at or before it.
  const out: Entry[] = [];
  for (let off = 0; out.length < limit + 1 && off < MAX_TIE_SCAN; off += limit + 1) {
    const batch = pairs(await c.zrange(key, at.pos, w.lo, 'BYSCORE', 'REV', 'LIMIT', off, limit + 1, 'WITHSCORES'));
    for (const e of batch) if (e.pos < at.pos || e.id < at.id) out.push(e);
    if (batch.length < limit + 1) break;
  }
  return out.slice(0, limit + 1);
}

/** The pending list newest first (head first); a cursor's offset is re-found if pushes moved it. */
export async function listEntries(c: ValkeyClient, key: string, limit: number, at?: CursorPoint): Promise<Entry[]> {
  let start = 0;
  if (at) {
    if ((await c.lindex(key, at.pos)) === at.id) start = at.pos + 1;
    else {
      const found = await c.lpos(key, at.id, 'MAXLEN', at.pos + MAX_LIST_SCAN);
      // Gone: claimed, and every older job with it (claims pop the oldest first).
      if (found === null) return [];
      start = found + 1;
    }
  }
  const ids = await c.lrange(key, start, start + limit);
  return ids.map((id, i) => ({ id, pos: start + i }));
}

/** Most entries of a queue's `data` read by one `waiting` page (the page may then hold fewer jobs than asked, even none). */
const MAX_WAITING_SCAN = 10_000;

/**
 * The `waiting` flow parents (they have no index): a bounded HSCAN of the queue's `data`, each id's
 * row status read in one pipeline per step. A cursor holds the scan step (`pos`) and the last id
 * shown of it (skipped to on the next page), or `NO_SKIP` when the page ended at a step's end.
 * In scan order, not newest first; a job may be shown twice or missed while the hash is resized.
 */
export async function waitingEntries(c: ValkeyClient, k: QueueKeys, limit: number, at?: CursorPoint): Promise<{ entries: Entry[]; next?: CursorPoint }> {
  if (!at && Number((await c.hget(k.meta, 'waits')) ?? 0) <= 0) return { entries: [] }; // none waits: no scan
  let cur = at ? String(at.pos) : '0';
  let skip = at && at.id !== NO_SKIP ? at.id : undefined;
  const out: Entry[] = [];
  let scanned = 0;
  do {
    const [after, flat] = await c.hscan(k.data, cur, 'COUNT', 200);
    const ids = flat.filter((_, i) => i % 2 === 0);
    scanned += ids.length;
    const from = skip === undefined ? 0 : ids.indexOf(skip) + 1;
    skip = undefined;
    const cand = ids.slice(from).filter((id) => isBrandedId(id, 'job'));
    const p = c.pipeline();
    for (const id of cand) p.hget(k.jobPrefix + id, 'status');
    const replies = cand.length ? ((await p.exec()) ?? []) : [];
    const found = cand.filter((_, i) => replies[i]?.[1] === 'waiting');
    for (const id of found) {
      out.push({ id, pos: Number(cur) });
      // Full: the next page resumes inside this step, after this id (unless nothing is left at all).
      if (out.length === limit && (id !== found[found.length - 1] || after !== '0')) return { entries: out, next: { pos: Number(cur), id } };
      if (out.length === limit) return { entries: out };
    }
    cur = after;
  } while (cur !== '0' && scanned < MAX_WAITING_SCAN && Number.isSafeInteger(Number(cur)));
  return { entries: out, next: cur === '0' || !Number.isSafeInteger(Number(cur)) ? undefined : { pos: Number(cur), id: NO_SKIP } };
}

/** A date, or undefined for an instant that is not one (a score of ±inf planted by hand). */
const instant = (ms: number): Date | undefined => (Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms) : undefined);

/** One entry's summary; an id that is not a job id or a row that cannot be read is marked `unreadable`, never thrown. */
export function summary(e: Entry, status: ListableStatus, reply: [Error | null, unknown] | undefined): JobSummary {
  let createdAt = new Date(0);
  let unreadable: string | undefined;
  try {
    createdAt = new Date(parseId(e.id).ms);
  } catch (err) {
    unreadable = describeError(err);
  }
  const [err, row] = reply ?? [new Error('no reply'), null];
  if (err) unreadable ??= describeError(fromReplyError(err));
  const [attempts, error] = err ? [null, null] : (row as (string | null)[]);
  const n = Number(attempts ?? 0);
  return {
    id: e.id,
    status,
    createdAt,
    at: status === 'pending' || status === 'waiting' ? undefined : instant(e.pos),
    attempts: Number.isSafeInteger(n) && n >= 0 ? n : 0,
    error: error ?? undefined,
    ...(unreadable === undefined ? {} : { unreadable }),
  };
}

/** One page of `status` jobs of a queue, newest first, from an optional cursor. */
export async function jobPage(c: ValkeyClient, k: QueueKeys, o: JobListOptions): Promise<JobPage> {
  const limit = o.limit ?? 50;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000) throw new InvalidOptionError('limit must be an integer 1..1000');
  const at = o.cursor === undefined ? undefined : decodeCursor(o.cursor, k.queue, o.status);
  try {
    if (o.status === 'waiting') return await waitingPage(c, k, limit, at);
    let entries = o.status === 'pending' ? await listEntries(c, k.pending, limit, at) : await zsetEntries(c, k[o.status], o.status, limit, at);
    const more = entries.length > limit;
    if (more) entries = entries.slice(0, limit);
    const p = c.pipeline();
    p.hmget(k.data, ...(entries.length ? entries.map((e) => e.id) : ['-']));
    for (const e of entries) p.hmget(k.jobPrefix + e.id, 'attempts', 'error');
    const replies = (await p.exec()) ?? [];
    const [dataErr, dataReply] = replies[0] ?? [new Error('no reply'), null];
    if (dataErr && o.status === 'pending') throw dataErr; // ghosts cannot be told from jobs: the page cannot be read
    const data = (dataErr ? [] : dataReply) as (string | null)[];
    const jobs: JobSummary[] = [];
    entries.forEach((e, i) => {
      if (o.status === 'pending' && !data[i]) return; // a ghost (cancelled or removed while pending)
      jobs.push(summary(e, o.status, replies[i + 1]));
    });
    // The next page starts after the last entry a cursor can name (a planted member that is not a
    // job id, or a score that is not an integer, cannot be one: the page after repeats it).
    const last = [...entries].reverse().find((e) => Number.isSafeInteger(e.pos) && isBrandedId(e.id, 'job'));
    return { jobs, next: more && last ? encodeCursor(k.queue, o.status, last) : undefined };
  } catch (err) {
    throw fromReplyError(err);
  }
}

/** One page of `waiting` flow parents (`waitingEntries`), with their summaries. */
async function waitingPage(c: ValkeyClient, k: QueueKeys, limit: number, at?: CursorPoint): Promise<JobPage> {
  const { entries, next } = await waitingEntries(c, k, limit, at);
  const p = c.pipeline();
  for (const e of entries) p.hmget(k.jobPrefix + e.id, 'attempts', 'error');
  const replies = entries.length ? ((await p.exec()) ?? []) : [];
  return { jobs: entries.map((e, i) => summary(e, 'waiting', replies[i])), next: next ? encodeCursor(k.queue, 'waiting', next) : undefined };
}
