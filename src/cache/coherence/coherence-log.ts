import type { ValkeyClient } from '../../core/connection/index.js';
import { compareStreamIds } from '../../core/stream-id.js';
import { EchoMqError } from '../../core/errors.js';
import { fromReplyError } from '../../core/reply-errors.js';

/** One entry of a namespace's invalidation log: `v <ver> k <key> [k <key> …]`. */
export interface InvalidationEntry {
  /** Stream id `<ms>-<seq>`. */
  readonly id: string;
  /** The invalidation's version (`ver…` branded id). */
  readonly ver: string;
  /** The invalidated keys, in announcement order. */
  readonly keys: readonly string[];
}

/**
 * What one atomic read of the log saw: the entries after a position, and the stream's bounds at
 * that same instant (read in one MULTI, so no trim can fall between the two).
 */
export interface LogSnapshot {
  readonly entries: readonly InvalidationEntry[];
  /** False when the log key does not exist. */
  readonly exists: boolean;
  /** `last-generated-id`: the id of the newest entry ever added (`0-0` when none). */
  readonly lastId: string;
  /** `max-deleted-entry-id`: the newest id XDEL removed (`0-0` when none; trims do not set it). */
  readonly maxDeletedId: string;
  /** `entries-added`: how many entries were ever added (0 when the log does not exist). */
  readonly added: number;
  /** How many entries the log holds now: the last `length` of the `added` entries (trims cut the oldest). */
  readonly length: number;
}

/** A position in the log: the last applied id, and how many entries had been added up to it. */
export interface LogPosition {
  readonly id: string;
  readonly added: number;
}

/** The empty position: before every entry. */
export const LOG_START = '0-0';

const isNoSuchKey = (err: Error): boolean => /no such key/i.test(err.message);

/** Reads a flat `[field, value, …]` reply into a map of its string values. */
function fieldsOf(reply: unknown): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), reply[i + 1]);
  return out;
}

/** Parses the XRANGE reply; entries without a version or keys (another writer's) are skipped. */
function entriesOf(reply: unknown): InvalidationEntry[] {
  const out: InvalidationEntry[] = [];
  if (!Array.isArray(reply)) return out;
  for (const raw of reply as unknown[]) {
    if (!Array.isArray(raw) || typeof raw[0] !== 'string' || !Array.isArray(raw[1])) continue;
    const flat = raw[1] as unknown[];
    let ver = '';
    const keys: string[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const value = String(flat[i + 1]);
      if (flat[i] === 'v') ver = value;
      else if (flat[i] === 'k') keys.push(value);
    }
    // An entry with no keys still moves the position (it is returned with an empty key list).
    out.push({ id: raw[0], ver, keys: ver === '' ? [] : keys });
  }
  return out;
}

/** Maps an XINFO STREAM reply (or its "no such key" error) to the stream's bounds. */
type Bounds = Omit<LogSnapshot, 'entries'>;
const NO_LOG: Bounds = { exists: false, lastId: LOG_START, maxDeletedId: LOG_START, added: 0, length: 0 };

function boundsOf(err: Error | null, reply: unknown): Bounds {
  if (err) {
    if (isNoSuchKey(err)) return NO_LOG;
    throw fromReplyError(err);
  }
  const info = fieldsOf(reply);
  const lastId = info.get('last-generated-id');
  const maxDeleted = info.get('max-deleted-entry-id');
  const added = Number(info.get('entries-added'));
  const length = Number(info.get('length'));
  if (typeof lastId !== 'string' || !Number.isSafeInteger(added) || !Number.isSafeInteger(length)) {
    throw new EchoMqError('EMQ_INTERNAL', 'XINFO STREAM reply lacks last-generated-id, entries-added or length (Valkey 7+ needed)');
  }
  return { exists: true, lastId, maxDeletedId: typeof maxDeleted === 'string' ? maxDeleted : LOG_START, added, length };
}

/** The log's current end: its `last-generated-id` and `entries-added` (`0-0`/0 when it does not exist yet). */
export async function logEnd(client: ValkeyClient, log: string): Promise<LogPosition> {
  let b: Bounds;
  try {
    b = boundsOf(null, await client.xinfo('STREAM', log));
  } catch (err) {
    if (!(err instanceof Error && isNoSuchKey(err))) throw fromReplyError(err);
    b = NO_LOG;
  }
  return { id: b.lastId, added: b.added };
}

/**
 * True when entries after position `p` left the log before they were applied: a trim cut past
 * it (more entries were ever added than the log holds beyond `p`), XDEL removed an id past it,
 * or the log was deleted or replaced (it ends before `p`, or counts fewer additions).
 */
export function hasGap(p: LogPosition, snap: LogSnapshot): boolean {
  if (!snap.exists) return p.added > 0 || p.id !== LOG_START;
  if (snap.added < p.added || compareStreamIds(snap.lastId, p.id) < 0) return true;
  if (compareStreamIds(snap.maxDeletedId, p.id) > 0) return true;
  return snap.added - snap.length > p.added;
}

/**
 * Reads up to `count` entries strictly after `after`, and the stream's bounds, atomically
 * (MULTI/EXEC: both keys are the one log, so this is single-slot on a cluster too).
 */
export async function readLog(client: ValkeyClient, log: string, after: string, count: number): Promise<LogSnapshot> {
  let replies: [Error | null, unknown][] | null;
  try {
    replies = await client.multi().xrange(log, `(${after}`, '+', 'COUNT', count).xinfo('STREAM', log).exec();
  } catch (err) {
    throw fromReplyError(err);
  }
  if (!replies || replies.length !== 2) throw new EchoMqError('EMQ_INTERNAL', 'the log read transaction was aborted');
  const [[rangeErr, range], [infoErr, info]] = replies;
  if (rangeErr) throw fromReplyError(rangeErr);
  return { entries: entriesOf(range), ...boundsOf(infoErr, info) };
}
