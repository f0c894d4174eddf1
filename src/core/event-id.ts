import { InvalidIdError } from './errors.js';
import { ID_EPOCH_MS, assertBrandedId, decodeBody, encodeParts } from './ids.js';

/**
 * Bus event ids. An event's wire identity is its stream entry id `<ms>-<seq>`, minted by the
 * server's clock when the entry is appended. Its branded form is `evt` + base62 of
 * `(ms − epoch) · 2^22 + seq`: the same 14-byte layout as every id, byte order = log order, and
 * exactly convertible both ways (`seq` < 2^22).
 */
export const EVENT_NS = 'evt';
const LOW = 2 ** 22;
const MAX_REL = 2 ** 42 - 1;

/**
 * The branded id of a stream entry id. Ids as the server writes them (`<digits>-<digits>`, at
 * most 15 and 7 digits) are read digit by digit, making no substring: this runs once per event a
 * group member handles. Anything else takes the general path (same result, same refusals).
 */
export function eventIdOf(streamId: string): string {
  const n = streamId.length;
  let ms = 0;
  let i = 0;
  for (; i < n && i < 16; i++) {
    const c = streamId.charCodeAt(i);
    if (c === 45) break;
    if (c < 48 || c > 57) return eventIdSlow(streamId);
    ms = ms * 10 + (c - 48);
  }
  if (i === 0 || i >= n || i === 16 || n - i > 8) return eventIdSlow(streamId);
  let seq = 0;
  for (let j = i + 1; j < n; j++) {
    const c = streamId.charCodeAt(j);
    if (c < 48 || c > 57) return eventIdSlow(streamId);
    seq = seq * 10 + (c - 48);
  }
  const rel = ms - ID_EPOCH_MS;
  if (seq >= LOW || rel < 0 || rel > MAX_REL) return eventIdSlow(streamId);
  return EVENT_NS + encodeParts(rel, seq);
}

/** `eventIdOf` for any text: the parts through `Number`, `InvalidIdError` when there is no branded form. */
function eventIdSlow(streamId: string): string {
  const dash = streamId.indexOf('-');
  const ms = Number(streamId.slice(0, dash));
  const seq = Number(streamId.slice(dash + 1));
  const rel = ms - ID_EPOCH_MS;
  if (dash < 1 || !Number.isInteger(ms) || !Number.isInteger(seq) || seq < 0 || seq >= LOW || rel < 0 || rel > MAX_REL) {
    throw new InvalidIdError(`stream id ${JSON.stringify(streamId)} has no branded form`);
  }
  // What composeId(EVENT_NS, { ms, node: seq / 4096, seq: seq % 4096 }) spells, without its
  // per-call checks (done above): this runs once per event a group member handles.
  return EVENT_NS + encodeParts(rel, seq);
}

/** The milliseconds part of a stream entry id `<ms>-<seq>` (read without a substring). */
export function streamMsOf(streamId: string): number {
  let ms = 0;
  for (let i = 0; i < streamId.length && i < 16; i++) {
    const c = streamId.charCodeAt(i);
    if (c === 45) return ms;
    if (c < 48 || c > 57) break;
    ms = ms * 10 + (c - 48);
  }
  return Number(streamId.slice(0, streamId.indexOf('-')));
}

/** The stream entry id of a branded event id. */
export function streamIdOf(eventId: string): string {
  assertBrandedId(eventId, EVENT_NS);
  const v = decodeBody(eventId.slice(3));
  const low = Number(v & BigInt(LOW - 1));
  const ms = Number(v >> 22n) + ID_EPOCH_MS;
  return `${ms}-${low}`;
}

/** The mint instant (ms) of a branded event id. */
export function eventInstant(eventId: string): number {
  return Number(streamIdOf(eventId).split('-')[0]);
}
