import { InvalidIdError, InvalidOptionError } from './errors.js';
import { streamIdOf } from './event-id.js';

/** Largest stream id sequence number (2^64 − 1). */
export const MAX_SEQ = '18446744073709551615';

const STREAM_ID_RE = /^(\d{1,20})-(\d{1,20})$/;

/** Splits a stream id `<ms>-<seq>` into its numeric parts (seq as BigInt: it may exceed 2^53). */
export function splitStreamId(id: string): { ms: number; seq: bigint } {
  const m = STREAM_ID_RE.exec(id);
  if (!m) throw new InvalidIdError(`${JSON.stringify(id.slice(0, 40))} is not a stream id`);
  return { ms: Number(m[1]), seq: BigInt(m[2]) };
}

/** Compares two stream ids: negative, 0 or positive, like a sort comparator. */
export function compareStreamIds(a: string, b: string): number {
  const x = splitStreamId(a);
  const y = splitStreamId(b);
  if (x.ms !== y.ms) return x.ms - y.ms;
  return x.seq === y.seq ? 0 : x.seq < y.seq ? -1 : 1;
}

/** The ms part of a stream id. */
export const streamMs = (id: string): number => splitStreamId(id).ms;

/**
 * The stream id bound of a replay end: a branded event id converts exactly; an instant `t`
 * covers every entry minted in its millisecond (`t-0` as a lower bound, `t-<max>` as an upper).
 */
export function boundOf(value: string | Date, end: 'from' | 'to'): string {
  if (value instanceof Date) {
    const t = value.getTime();
    if (!Number.isSafeInteger(t) || t < 0) throw new InvalidOptionError(`replay ${end} is not a valid instant`);
    return end === 'from' ? `${t}-0` : `${t}-${MAX_SEQ}`;
  }
  if (typeof value !== 'string') throw new InvalidOptionError(`replay ${end} must be an event id or a Date`);
  return streamIdOf(value);
}
