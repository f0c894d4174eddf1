import type { ValkeyClient } from '../core/connection/index.js';
import { InvalidCursorError, InvalidOptionError } from '../core/errors.js';
import { fromReplyError } from '../core/reply-errors.js';
import { isBrandedId } from '../core/ids.js';
import type { QueueKeys } from '../core/keys.js';
import { keySet, refuseUnknownKeys } from '../core/known-keys.js';
import { decodeCursor, encodeCursor, LISTABLE, type CursorPoint, type JobCursor, type ListableStatus } from './job-cursor.js';
import { listEntries, summary, waitingEntries, zsetEntries, type Entry, type JobSummary, type ScoreWindow } from './job-pages.js';

/**
 * A bounded, filtered listing of one status's jobs (`QueueAdmin.findJobs`, docs/admin.md "Search
 * and filters"): each call examines at most `scan` index entries newest first (row reads
 * pipelined, 200 per round trip), returns the matches among them, how many it examined and a
 * cursor to continue. Never a keyspace scan: only the status's own index is read.
 *
 * @module
 */

/** A payload field equal to a value: `path` is dot-separated (`user.id`, `items.0.sku`). */
export interface PayloadFieldFilter {
  /** The field's path in the payload: 1..8 segments of `[A-Za-z0-9_$-]`, separated by dots. */
  readonly path: string;
  /** The value: a string field equals it as it is; a number, boolean or null as its JSON text (`42`, `true`, `null`). */
  readonly equals: string;
}

/** What `QueueAdmin.findJobs` looks for. Every filter given must match (AND). */
export interface JobSearchOptions {
  /** Which status's index to examine. */
  readonly status: ListableStatus;
  /**
   * Earliest instant (inclusive): on the index's own time for done, dead and cancelled (finished
   * at) and scheduled (run at), on the id's mint time for pending, active and waiting.
   */
  readonly from?: Date | number;
  /** Latest instant (inclusive), on the same time as `from`. */
  readonly to?: Date | number;
  /** Text the job's last error contains (case-insensitive, plain text, 1..200 characters). */
  readonly error?: string;
  /** A payload field equal to a value. */
  readonly field?: PayloadFieldFilter;
  /** Text the payload's JSON contains (case-insensitive, plain text, 1..200 characters). */
  readonly payload?: string;
  /** Most matches returned, 1..1000 (default 50). */
  readonly limit?: number;
  /** Most index entries examined by this call, 1..5000 (default 2000). */
  readonly scan?: number;
  /** The `next` of the previous call (with the same filters). */
  readonly cursor?: JobSearchCursor;
}

/** An opaque cursor of a filtered listing (`JobSearchPage.next`): pass it back as it is, with the same filters. */
export type JobSearchCursor = string & { readonly __brand: 'JobSearchCursor' };

/** One call's matches and how much of the index it examined. */
export interface JobSearchPage {
  /** The matching jobs, newest first; entries that cannot be read are listed too (`unreadable`), as they cannot be ruled out. */
  readonly jobs: JobSummary[];
  /** Index entries examined by this call. */
  readonly examined: number;
  /** Index entries examined by this call and the calls before it (carried by the cursor). */
  readonly examinedSoFar: number;
  /** Entries in the index (within the time range where the index is by time), read when the call ran. */
  readonly total: number;
  /** Continue from here (the entries after the last one examined); absent when the index is exhausted. */
  readonly next?: JobSearchCursor;
}

const KNOWN = keySet<JobSearchOptions>({ status: true, from: true, to: true, error: true, field: true, payload: true, limit: true, scan: true, cursor: true });
const FIELD_KNOWN = keySet<PayloadFieldFilter>({ path: true, equals: true });
/** The statuses whose index score is a time the range applies to (the others use the id's mint time). */
const TIMED: ReadonlySet<ListableStatus> = new Set(['done', 'dead', 'cancelled', 'scheduled']);
const MAX_TEXT = 200;
const PATH = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+){0,7}$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** `/…/flags`, `.*`, `.+`, `\d`-style classes: a pattern where plain text is matched. */
const REGEX_LIKE = /^\/.+\/[dgimsuy]*$|\.\*|\.\+|\\[dDwWsSb]/;
/** Row reads per round trip. */
const CHUNK = 200;

/** Search options after `checkSearch`: bounds as ms (±Infinity when open), texts lower-cased, the path split. */
export interface CheckedSearch {
  readonly status: ListableStatus;
  readonly from: number;
  readonly to: number;
  readonly error?: string;
  readonly field?: { readonly path: string[]; readonly equals: string };
  readonly payload?: string;
  readonly limit: number;
  readonly scan: number;
  readonly cursor?: unknown;
}

/** A plain-text filter, lower-cased: refused when empty, over 200 characters, with control characters or pattern-like. */
function plainText(v: unknown, what: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length < 1 || v.length > MAX_TEXT) throw new InvalidOptionError(`${what} must be text of 1..${MAX_TEXT} characters`);
  if (CONTROL.test(v)) throw new InvalidOptionError(`${what} must not hold control characters`);
  if (REGEX_LIKE.test(v)) throw new InvalidOptionError(`${what} is matched as plain text, not a regular expression: drop the /…/, .* or \\d (got ${JSON.stringify(v.slice(0, 40))})`);
  return v.toLowerCase();
}

/** An instant as ms: a valid `Date` or a finite ms number within the `Date` range. */
function instant(v: unknown, what: string): number | undefined {
  if (v === undefined) return undefined;
  const ms = v instanceof Date ? v.getTime() : v;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15) throw new InvalidOptionError(`${what} must be a valid Date or ms since the epoch`);
  return ms;
}

const intIn = (v: unknown, dflt: number, hi: number, what: string): number => {
  const n = v ?? dflt;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1 || n > hi) throw new InvalidOptionError(`${what} must be an integer 1..${hi}`);
  return n;
};

/** Checks every filter before any I/O: `InvalidOptionError` (EMQ_BAD_OPTION) for anything malformed. */
export function checkSearch(o: JobSearchOptions): CheckedSearch {
  refuseUnknownKeys(o, KNOWN, 'findJobs options');
  if (o === undefined || !LISTABLE.includes(o.status)) throw new InvalidOptionError(`status must be one of ${LISTABLE.join(', ')}`);
  const from = instant(o.from, 'from') ?? -Infinity;
  const to = instant(o.to, 'to') ?? Infinity;
  if (from > to) throw new InvalidOptionError('from must not be after to');
  let field: CheckedSearch['field'];
  if (o.field !== undefined) {
    refuseUnknownKeys(o.field, FIELD_KNOWN, 'findJobs options', { path: 'field' });
    const { path, equals } = o.field;
    if (typeof path !== 'string' || path.length === 0 || path.length > MAX_TEXT || !PATH.test(path)) {
      throw new InvalidOptionError('field.path must be 1..8 dot-separated names of letters, digits, _, $ or - (e.g. user.id)');
    }
    if (typeof equals !== 'string' || equals.length > MAX_TEXT || CONTROL.test(equals)) throw new InvalidOptionError(`field.equals must be text of 0..${MAX_TEXT} characters without control characters`);
    field = { path: path.split('.'), equals };
  }
  return {
    status: o.status,
    from,
    to,
    error: plainText(o.error, 'error'),
    field,
    payload: plainText(o.payload, 'payload'),
    limit: intIn(o.limit, 50, 1000, 'limit'),
    scan: intIn(o.scan, 2000, 5000, 'scan'),
    cursor: o.cursor,
  };
}

/** The cursor: a listing cursor (job-cursor.ts) of the last entry examined, then `.` and the count examined so far. */
function encodeSearchCursor(queue: string, status: ListableStatus, p: CursorPoint, soFar: number): JobSearchCursor {
  return `${encodeCursor(queue, status, p)}.${soFar}` as JobSearchCursor;
}

function decodeSearchCursor(cursor: unknown, queue: string, status: ListableStatus): { at: CursorPoint; soFar: number } {
  const [point, soFar, ...rest] = typeof cursor === 'string' ? cursor.split('.') : [];
  if (rest.length || !/^\d{1,12}$/.test(soFar ?? '')) throw new InvalidCursorError('the cursor is not one findJobs handed out (pass JobSearchPage.next as it is)');
  return { at: decodeCursor(point as JobCursor, queue, status), soFar: Number(soFar) };
}

/** The value at a payload path, or undefined. */
function at(value: unknown, path: readonly string[]): unknown {
  let v = value;
  for (const s of path) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, s)) return undefined;
    v = (v as Record<string, unknown>)[s];
  }
  return v;
}

/** Whether a payload's JSON text has `path` equal to `equals` (a string as itself, a scalar as its JSON text). */
function fieldMatches(text: string | null, f: NonNullable<CheckedSearch['field']>): boolean {
  if (!text) return false;
  let v: unknown;
  try {
    v = at(JSON.parse(text), f.path);
  } catch {
    return false; // not JSON: no field of it can match
  }
  if (typeof v === 'string') return v === f.equals;
  return v !== undefined && (v === null || typeof v !== 'object') && JSON.stringify(v) === f.equals;
}

/** The score window of a status's index: the time range where the index is by time, else open. */
function windowOf(f: CheckedSearch): ScoreWindow {
  const timed = TIMED.has(f.status);
  const lo = timed && f.from > -Infinity ? String(f.from) : '-inf';
  return { lo, floor: lo === '-inf' ? -Infinity : f.from, ...(timed && f.to < Infinity ? { hi: String(f.to) } : {}) };
}

/** How many entries the index holds (within the time range where it is by time). */
async function indexSize(c: ValkeyClient, k: QueueKeys, f: CheckedSearch): Promise<number> {
  if (f.status === 'pending') return c.llen(k.pending);
  if (f.status === 'waiting') return Number((await c.hget(k.meta, 'waits')) ?? 0) || 0;
  const w = windowOf(f);
  return c.zcount(k[f.status], w.lo, w.hi ?? (f.status === 'active' ? '(+inf' : '+inf'));
}

/** Entries to examine (up to `scan`); `more` when the index goes on after them (`waiting`: the scan's own point). */
async function candidates(c: ValkeyClient, k: QueueKeys, f: CheckedSearch, from?: CursorPoint): Promise<{ entries: Entry[]; more: boolean; waitingNext?: CursorPoint }> {
  if (f.status === 'waiting') {
    const { entries, next } = await waitingEntries(c, k, f.scan, from);
    return { entries, more: next !== undefined, waitingNext: next };
  }
  const all = f.status === 'pending' ? await listEntries(c, k.pending, f.scan, from) : await zsetEntries(c, k[f.status], f.status, f.scan, from, windowOf(f));
  return { entries: all.slice(0, f.scan), more: all.length > f.scan };
}

/** The last entry of `entries` a cursor can name (a planted member or score cannot be one). */
const nameable = (entries: readonly Entry[]): Entry | undefined => [...entries].reverse().find((e) => Number.isSafeInteger(e.pos) && isBrandedId(e.id, 'job'));

/** The lowest job id: a cursor past a planted zset member (an id no job has, at its score's whole ms). */
const LOWEST = 'job' + '0'.repeat(11);

/**
 * A point past a batch of only planted members (none a cursor can name): on a zset, the lowest id
 * at the last one's score (rounded down), so the next call goes on below it; on the pending list none.
 */
const pastPlanted = (status: ListableStatus, e: Entry | undefined): CursorPoint | undefined =>
  e && status !== 'pending' && Number.isFinite(e.pos) && Math.abs(e.pos) < 1e15 ? { pos: Math.floor(e.pos), id: LOWEST } : undefined;

/** One call of a filtered listing (`QueueAdmin.findJobs`); the options were checked by `checkSearch`. */
export async function searchJobs(c: ValkeyClient, k: QueueKeys, f: CheckedSearch): Promise<JobSearchPage> {
  const start = f.cursor === undefined ? undefined : decodeSearchCursor(f.cursor, k.queue, f.status);
  try {
    const [{ entries, more, waitingNext }, total] = await Promise.all([candidates(c, k, f, start?.at), indexSize(c, k, f)]);
    const mintTimed = !TIMED.has(f.status) && (f.from > -Infinity || f.to < Infinity);
    const needData = f.status === 'pending' || f.field !== undefined || f.payload !== undefined;
    const jobs: JobSummary[] = [];
    let examined = 0;
    for (let i = 0; i < entries.length && jobs.length < f.limit; i += CHUNK) {
      const chunk = entries.slice(i, i + CHUNK);
      const p = c.pipeline();
      if (needData) p.hmget(k.data, ...chunk.map((e) => e.id));
      for (const e of chunk) p.hmget(k.jobPrefix + e.id, 'attempts', 'error');
      const replies = (await p.exec()) ?? [];
      const rows = needData ? replies.slice(1) : replies;
      const [dataErr, dataReply] = needData ? (replies[0] ?? [new Error('no reply'), null]) : [null, []];
      if (dataErr) throw dataErr; // the payloads cannot be read: the listing cannot be filtered on them
      const data = dataReply as (string | null)[];
      for (let j = 0; j < chunk.length && jobs.length < f.limit; j++) {
        examined++;
        const e = chunk[j];
        if (f.status === 'pending' && !data[j]) continue; // a ghost (cancelled or removed while pending)
        const s = summary(e, f.status, rows[j]);
        if (s.unreadable) {
          jobs.push(s); // cannot be ruled out: shown as unreadable
          continue;
        }
        if (mintTimed && (s.createdAt.getTime() < f.from || s.createdAt.getTime() > f.to)) continue;
        if (f.error !== undefined && !(s.error ?? '').toLowerCase().includes(f.error)) continue;
        if (f.payload !== undefined && !(data[j] ?? '').toLowerCase().includes(f.payload)) continue;
        if (f.field !== undefined && !fieldMatches(data[j], f.field)) continue;
        jobs.push(s);
      }
    }
    const soFar = (start?.soFar ?? 0) + examined;
    const stoppedEarly = examined < entries.length;
    let next: JobSearchCursor | undefined;
    if (stoppedEarly || more) {
      // Stopped at the limit: after the last entry examined; else after the last one fetched (a `waiting` scan: its own point).
      const last = f.status === 'waiting' ? (stoppedEarly ? entries[examined - 1] : waitingNext) : nameable(entries.slice(0, examined)) ?? pastPlanted(f.status, entries[examined - 1]);
      if (last) next = encodeSearchCursor(k.queue, f.status, last, soFar);
    }
    return { jobs, examined, examinedSoFar: soFar, total, next };
  } catch (err) {
    throw fromReplyError(err);
  }
}
