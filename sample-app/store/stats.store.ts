/**
 * Settlement latency samples for `/stats`, once per trade id. The settlement step records its
 * sample on every run, moved or not: a step that moved the ledger and died before recording is
 * re-run (the ledger then moves nothing) and records it then, so every settled trade has exactly
 * one sample (the newest `LATENCIES_KEPT` are kept), however often its step ran.
 */
import type { Redis } from 'iovalkey';
import { StoreScript } from './store.scripts.js';

/** How many settlement latencies are kept (newest). */
export const LATENCIES_KEPT = 100_000;

/** The samples' keys, in the `{stats}` slot: trade ids by record time, and each one's latency. */
const K = { order: 'x:{stats}:settle-at', ms: 'x:{stats}:settle-ms-by-trade' };

/**
 * KEYS order zset, latency hash; ARGV trade id, latency ms, now ms, how many to keep. Adds the
 * sample unless the trade has one; trims the oldest beyond the bound. Returns 1 when it added.
 */
const RECORD = new StoreScript(`
if redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if over > 0 then
  local old = redis.call('ZRANGE', KEYS[1], 0, over - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
  redis.call('HDEL', KEYS[2], unpack(old))
end
return 1
`);

/** Records the latency of `tradeId`'s settlement unless it has one; true when this call recorded it. */
export async function recordSettlement(client: Redis, tradeId: string, ms: number): Promise<boolean> {
  return (await RECORD.run(client, [K.order, K.ms], [tradeId, Math.max(0, Math.round(ms)), Date.now(), LATENCIES_KEPT])) === 1;
}

/** The newest `count` settlement latencies (ms), newest first. */
export async function latencies(client: Redis, count: number): Promise<number[]> {
  const ids = await client.zrevrange(K.order, 0, count - 1);
  if (ids.length === 0) return [];
  return (await client.hmget(K.ms, ...ids)).flatMap((v) => (v === null ? [] : [Number(v)]));
}

/** How many samples are kept. */
export function sampleCount(client: Redis): Promise<number> {
  return client.zcard(K.order);
}
