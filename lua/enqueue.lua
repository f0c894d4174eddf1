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
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  largest payload in bytes
-- ARGV[3]  n, the number of jobs (1..1000)
-- ARGV[4+6(i-1) .. 9+6(i-1)] per job i: id, payload (JSON text), delay ms (0 = none),
--          run-at epoch ms (0 = none), max attempts ("" = consumer default),
--          backoff ("" = consumer default, or "f:<ms>" fixed, "e:<ms>" exponential)
-- Returns: an array of n integers: 1 = added, 0 = a job with this id already existed.
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG, EMQ_BAD_ID, EMQ_PAYLOAD_TOO_LARGE, EMQ_BATCH_TOO_LARGE.
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local stored = redis.call('HGET', KEYS[1], 'v')
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. stored .. ', script speaks ' .. V)
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
if #KEYS ~= 6 or #ARGV ~= 3 + 6 * n then
  return redis.error_reply('EMQ_BAD_ARG expected 6 keys and ' .. (6 * n) .. ' job arguments')
end
for i = 1, n do
  local b = 3 + 6 * (i - 1)
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
local out = {}
for i = 1, n do
  local b = 3 + 6 * (i - 1)
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
    else
      redis.call('LPUSH', KEYS[2], id)
    end
    out[i] = 1
  end
end
if redis.call('LLEN', KEYS[4]) == 0 then redis.call('LPUSH', KEYS[4], '1') end
return out
