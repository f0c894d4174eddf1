-- promote.lua: EchoMQ protocol v1. Makes a scheduled job (delayed, or waiting for its retry
-- backoff) due now: its run-at becomes the server's now, and one wake marker is pushed (when
-- `wake` is empty), so the next claim promotes it to pending as it promotes any due job (its
-- priority or group kept). O(log n).
--
-- KEYS[1]  emq:{q}:meta       queue meta hash
-- KEYS[2]  emq:{q}:scheduled  zset id -> run-at (ms)
-- KEYS[3]  emq:{q}:wake       list that idle consumers block on
-- KEYS[4]  emq:{q}:data       hash id -> payload
-- KEYS[5]  emq:{q}:job:       prefix of job rows
-- KEYS[6]  emq:{q}:job:<id>   the job's row
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  id
-- Returns: 1 promoted (also a job already due) / 0 the job exists but is not scheduled /
--          -1 no such job (nothing written but by 1).
-- Errors:  EMQ_BAD_ARG (counts, a key that is not the one the key grammar spells for the queue
--          of KEYS[1], KEYS[6] not the row of the id), EMQ_VERSION, EMQ_BAD_ID, EMQ_WRONGTYPE.
if #KEYS ~= 6 or #ARGV ~= 2 then return redis.error_reply('EMQ_BAD_ARG expected 6 keys and 2 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'scheduled' or KEYS[3] ~= b .. 'wake'
  or KEYS[4] ~= b .. 'data' or KEYS[5] ~= b .. 'job:' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, scheduled, wake, data, job:, the row of one queue, in this order')
end
-- The 14-byte gate: namespace `job`, 11 base62 digits, body at most 2^64-1 (compared byte by byte).
local function badId(id)
  if #id ~= 14 or not string.match(id, '^job[0-9A-Za-z]+$') then return true end
  local max = 'LygHa16AHYF'
  for i = 1, 11 do
    local x, y = string.byte(id, i + 3), string.byte(max, i)
    if x ~= y then return x > y end
  end
  return false
end
local id = ARGV[2]
if badId(id) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
if KEYS[6] ~= KEYS[5] .. id then return redis.error_reply('EMQ_BAD_ARG KEYS[6] is not the row of ' .. id) end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[1] .. ' is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
local score = redis.pcall('ZSCORE', KEYS[2], id)
if type(score) == 'table' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[2] .. ' is not a zset') end
local wt = redis.call('TYPE', KEYS[3])['ok']
if wt ~= 'none' and wt ~= 'list' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[3] .. ' is not a list') end
if not score then
  local d = redis.pcall('HEXISTS', KEYS[4], id)
  if type(d) == 'table' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[4] .. ' is not a hash') end
  local r = redis.pcall('EXISTS', KEYS[6])
  if d == 1 or r == 1 then return 0 end
  return -1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(score) > now then redis.call('ZADD', KEYS[2], 'XX', now, id) end
if redis.call('LLEN', KEYS[3]) == 0 then redis.call('LPUSH', KEYS[3], '1') end
return 1
