import { InvalidCursorError } from '../core/errors.js';
import { isBrandedId } from '../core/ids.js';

/**
 * The statuses whose jobs `QueueAdmin.jobs` lists: each has an index (a list or a zset), but
 * `waiting` (flow parents), which is found by a bounded scan of the queue's jobs (docs/admin.md).
 */
export type ListableStatus = 'pending' | 'scheduled' | 'waiting' | 'active' | 'done' | 'dead' | 'cancelled';
/** Every listable status, in ladder order. */
export const LISTABLE: readonly ListableStatus[] = ['pending', 'scheduled', 'waiting', 'active', 'done', 'dead', 'cancelled'];

/** The id a `waiting` cursor holds when its page ended at a scan step's end (nothing to skip). */
export const NO_SKIP = '-';

/**
 * An opaque page cursor handed out by `QueueAdmin.jobs` (`JobPage.next`): pass it back as it is.
 * It names its queue and status and the last job of its page, so it is checked before any I/O
 * (`InvalidCursorError`, EMQ_BAD_CURSOR) and never read as an offset into another listing.
 */
export type JobCursor = string & { readonly __brand: 'JobCursor' };

/** What a cursor holds: the position (zset score, or list offset) and id of the last job shown. */
export interface CursorPoint {
  readonly pos: number;
  readonly id: string;
}

const VERSION = 'c1';

/** Encodes the point after which the next page starts. */
export function encodeCursor(queue: string, status: ListableStatus, p: CursorPoint): JobCursor {
  return Buffer.from(`${VERSION}|${queue}|${status}|${p.pos}|${p.id}`, 'utf8').toString('base64url') as JobCursor;
}

/** Decodes a cursor for `queue` and `status`; throws `InvalidCursorError` for anything else. */
export function decodeCursor(cursor: unknown, queue: string, status: ListableStatus): CursorPoint {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 300 || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw new InvalidCursorError('the cursor is not one EchoMQ handed out (pass JobPage.next as it is)');
  }
  const parts = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const [v, q, s, pos, id] = parts;
  if (parts.length !== 5 || v !== VERSION || !/^-?\d{1,16}$/.test(pos ?? '') || !(isBrandedId(id, 'job') || (s === 'waiting' && id === NO_SKIP))) {
    throw new InvalidCursorError('the cursor is malformed (pass JobPage.next as it is)');
  }
  if (q !== queue || s !== status) {
    throw new InvalidCursorError(`the cursor pages ${s} jobs of queue ${JSON.stringify(q)}, not ${status} jobs of ${JSON.stringify(queue)}`);
  }
  return { pos: Number(pos), id };
}
