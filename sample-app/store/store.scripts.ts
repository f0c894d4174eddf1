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
 * Settles one trade: KEYS settled-set, buyer hash, seller hash, accounts set; ARGV trade id,
 * symbol, qty, notional ticks, buyer, seller. Moves cash (ticks) and units once per trade id;
 * returns 1 when it moved them, 0 for a repeat.
 */
export const SETTLE = new StoreScript(`
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
local qty = tonumber(ARGV[3])
local notional = tonumber(ARGV[4])
redis.call('HINCRBY', KEYS[2], 'cash', -notional)
redis.call('HINCRBY', KEYS[2], 'u:' .. ARGV[2], qty)
redis.call('HINCRBY', KEYS[3], 'cash', notional)
redis.call('HINCRBY', KEYS[3], 'u:' .. ARGV[2], -qty)
redis.call('SADD', KEYS[4], ARGV[5], ARGV[6])
return 1`);

/**
 * Folds one trade into its candles, one per interval: KEYS per interval candle hash, seen set,
 * index zset; ARGV trade id, trade number, price ticks, qty, then per interval its bucket start
 * and ttl ms. Open/close are the prices of the lowest/highest trade number seen, so a candle does
 * not depend on the order trades arrive in. A trade already seen in a bucket is skipped there.
 */
export const CANDLE = new StoreScript(`
local n = tonumber(ARGV[2])
local p = tonumber(ARGV[3])
local folded = 0
for i = 0, #KEYS / 3 - 1 do
  local candle, seen, index = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3]
  local start, ttl = ARGV[5 + 2 * i], ARGV[6 + 2 * i]
  if redis.call('SADD', seen, ARGV[1]) == 1 then
    local c = redis.call('HMGET', candle, 'os', 'cs', 'h', 'l')
    if not c[1] or n < tonumber(c[1]) then redis.call('HSET', candle, 'os', n, 'o', p) end
    if not c[2] or n > tonumber(c[2]) then redis.call('HSET', candle, 'cs', n, 'c', p) end
    if not c[3] or p > tonumber(c[3]) then redis.call('HSET', candle, 'h', p) end
    if not c[4] or p < tonumber(c[4]) then redis.call('HSET', candle, 'l', p) end
    redis.call('HINCRBY', candle, 'v', tonumber(ARGV[4]))
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
 * trade id, symbol, qty, notional ticks, buyer, seller. Returns 1, or 0 for a repeat.
 */
export const RISK = new StoreScript(`
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
local qty = tonumber(ARGV[3])
local notional = tonumber(ARGV[4])
redis.call('HINCRBY', KEYS[2], 'u:' .. ARGV[2], qty)
redis.call('HINCRBY', KEYS[2], 'gross', notional)
redis.call('HINCRBY', KEYS[2], 'net', notional)
redis.call('HINCRBY', KEYS[3], 'u:' .. ARGV[2], -qty)
redis.call('HINCRBY', KEYS[3], 'gross', notional)
redis.call('HINCRBY', KEYS[3], 'net', -notional)
redis.call('SADD', KEYS[4], ARGV[5], ARGV[6])
return 1`);

/**
 * Writes order views newer than the stored ones: KEYS the views hash; ARGV pairs of order id and
 * JSON whose "seq" field orders them. A stalled holder overlapping its successor cannot move a
 * view back. Returns how many were written.
 */
export const VIEWS = new StoreScript(`
local written = 0
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  local newSeq = cjson.decode(ARGV[i + 1]).seq
  if not old or cjson.decode(old).seq < newSeq then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    written = written + 1
  end
end
return written`);

/** Raises a number key to ARGV[1] if it is lower (a cursor that never moves back). */
export const RAISE = new StoreScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) > cur then redis.call('SET', KEYS[1], ARGV[1]) return 1 end
return 0`);
