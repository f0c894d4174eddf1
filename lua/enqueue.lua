-- enqueue.lua: EchoMQ protocol v1. Adds one or many jobs to a queue: each new job's payload
-- joins the queue's data hash and its id joins `pending` (the pending list) or `scheduled` (the
-- scheduled set, at its run-at instant on the server clock). A job whose id already has data is
-- left untouched, so an enqueue with a caller-chosen id is idempotent. The job row is created
-- by its first claim (or by cancel): a waiting job costs one hash field and one set entry.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (protocol version `v`)
-- KEYS[2]  emq:{q}:pending    list of pending ids (enqueue LPUSH, claim RPOP: FIFO)
-- KEYS[3]  emq:{q}:scheduled  zset id -> run-at (ms)
-- KEYS[4]  emq:{q}:wake       list that idle consumers block on
-- KEYS[5]  emq:{q}:data       hash id -> payload (JSON text)
-- KEYS[6]  emq:{q}:opts       hash id -> "<max attempts>|<backoff>" for jobs with their own options
-- KEYS[7]  emq:{q}:events     lifecycle events: sharded channel and bounded stream
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  largest payload in bytes
-- ARGV[3]  n, the number of jobs (1..1000)
-- ARGV[4]  the queue's lifecycle-log length to record in meta `elog` (0..1000000; "" = keep)
-- ARGV[5+6(i-1) .. 10+6(i-1)] per job i: id, payload (JSON text), delay ms (0 = none),
--          run-at epoch ms (0 = none), max attempts ("" = consumer default),
--          backoff ("" = consumer default, or "f:<ms>" fixed, "e:<ms>" exponential)
-- Returns: an array of n integers: 1 = added, 0 = a job with this id already existed.
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG, EMQ_BAD_ID, EMQ_PAYLOAD_TOO_LARGE, EMQ_BATCH_TOO_LARGE.
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
local maxBytes = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
if not maxBytes or maxBytes < 1 or not n or n < 1 or n % 1 ~= 0 then
  return redis.error_reply('EMQ_BAD_ARG bad payload limit or job count')
end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 jobs per call') end
if #KEYS ~= 7 or #ARGV ~= 4 + 6 * n then
  return redis.error_reply('EMQ_BAD_ARG expected 7 keys and ' .. (6 * n) .. ' job arguments')
end
local setLog = ARGV[4]
if setLog ~= '' and (not string.match(setLog, '^%d+$') or tonumber(setLog) > 1000000) then
  return redis.error_reply('EMQ_BAD_ARG lifecycle-log length must be 0..1000000')
end
for i = 1, n do
  local b = 4 + 6 * (i - 1)
  local id, payload = ARGV[b + 1], ARGV[b + 2]
  if badId(id) then
    return redis.error_reply('EMQ_BAD_ID job ' .. i .. ' has a malformed id')
  end
  if #payload == 0 then return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has an empty payload') end
  if #payload > maxBytes then
    return redis.error_reply('EMQ_PAYLOAD_TOO_LARGE job ' .. i .. ' payload is ' .. #payload .. ' bytes, the limit is ' .. maxBytes)
  end
  local delay, runAt = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  if not delay or delay < 0 or not runAt or runAt < 0 then
    return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad delay or run-at')
  end
  local maxA, backoff = ARGV[b + 5], ARGV[b + 6]
  if maxA ~= '' and not string.match(maxA, '^[1-9]%d?%d?%d?$') then
    return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has bad max attempts')
  end
  if backoff ~= '' and not string.match(backoff, '^[fe]:%d+$') then
    return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad backoff')
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not stored then redis.call('HSET', KEYS[1], 'v', V) end
if setLog ~= '' and tonumber(setLog) ~= elog then
  elog = tonumber(setLog)
  redis.call('HSET', KEYS[1], 'elog', setLog)
end
local out, queued, scheduled = {}, {}, {}
for i = 1, n do
  local b = 4 + 6 * (i - 1)
  local id = ARGV[b + 1]
  if redis.call('HSETNX', KEYS[5], id, ARGV[b + 2]) == 0 then
    out[i] = 0
  else
    local delay, runAt = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
    local at = runAt
    if delay > 0 then at = now + delay end
    local maxA, backoff = ARGV[b + 5], ARGV[b + 6]
    if maxA ~= '' or backoff ~= '' then redis.call('HSET', KEYS[6], id, maxA .. '|' .. backoff) end
    if at > now then
      redis.call('ZADD', KEYS[3], at, id)
      scheduled[#scheduled + 1] = id
    else
      redis.call('LPUSH', KEYS[2], id)
      queued[#queued + 1] = id
    end
    out[i] = 1
  end
end
if redis.call('LLEN', KEYS[4]) == 0 then redis.call('LPUSH', KEYS[4], '1') end
emit(KEYS[7], elog, 'enqueued', queued, now)
emit(KEYS[7], elog, 'scheduled', scheduled, now)
return out
