import { decodePayload } from '../core/codec.js';
import type { ValkeyClient } from '../core/connection/index.js';
import { InvalidOptionError, InvalidPayloadError } from '../core/errors.js';
import { fromReplyError } from '../core/reply-errors.js';
import { topicKeys, type TopicKeys } from '../core/keys.js';
import { SegmentCache, archiveAsc, archiveDesc, newestArchived, type IdRange, type RawEntry } from './archive.js';
import type { ReplayOptions, ReplayedEvent } from './bus-types.js';
import { eventIdOf } from '../core/event-id.js';
import { MAX_SEQ, boundOf, compareStreamIds, streamMs } from '../core/stream-id.js';

/** Default entries per round trip of a replay. */
export const REPLAY_BATCH = 200;
/** How far ahead of the server clock `from` may be before it counts as "in the future" (client skew). */
export const FUTURE_SKEW_MS = 1000;

type XEntry = [id: string, fields: string[]];

const toRaw = (e: XEntry): RawEntry => {
  const f = e[1] ?? [];
  for (let i = 0; i < f.length; i += 2) if (f[i] === 'p') return [e[0], f[i + 1]];
  return [e[0], ''];
};

function toEvent<T>(topic: string, e: RawEntry): ReplayedEvent<T> {
  const id = eventIdOf(e[0]);
  let payload: T;
  try {
    payload = decodePayload<T>(e[1]) as T;
  } catch {
    throw new InvalidPayloadError(`event ${id} of topic ${topic} holds a payload that is not JSON`);
  }
  return { id, topic, payload, at: new Date(streamMs(e[0])) };
}

/** The server clock, ms. */
async function serverNow(client: ValkeyClient): Promise<number> {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** Validates the options; resolves the inclusive stream-id range and the batch size. */
async function resolve(client: ValkeyClient, o: ReplayOptions): Promise<{ range: IdRange; order: 'asc' | 'desc'; batch: number }> {
  if (o === null || typeof o !== 'object') throw new InvalidOptionError('replay options must be an object');
  const order = o.order ?? 'asc';
  if (order !== 'asc' && order !== 'desc') throw new InvalidOptionError(`replay order must be "asc" or "desc"`);
  const batch = o.batch ?? REPLAY_BATCH;
  if (!Number.isInteger(batch) || batch < 1 || batch > 1000) throw new InvalidOptionError('replay batch must be an integer in 1..1000');
  const lo = o.from === undefined ? '0-0' : boundOf(o.from, 'from');
  let hi = o.to === undefined ? undefined : boundOf(o.to, 'to');
  if (hi !== undefined && compareStreamIds(lo, hi) > 0) throw new InvalidOptionError('replay from is after replay to');
  let now: number;
  try {
    now = await serverNow(client);
  } catch (err) {
    throw fromReplyError(err);
  }
  if (streamMs(lo) > now + FUTURE_SKEW_MS) throw new InvalidOptionError('replay from is in the future');
  hi ??= `${now}-${MAX_SEQ}`;
  return { range: { lo, loOpen: false, hi, hiOpen: false }, order, batch };
}

/**
 * Replays a topic: the live log, and the archive where the log no longer reaches, as one
 * sequence without gaps or duplicates at the boundary. Errors (bad options included) surface
 * through the first `next()`; nothing is read before the options are valid.
 */
export async function* replay<T>(client: ValkeyClient, topic: string, o: ReplayOptions = {}): AsyncGenerator<ReplayedEvent<T>> {
  const k = topicKeys(topic);
  const { range, order, batch } = await resolve(client, o);
  const pages = order === 'asc' ? ascPages(client, k, range, batch) : descPages(client, k, range, batch);
  for await (const page of pages) for (const e of page) yield toEvent<T>(topic, e);
}

const bound = (id: string, open: boolean): string => (open ? `(${id}` : id);

/**
 * Mint order. Each round reads a log page, then (same pipeline, so after it) the newest archived
 * id: when the archive reaches the cursor, entries before the log page's first entry are read
 * from the archive first. Trims only move the log's head into the archive, so whatever is below
 * the first live entry and not yet seen is in the archive at the time of that second read.
 */
async function* ascPages(client: ValkeyClient, k: TopicKeys, r0: IdRange, batch: number): AsyncGenerator<RawEntry[]> {
  let r = r0;
  const cache = new SegmentCache();
  for (;;) {
    const replies = await client.pipeline().xrange(k.log, bound(r.lo, r.loOpen), bound(r.hi, r.hiOpen), 'COUNT', batch).zrevrange(k.archive, 0, 0).exec();
    const [liveErr, live] = replies?.[0] ?? [new Error('no reply'), null];
    const [archErr, newest] = replies?.[1] ?? [new Error('no reply'), null];
    if (liveErr || archErr) throw fromReplyError(liveErr ?? archErr);
    const entries = (live as XEntry[]).map(toRaw);
    const reach = newestArchived(newest as string[]);
    if (reach !== undefined && compareStreamIds(reach, r.lo) >= 0) {
      const upTo: IdRange = entries.length ? { ...r, hi: entries[0][0], hiOpen: true } : r;
      const old = await archiveAsc(client, k, upTo, batch, cache);
      if (old.length) {
        yield old;
        r = { ...r, lo: old[old.length - 1][0], loOpen: true };
        continue;
      }
    }
    if (entries.length === 0) return;
    yield entries;
    r = { ...r, lo: entries[entries.length - 1][0], loOpen: true };
  }
}

/**
 * Newest first. The log holds the newest entries, so it is read first; once a page comes back
 * short, everything older in range has left the log for the archive, which is read from there.
 */
async function* descPages(client: ValkeyClient, k: TopicKeys, r0: IdRange, batch: number): AsyncGenerator<RawEntry[]> {
  let r = r0;
  for (;;) {
    let live: XEntry[];
    try {
      live = (await client.xrevrange(k.log, bound(r.hi, r.hiOpen), bound(r.lo, r.loOpen), 'COUNT', batch)) as XEntry[];
    } catch (err) {
      throw fromReplyError(err);
    }
    if (live.length) {
      yield live.map(toRaw);
      r = { ...r, hi: live[live.length - 1][0], hiOpen: true };
    }
    if (live.length < batch) break;
  }
  const cache = new SegmentCache();
  for (;;) {
    const old = await archiveDesc(client, k, r, batch, cache);
    if (old.length === 0) return;
    yield old;
    r = { ...r, hi: old[old.length - 1][0], hiOpen: true };
  }
}
