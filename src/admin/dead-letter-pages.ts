import type { ValkeyClient } from '../core/connection/index.js';
import { decodePayload, type Json } from '../core/codec.js';
import { InvalidCursorError, InvalidOptionError } from '../core/errors.js';
import { fromReplyError } from '../core/reply-errors.js';
import type { TopicKeys } from '../core/keys.js';

/**
 * Cursor pages of a topic's dead letters, newest first (`BusAdmin.deadLetterPage`), optionally
 * of one group only: bounded per call (at most `scan` dead-letter entries examined), each entry
 * with its raw payload text so a page can show it whole even when it is not JSON.
 *
 * @module
 */

/** One dead letter as an operator page shows it. */
export interface DeadLetterEntry {
  /** The dead-letter entry's own stream id (`<ms>-<seq>`): what replay and purge take. */
  readonly deadId: string;
  /** The branded id of the original event (empty when the entry does not say). */
  readonly id: string;
  /** The consumer group that gave up on it. */
  readonly group: string;
  /** The member that dead-lettered it. */
  readonly consumer: string;
  /** How many times the group delivered it. */
  readonly deliveries: number;
  /** The last handler error. */
  readonly error: string;
  /** When it was dead-lettered (the entry's `at`, else its stream id's instant). */
  readonly at: Date;
  /** The payload's text as stored (absent when the entry has none). */
  readonly payloadText?: string;
  /** The decoded payload; absent when missing or not JSON. */
  readonly payload?: Json;
}

/** One page of dead letters, newest first. */
export interface DeadLetterPage {
  /** The dead letters of this page (of `group` only, when given). */
  readonly entries: DeadLetterEntry[];
  /** Dead-letter entries examined by this call (all groups). */
  readonly examined: number;
  /** Pass as `cursor` for the page after (the last dead id examined); absent on the last page. */
  readonly next?: string;
}

/** Options of `BusAdmin.deadLetterPage`. */
export interface DeadLetterPageOptions {
  /** Only the dead letters of this consumer group. */
  readonly group?: string;
  /** Dead letters per page, 1..1000 (default 50). */
  readonly limit?: number;
  /** The `next` of the previous page. */
  readonly cursor?: string;
}

const STREAM_ID = /^\d{1,20}-\d{1,20}$/;
const GROUP = /^[A-Za-z0-9_.-]{1,100}$/;
/** Most entries one call examines when a group filter skips others. */
const MAX_SCAN = 5000;

/** One dead-letter stream entry as a `DeadLetterEntry`; planted fields never throw. */
export function deadLetterEntry(deadId: string, flat: readonly string[]): DeadLetterEntry {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) f.set(String(flat[i]), String(flat[i + 1]));
  let payload: Json | undefined;
  try {
    payload = decodePayload<Json>(f.get('p'));
  } catch {
    payload = undefined;
  }
  const at = Number(f.get('at'));
  const deliveries = Number(f.get('deliveries') ?? 0);
  return {
    deadId,
    id: f.get('id') ?? '',
    group: f.get('group') ?? '',
    consumer: f.get('consumer') ?? '',
    deliveries: Number.isSafeInteger(deliveries) ? deliveries : 0,
    error: f.get('error') ?? '',
    at: new Date(Number.isFinite(at) && at > 0 ? at : Number(deadId.split('-')[0])),
    ...(f.has('p') ? { payloadText: f.get('p') } : {}),
    ...(payload === undefined ? {} : { payload }),
  };
}

/** Checks the options before any read: `InvalidOptionError` / `InvalidCursorError`. */
export function checkDeadLetterPage(o: DeadLetterPageOptions): { group?: string; limit: number; cursor?: string } {
  const limit = o.limit ?? 50;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000) throw new InvalidOptionError('limit must be an integer 1..1000');
  if (o.group !== undefined && (typeof o.group !== 'string' || !GROUP.test(o.group))) throw new InvalidOptionError('group must be a group name (1..100 of A-Z a-z 0-9 _ . -)');
  if (o.cursor !== undefined && (typeof o.cursor !== 'string' || !STREAM_ID.test(o.cursor))) throw new InvalidCursorError('the cursor is not one deadLetterPage handed out (a dead id `<ms>-<seq>`)');
  return { group: o.group, limit, cursor: o.cursor };
}

/** One page of a topic's dead letters newest first, after `cursor` (exclusive). */
export async function deadLetterPage(c: ValkeyClient, k: TopicKeys, o: { group?: string; limit: number; cursor?: string }): Promise<DeadLetterPage> {
  const entries: DeadLetterEntry[] = [];
  let examined = 0;
  let last = o.cursor;
  try {
    for (;;) {
      const batch = Math.min(o.group === undefined ? o.limit + 1 : 500, MAX_SCAN - examined);
      const rows = (await c.xrevrange(k.dead, last === undefined ? '+' : `(${last}`, '-', 'COUNT', batch)) as [string, string[]][];
      for (const [deadId, flat] of rows) {
        if (entries.length === o.limit) return { entries, examined, next: last };
        examined++;
        last = deadId;
        const e = deadLetterEntry(deadId, flat);
        if (o.group === undefined || e.group === o.group) entries.push(e);
      }
      if (rows.length < batch) return { entries, examined }; // the oldest was read
      if (examined >= MAX_SCAN || entries.length === o.limit) return { entries, examined, next: last };
    }
  } catch (err) {
    throw fromReplyError(err);
  }
}

/** One dead letter by its dead id, or undefined. */
export async function deadLetterById(c: ValkeyClient, k: TopicKeys, deadId: string): Promise<DeadLetterEntry | undefined> {
  if (typeof deadId !== 'string' || !STREAM_ID.test(deadId)) throw new InvalidOptionError('a dead-letter id is a stream id `<ms>-<seq>`');
  try {
    const rows = (await c.xrange(k.dead, deadId, deadId)) as [string, string[]][];
    return rows[0] ? deadLetterEntry(rows[0][0], rows[0][1]) : undefined;
  } catch (err) {
    throw fromReplyError(err);
  }
}
