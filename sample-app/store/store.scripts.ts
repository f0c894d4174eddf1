/**
 * The Lua of the exchange's own database (ledger, projections, order views). Each script touches
 * keys of one hash tag only, so it also runs on a Valkey Cluster. Every write is idempotent:
 * keyed by a trade id or guarded by a sequence number, so at-least-once delivery (a re-run flow
 * step, a re-delivered Bus event, a replayed batch) changes nothing the second time.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'iovalkey';

/** A script sent by SHA, loaded on first use (or after a server restart). */
export class StoreScript {
  private readonly sha: string;

  constructor(private readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /** Runs the script. */
  async run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return client.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}

/**
 * Folds one trade into its candles, one per interval: KEYS per interval candle hash, seen set,
 * index zset; ARGV trade id, trade number, price ticks, qty, notional ticks, then per interval its
 * bucket start and ttl ms. Open/close are the prices of the lowest/highest trade number seen, so a
 * candle does not depend on the order trades arrive in. A trade already seen in a bucket is skipped
 * there. Money stays text: prices are stored as given and compared with `tonumber` only (a price
 * is at most 10^9 ticks, exact in a double); volume and notional are summed by HINCRBY on the
 * decimal strings (64-bit integers, never a double).
 */
export const CANDLE = new StoreScript(`
local n = tonumber(ARGV[2])
local p = tonumber(ARGV[3])
local folded = 0
for i = 0, #KEYS / 3 - 1 do
  local candle, seen, index = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3]
  local start, ttl = ARGV[6 + 2 * i], ARGV[7 + 2 * i]
  if redis.call('SADD', seen, ARGV[1]) == 1 then
    local c = redis.call('HMGET', candle, 'os', 'cs', 'h', 'l')
    if not c[1] or n < tonumber(c[1]) then redis.call('HSET', candle, 'os', ARGV[2], 'o', ARGV[3]) end
    if not c[2] or n > tonumber(c[2]) then redis.call('HSET', candle, 'cs', ARGV[2], 'c', ARGV[3]) end
    if not c[3] or p > tonumber(c[3]) then redis.call('HSET', candle, 'h', ARGV[3]) end
    if not c[4] or p < tonumber(c[4]) then redis.call('HSET', candle, 'l', ARGV[3]) end
    redis.call('HINCRBY', candle, 'v', ARGV[4])
    redis.call('HINCRBY', candle, 'q', ARGV[5])
    redis.call('HINCRBY', candle, 'n', 1)
    redis.call('ZADD', index, start, start)
    redis.call('PEXPIRE', candle, ttl)
    redis.call('PEXPIRE', seen, ttl)
    folded = folded + 1
  end
end
return folded`);

/**
 * Folds one trade into the risk view: KEYS seen set, buyer hash, seller hash, accounts set; ARGV
 * trade id, symbol, qty, −qty, notional ticks, −notional ticks, buyer, seller (the negatives
 * written by the caller, so no number is ever computed here: HINCRBY takes the decimal strings).
 * Returns 1, or 0 for a repeat.
 */
export const RISK = new StoreScript(`
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[2], 'u:' .. ARGV[2], ARGV[3])
redis.call('HINCRBY', KEYS[2], 'gross', ARGV[5])
redis.call('HINCRBY', KEYS[2], 'net', ARGV[5])
redis.call('HINCRBY', KEYS[3], 'u:' .. ARGV[2], ARGV[4])
redis.call('HINCRBY', KEYS[3], 'gross', ARGV[5])
redis.call('HINCRBY', KEYS[3], 'net', ARGV[6])
redis.call('SADD', KEYS[4], ARGV[7], ARGV[8])
return 1`);
