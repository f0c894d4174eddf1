/**
 * The Lua of the ledger: opening balances, reservations and settlement. Every key is in the
 * `{ledger}` slot, so each operation is one atomic script (also on a Valkey Cluster), and each
 * is idempotent: keyed by an account (funding), an order id (reserve, release) or a trade id
 * (settle), so a re-run step changes nothing the second time.
 *
 * Money is never a Lua number. Lua numbers are doubles (exact only up to 2^53) and Lua formats
 * them with %.14g, so `tonumber` on 10999988989000011 ticks would lose the last digits. Amounts
 * arrive as decimal strings computed with `bigint` in TypeScript (negatives included), go
 * straight to HINCRBY/DECRBY (the server's exact 64-bit integers), and comparisons are read back
 * as strings from a scratch key: "is held − reserved − needed negative?" is a look at its sign.
 *
 * An account hash `x:{ledger}:acct:<id>` holds `cash` and `rcash` (cash and reserved cash, ticks),
 * `u:<SYM>` and `r:<SYM>` (units held and reserved). A reservation `x:{ledger}:res:<orderId>`
 * holds `acct`, `field` (`rcash` or `r:<SYM>`), `per` (what one unit of the order reserves: the
 * limit price or the collar in ticks for a buy, 1 for a sell), `left` (what it still reserves)
 * and, once the order ended, `ended`.
 */
import { StoreScript } from './store.scripts.js';

/**
 * Funds an account once: KEYS funded set, account hash, accounts set; ARGV account, cash ticks,
 * then pairs of symbol and units. Returns 1 when it funded, 0 when the account already was.
 */
export const FUND = new StoreScript(`
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[2], 'cash', ARGV[2])
for i = 3, #ARGV, 2 do redis.call('HINCRBY', KEYS[2], 'u:' .. ARGV[i], ARGV[i + 1]) end
redis.call('SADD', KEYS[3], ARGV[1])
return 1`);

/**
 * Reserves for one order, once per order id: KEYS account hash, reservation, scratch, the
 * not-yet-sequenced index; ARGV held field (`cash` or `u:<SYM>`), reserved field, per, amount,
 * overdraft allowed (1/0), account, now (ms: the index's score), order id.
 * Returns {1, available} when reserved (or reserved before: {2, ''}), {0, available} when short —
 * available = held − reserved before this order, a decimal string. Writes nothing when short.
 */
export const RESERVE = new StoreScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return {2, ''} end
redis.call('SET', KEYS[3], redis.call('HGET', KEYS[1], ARGV[1]) or '0')
redis.call('DECRBY', KEYS[3], redis.call('HGET', KEYS[1], ARGV[2]) or '0')
local available = redis.call('GET', KEYS[3])
redis.call('DECRBY', KEYS[3], ARGV[4])
local short = string.sub(redis.call('GET', KEYS[3]), 1, 1) == '-'
redis.call('DEL', KEYS[3])
if short and ARGV[5] ~= '1' then return {0, available} end
redis.call('HINCRBY', KEYS[1], ARGV[2], ARGV[4])
redis.call('HSET', KEYS[2], 'acct', ARGV[6], 'field', ARGV[2], 'per', ARGV[3], 'left', ARGV[4])
redis.call('ZADD', KEYS[4], ARGV[7], ARGV[8])
return {1, available}`);

/**
 * The intake's check before it sequences a placement: KEYS reservation, not-yet-sequenced index;
 * ARGV order id. Marks the reservation sequenced (the sweeper then leaves it alone) and returns
 * 1, or returns 0 when there is none (never reserved, or swept).
 */
export const MARK_SEQUENCED = new StoreScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'sequenced', '1')
redis.call('ZREM', KEYS[2], ARGV[1])
return 1`);

/**
 * Releases reservations whose order never reached the intake: KEYS not-yet-sequenced index, then
 * pairs of account hash and reservation; ARGV the order ids. A reservation the intake has marked
 * meanwhile is left alone (the mark and the sweep are atomic on the reservation, so an order is
 * either sequenced with its money set aside or swept and then buried by the intake — never
 * both). Returns how many it released.
 */
export const SWEEP = new StoreScript(`
local n = 0
for i = 2, #KEYS, 2 do
  local acct, rec, id = KEYS[i], KEYS[i + 1], ARGV[i / 2]
  if redis.call('EXISTS', rec) == 1 and redis.call('HEXISTS', rec, 'sequenced') == 0 and redis.call('HEXISTS', rec, 'ended') == 0 then
    local left = redis.call('HGET', rec, 'left')
    if left ~= '0' then redis.call('HINCRBY', acct, redis.call('HGET', rec, 'field'), '-' .. left) end
    redis.call('DEL', rec)
    n = n + 1
  end
  redis.call('ZREM', KEYS[1], id)
end
return n`);

/**
 * The shared tail of a release: takes `neg` (a negative decimal string) off reservation `rec`
 * and off its account's reserved field; once the order has ended and nothing is left, the
 * reservation expires after ARGV[1] s (it stays that long so a retried placement finds it).
 */
const RELEASE_FN = `
local function release(acct, rec, neg)
  if neg ~= '0' and neg ~= '-0' then
    redis.call('HINCRBY', acct, redis.call('HGET', rec, 'field'), neg)
    redis.call('HINCRBY', rec, 'left', neg)
  end
  if redis.call('HGET', rec, 'ended') == '1' and redis.call('HGET', rec, 'left') == '0' then redis.call('EXPIRE', rec, ARGV[1]) end
end
`;

/**
 * Releases the unfilled rest of ended orders, once per order id: KEYS pairs of account hash and
 * reservation; ARGV keep seconds, then per order the negated rest. Returns how many it released.
 */
export const RELEASE_ENDED = new StoreScript(`${RELEASE_FN}
local n = 0
for i = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i + 1]) == 1 and redis.call('HSETNX', KEYS[i + 1], 'ended', '1') == 1 then
    release(KEYS[i], KEYS[i + 1], ARGV[(i + 1) / 2 + 1])
    n = n + 1
  end
end
return n`);

/**
 * Settles one trade, once per trade id: KEYS settled set of the trade's hour, buyer hash, seller
 * hash, accounts set, buy reservation, sell reservation, settled counter; ARGV keep seconds, trade
 * id, symbol, qty, −qty, notional, −notional (ticks), buyer, seller, the buy and sell releases
 * (negated), the settled set's ttl (ms). Moves cash and units and releases the filled part of both
 * orders' reservations; returns 1 when it moved, 0 for a repeat. The settled ids are kept per
 * hour of the trade (a re-run finds the same set) and expire after the ttl; the counter keeps
 * the total.
 */
export const SETTLE = new StoreScript(`${RELEASE_FN}
if redis.call('SADD', KEYS[1], ARGV[2]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[12])
redis.call('INCR', KEYS[7])
redis.call('HINCRBY', KEYS[2], 'cash', ARGV[7])
redis.call('HINCRBY', KEYS[2], 'u:' .. ARGV[3], ARGV[4])
redis.call('HINCRBY', KEYS[3], 'cash', ARGV[6])
redis.call('HINCRBY', KEYS[3], 'u:' .. ARGV[3], ARGV[5])
redis.call('SADD', KEYS[4], ARGV[8], ARGV[9])
if redis.call('EXISTS', KEYS[5]) == 1 then release(KEYS[2], KEYS[5], ARGV[10]) end
if redis.call('EXISTS', KEYS[6]) == 1 then release(KEYS[3], KEYS[6], ARGV[11]) end
return 1`);

/** Deletes KEYS[1] when its value starts with ARGV[1] (a claim this request made). */
export const UNCLAIM = new StoreScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`);
