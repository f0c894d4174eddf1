/**
 * The Lua of a shard's own state (its cursor and its snapshot), fenced by the holder's token, and
 * of the order views. Each fenced script starts with the same check (the recipe of
 * docs/coordination.md): a token lower than the highest one the shard's fence has seen is
 * refused with `EMQ_STALE_TOKEN`, so a holder that lost its lease without knowing it (paused,
 * partitioned) cannot move the shard's state after its successor has written once.
 */
import { StoreScript } from './store.scripts.js';

/**
 * KEYS[1] the shard's fence, ARGV[1] the holder's token (a decimal integer < 2^53, so `tonumber`
 * compares it exactly). Refuses a lower token; raises the fence to a higher one.
 */
const FENCE_CHECK = `
if not string.match(ARGV[1], '^%d+$') or #ARGV[1] > 16 then return redis.error_reply('EMQ_BAD_ARG token must be a decimal integer') end
local seen = redis.call('GET', KEYS[1]) or '0'
if tonumber(ARGV[1]) < tonumber(seen) then return redis.error_reply('EMQ_STALE_TOKEN token ' .. ARGV[1] .. ' is below the fence ' .. seen) end
if tonumber(ARGV[1]) > tonumber(seen) then redis.call('SET', KEYS[1], ARGV[1]) end
`;

/** Claims the shard for a new term: KEYS fence; ARGV token. Refused when a later term has written. */
export const CLAIM = new StoreScript(`${FENCE_CHECK}
return 1`);

/** Raises the cursor: KEYS fence, cursor; ARGV token, position. Never moves it back. */
export const FENCED_RAISE = new StoreScript(`${FENCE_CHECK}
local cur = tonumber(redis.call('GET', KEYS[2]) or '-1')
if tonumber(ARGV[2]) > cur then redis.call('SET', KEYS[2], ARGV[2]) return 1 end
return 0`);

/**
 * Stores a snapshot: KEYS fence, snapshot hash; ARGV token, log position, JSON. Only over an
 * older one (a lower position); returns 1 when written.
 */
export const FENCED_SNAPSHOT = new StoreScript(`${FENCE_CHECK}
local old = tonumber(redis.call('HGET', KEYS[2], 'pos') or '-1')
if tonumber(ARGV[2]) <= old then return 0 end
redis.call('HSET', KEYS[2], 'pos', ARGV[2], 'doc', ARGV[3])
return 1`);

/**
 * Writes order views newer than the stored ones, one key per order: KEYS the views' keys; ARGV
 * the ttl (ms) of an ended order's view, then per key its JSON (whose "seq" orders them) and "1"
 * when the order has ended. An open order's view has no ttl; an ended order's expires. A stalled
 * holder overlapping its successor cannot move a view back, and an ended view is final (a place
 * re-run past the engine's horizon is refused as stale, which must not overwrite its real end).
 * Returns how many were written.
 */
export const VIEWS = new StoreScript(`
local written = 0
for i = 1, #KEYS do
  local doc = ARGV[2 * i]
  local raw = redis.call('GET', KEYS[i])
  local old = raw and cjson.decode(raw)
  if not old or (old.status ~= 'filled' and old.status ~= 'cancelled' and old.seq < cjson.decode(doc).seq) then
    if ARGV[2 * i + 1] == '1' then redis.call('SET', KEYS[i], doc, 'PX', ARGV[1]) else redis.call('SET', KEYS[i], doc) end
    written = written + 1
  end
end
return written`);
