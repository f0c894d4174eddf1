-- cancel.lua: EchoMQ protocol v1. Cancels a job that has not started: a pending or scheduled
-- job moves to `cancelled` (kept in a bounded set). An active job is not interrupted here; its
-- row is flagged `cancel` = 1 for the holder to observe.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash
-- KEYS[2]  emq:{q}:pending    list of pending ids
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at
-- KEYS[4]  emq:{q}:cancelled  zset id -> cancelled at (bounded retention)
-- KEYS[5]  emq:{q}:data       hash id -> payload
-- KEYS[6]  emq:{q}:opts       hash id -> the job's own options (until its first claim)
-- KEYS[7]  emq:{q}:job:       prefix of job rows
-- KEYS[8]  emq:{q}:job:<id>   the job's row
-- KEYS[9]  emq:{q}:events     lifecycle events: sharded channel and bounded stream
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  id
-- ARGV[3]  cancelled retention: how many cancelled rows to keep (1..1000000)
-- Returns: 1 cancelled; 2 active, flagged for cooperative cancel; 0 already finished; -1 no such job.
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
local id, keep = ARGV[2], tonumber(ARGV[3])
if badId(id) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
if KEYS[8] ~= KEYS[7] .. id then return redis.error_reply('EMQ_BAD_ARG KEYS[8] is not the row of ' .. id) end
if not keep or keep < 1 or keep > 1000000 then return redis.error_reply('EMQ_BAD_ARG retention must be 1..1000000') end

local row = KEYS[8]
local status = redis.call('HGET', row, 'status')
if not status then
  -- No row yet: a job that was never claimed is scheduled or pending.
  if redis.call('ZSCORE', KEYS[3], id) then
    status = 'scheduled'
  elseif redis.call('HEXISTS', KEYS[5], id) == 1 then
    status = 'pending'
  else
    return -1
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if status == 'active' then
  redis.call('HSET', row, 'cancel', '1')
  emit(KEYS[9], elog, 'cancel-requested', { id }, now)
  return 2
end
if status == 'pending' then
  redis.call('LREM', KEYS[2], 1, id)
elseif status == 'scheduled' then
  redis.call('ZREM', KEYS[3], id)
else
  return 0
end
redis.call('HSET', row, 'status', 'cancelled', 'finished', now)
redis.call('HDEL', KEYS[6], id)
redis.call('ZADD', KEYS[4], now, id)
local excess = math.min(redis.call('ZCARD', KEYS[4]) - keep, 1000) -- bounded work per call
if excess > 0 then
  local old = redis.call('ZPOPMIN', KEYS[4], excess)
  for i = 1, #old, 2 do
    redis.call('DEL', KEYS[7] .. old[i])
    redis.call('HDEL', KEYS[5], old[i])
  end
end
emit(KEYS[9], elog, 'cancelled', { id }, now)
return 1
