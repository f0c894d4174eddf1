-- retry.lua: EchoMQ protocol v1. Retry-or-bury for one active job, fenced by its token. The job
-- is scheduled again after its backoff (computed here, on the server clock), or moved to the
-- morgue (`dead`) when it has used its last attempt or the error is fatal. The morgue is capped:
-- its oldest rows beyond the cap are deleted.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash
-- KEYS[2]  emq:{q}:active     zset id -> lease deadline
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at
-- KEYS[4]  emq:{q}:dead       zset id -> buried at (the morgue)
-- KEYS[5]  emq:{q}:wake       list that idle consumers block on
-- KEYS[6]  emq:{q}:data       hash id -> payload (for jobs trimmed out of the morgue)
-- KEYS[7]  emq:{q}:job:       prefix of job rows (for rows trimmed out of the morgue)
-- KEYS[8]  emq:{q}:job:<id>   the job's row
-- KEYS[9]  emq:{q}:events     lifecycle events: sharded channel and bounded stream
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  id
-- ARGV[3]  fencing token
-- ARGV[4]  error text (at most 65536 bytes)
-- ARGV[5]  "1" when the error is fatal (straight to the morgue), else "0"
-- ARGV[6]  default max attempts (1..1000), used when the row has none
-- ARGV[7]  default backoff ("f:<ms>" or "e:<ms>"), used when the row has none
-- ARGV[8]  morgue cap (1..1000000)
-- Returns: { 0 } refused (stale token or not active); { 1, runAt } scheduled again;
--          { 2, buriedAt } moved to the morgue.
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG, EMQ_BAD_ID.
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local meta = redis.call('HMGET', KEYS[1], 'v', 'elog')
local stored, elog = meta[1], tonumber(meta[2]) or 0
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
end
-- Lifecycle events: one sharded pub/sub message per call and kind on the events channel, and,
-- when the queue's `elog` (set by enqueue) is above 0, one entry in the bounded events stream.
local function emit(key, elog, kind, ids, now)
  if #ids == 0 then return end
  -- Ids and kinds are validated base62 / fixed words: plain concatenation is valid JSON.
  redis.call('SPUBLISH', key, '{"e":"' .. kind .. '","ids":["' .. table.concat(ids, '","') .. '"],"at":' .. now .. '}')
  if elog > 0 then
    redis.call('XADD', key, 'MAXLEN', '~', elog, '*', 'e', kind, 'ids', table.concat(ids, ' '), 'at', now)
  end
end
-- The 14-byte gate: namespace `job`, 11 base62 digits, body at most 2^64-1. Compared byte by
-- byte: Lua's `>` on strings follows the server's collation locale, not byte order.
local function badId(id)
  if #id ~= 14 or not string.match(id, '^job[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
local id, token, err, fatal = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if badId(id) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
if KEYS[8] ~= KEYS[7] .. id then return redis.error_reply('EMQ_BAD_ARG KEYS[8] is not the row of ' .. id) end
if not string.match(token, '^%d+$') then return redis.error_reply('EMQ_BAD_ARG bad token') end
if #err > 65536 then return redis.error_reply('EMQ_BAD_ARG error text over 65536 bytes') end
if fatal ~= '0' and fatal ~= '1' then return redis.error_reply('EMQ_BAD_ARG fatal flag must be 0 or 1') end
local defMax, defBackoff, cap = tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
if not defMax or defMax < 1 or defMax > 1000 then return redis.error_reply('EMQ_BAD_ARG default max attempts must be 1..1000') end
if not string.match(defBackoff, '^[fe]:%d+$') then return redis.error_reply('EMQ_BAD_ARG bad default backoff') end
if not cap or cap < 1 or cap > 1000000 then return redis.error_reply('EMQ_BAD_ARG morgue cap must be 1..1000000') end

local row = KEYS[8]
local cur = redis.call('HMGET', row, 'status', 'token', 'attempts', 'max', 'backoff')
if cur[1] ~= 'active' or cur[2] ~= token then return { 0 } end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local att = tonumber(cur[3]) or 1
local max = tonumber(cur[4]) or defMax
redis.call('ZREM', KEYS[2], id)
if fatal == '1' or att >= max then
  redis.call('HSET', row, 'status', 'dead', 'error', err, 'finished', now)
  redis.call('ZADD', KEYS[4], now, id)
  local excess = math.min(redis.call('ZCARD', KEYS[4]) - cap, 1000) -- bounded work per call
  if excess > 0 then
    local old = redis.call('ZPOPMIN', KEYS[4], excess)
    for i = 1, #old, 2 do
      redis.call('DEL', KEYS[7] .. old[i])
      redis.call('HDEL', KEYS[6], old[i])
    end
  end
  emit(KEYS[9], elog, 'buried', { id }, now)
  return { 2, now }
end
local kind, base = string.match(cur[5] or defBackoff, '^([fe]):(%d+)$')
local delay = tonumber(base)
if kind == 'e' then delay = delay * math.pow(2, att - 1) end
if delay > 86400000 then delay = 86400000 end -- never back off more than a day
local runAt = now + math.floor(delay)
redis.call('HSET', row, 'status', 'scheduled', 'error', err)
redis.call('ZADD', KEYS[3], runAt, id)
if redis.call('LLEN', KEYS[5]) == 0 then redis.call('LPUSH', KEYS[5], '1') end
emit(KEYS[9], elog, 'retried', { id }, now)
return { 1, runAt }
