import { encodePayload, type PayloadCodec } from '../core/codec.js';
import { InvalidOptionError } from '../core/errors.js';
import { encodeExtras } from '../core/extras.js';
import { assertBrandedId } from '../core/ids.js';
import { hasJobIdForm } from '../core/keys.js';
import type { WireJob } from '../core/wire/index.js';
import { backoffWire, checkAttempts } from './base-options.js';
import { assertJobIdOrRef } from './business-ids.js';
import { checkLane, checkPriority, scheduleWire, type EnqueueItem } from './queue-options.js';

/**
 * One enqueue item in its wire form (enqueue.lua's per-job arguments): its id (the caller's
 * branded id, or one minted by `mint`, with a caller's business id kept as `ref`), the encoded
 * payload (`root` names it in errors) and the checked options. Throws the typed option errors
 * before anything is sent.
 */
export function toWireJob<T>(item: EnqueueItem<T>, mint: () => string, maxBytes: number, dedupKey?: string, codec: PayloadCodec = 'strict', root = 'payload'): WireJob {
  const o = item.opts ?? {};
  let id: string;
  let ref: string | undefined;
  if (o.id !== undefined && (typeof o.id !== 'string' || hasJobIdForm(o.id))) {
    assertBrandedId(o.id, 'job');
    id = o.id;
  } else {
    if (o.id !== undefined) assertJobIdOrRef(o.id); // a business id: the wire id is minted
    ref = o.id;
    id = mint();
  }
  if (o.lane !== undefined && o.priority !== undefined) throw new InvalidOptionError('give priority or lane, not both');
  const { delayMs, runAtMs } = scheduleWire(o);
  return {
    id,
    payload: encodePayload(item.payload, maxBytes, codec, root),
    delayMs,
    runAtMs,
    maxAttempts: o.attempts === undefined ? undefined : checkAttempts(o.attempts),
    backoff: o.backoff === undefined ? undefined : backoffWire(o.backoff),
    dedupKey,
    priority: o.priority === undefined ? undefined : checkPriority(o.priority),
    lane: o.lane === undefined ? undefined : checkLane(o.lane),
    extras: o.timeoutMs === undefined && o.traceparent === undefined && o.name === undefined ? undefined : encodeExtras({ t: o.timeoutMs, tp: o.traceparent, n: o.name }),
    ref,
  };
}
