import type { ValkeyClient } from '../core/connection/index.js';
import { fromReplyError } from '../core/reply-errors.js';
import { MAX_NODE, SEQ_BITS, composeId } from '../core/ids.js';
import { isCacheKey } from '../core/keys.js';

/** Most members read per `ZSCAN` call, and invalidated per pipeline, by `invalidateTag`. */
export const TAG_CHUNK = 1000;

/**
 * Time a tagged write allows between recording its key in the tag index (`cache-tag.lua` add)
 * and its `cache-set.lua` (ms). It is added to the member's life, so the member does not expire
 * before the entry; a write whose cache-set resolves later than `TAG_LATE_MS` after the record
 * records the key again (its life then counts from after the entry's).
 */
export const TAG_MARGIN_MS = 250;
/** See `TAG_MARGIN_MS`. */
export const TAG_LATE_MS = 100;

/**
 * The version of a fill whose load begins at `now` (epoch ms): the LARGEST id of the millisecond
 * before `now − skewMs`. Every id minted from that millisecond on — by any node, node 0 and
 * sequence 0 included — sorts after it, so a set or invalidation minted at or after the load's
 * start always wins over the fill; writes minted before it are older than the fill.
 */
export function fillVersion(now: number, skewMs: number): string {
  return composeId('ver', { ms: now - skewMs - 1, node: MAX_NODE, seq: (1 << SEQ_BITS) - 1 });
}

/**
 * Walks a tag's index (a zset) with `ZSCAN … COUNT 1000`, handing each chunk of at most 1000
 * members to `each` in turn, so no call's cost grows with the tag's size. ZSCAN returns every
 * member present for the whole walk at least once (possibly twice: `each` must be idempotent);
 * members that break the key grammar are skipped, never used as keys.
 */
export async function scanTag(client: ValkeyClient, index: string, each: (members: string[]) => Promise<void>): Promise<void> {
  let cursor = '0';
  do {
    let reply: [string, string[]];
    try {
      reply = await client.zscan(index, cursor, 'COUNT', TAG_CHUNK);
    } catch (err) {
      throw fromReplyError(err);
    }
    cursor = reply[0];
    const members = reply[1].filter((m, i) => i % 2 === 0 && isCacheKey(m));
    for (let i = 0; i < members.length; i += TAG_CHUNK) await each(members.slice(i, i + TAG_CHUNK));
  } while (cursor !== '0');
}
