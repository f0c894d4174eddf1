-- reap.lua: EchoMQ protocol v1. Moves jobs whose lease expired (on the server clock) back to the
-- front of pending, or to the morgue when they have used their last attempt. Bounded work per
-- call; any live consumer runs it, nothing depends on one special process. The old holder's
-- token stops being valid the moment the row leaves `active`.
--
-- KEYS[1]  emq:{q}:meta     queue meta hash
-- KEYS[2]  emq:{q}:active   zset id -> lease deadline
-- KEYS[3]  emq:{q}:pending  list of pending ids
-- KEYS[4]  emq:{q}:dead     zset id -> buried at (the morgue)
-- KEYS[5]  emq:{q}:wake     list that idle consumers block on
-- KEYS[6]  emq:{q}:data     hash id -> payload (for jobs trimmed out of the morgue)
-- KEYS[7]  emq:{q}:job:     prefix of job rows
-- KEYS[8]  emq:{q}:events   lifecycle events: sharded channel and bounded stream
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  the most jobs to reap in this call (1..1000)
-- ARGV[3]  default max attempts (1..1000), used when the row has none
-- ARGV[4]  morgue cap (1..1000000)
-- Returns: { requeued, buried }
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG.
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
local limit, defMax, cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not limit or limit < 1 or limit > 1000 then return redis.error_reply('EMQ_BAD_ARG reap limit must be 1..1000') end
if not defMax or defMax < 1 or defMax > 1000 then return redis.error_reply('EMQ_BAD_ARG default max attempts must be 1..1000') end
if not cap or cap < 1 or cap > 1000000 then return redis.error_reply('EMQ_BAD_ARG morgue cap must be 1..1000000') end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
local requeuedIds, buriedIds = {}, {}
for i = 1, #expired do
  local id = expired[i]
  local row = KEYS[7] .. id
  redis.call('ZREM', KEYS[2], id)
  local cur = redis.call('HMGET', row, 'attempts', 'max', 'status')
  if cur[3] == 'active' then
    local att, max = tonumber(cur[1]) or 1, tonumber(cur[2]) or defMax
    if att >= max then
      redis.call('HSET', row, 'status', 'dead', 'error', 'lease expired after attempt ' .. att, 'finished', now)
      redis.call('ZADD', KEYS[4], now, id)
      buriedIds[#buriedIds + 1] = id
    else
      redis.call('HSET', row, 'status', 'pending', 'error', 'lease expired')
      redis.call('RPUSH', KEYS[3], id) -- the pop end: first in line again
      requeuedIds[#requeuedIds + 1] = id
    end
  end
end
local requeued, buried = #requeuedIds, #buriedIds
emit(KEYS[8], elog, 'requeued', requeuedIds, now)
emit(KEYS[8], elog, 'buried', buriedIds, now)
if buried > 0 then
  local excess = math.min(redis.call('ZCARD', KEYS[4]) - cap, 1000) -- bounded work per call
  if excess > 0 then
    local old = redis.call('ZPOPMIN', KEYS[4], excess)
    for i = 1, #old, 2 do
      redis.call('DEL', KEYS[7] .. old[i])
      redis.call('HDEL', KEYS[6], old[i])
    end
  end
end
if requeued > 0 and redis.call('LLEN', KEYS[5]) == 0 then redis.call('LPUSH', KEYS[5], '1') end
return { requeued, buried }
