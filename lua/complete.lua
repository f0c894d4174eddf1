-- complete.lua: EchoMQ protocol v1. Completes one or many active jobs, each fenced by the token
-- its claim minted: a holder whose lease expired (the job was reaped or re-claimed) is refused
-- and changes nothing. A completed job is kept in the bounded `done` set, or deleted (row and
-- data) at once when the retention is 0; the oldest jobs beyond the retention are deleted.
--
-- KEYS[1]  emq:{q}:meta     queue meta hash
-- KEYS[2]  emq:{q}:active   zset id -> lease deadline
-- KEYS[3]  emq:{q}:done     zset id -> finished at (ms), the bounded retention of done rows
-- KEYS[4]  emq:{q}:data     hash id -> payload
-- KEYS[5]  emq:{q}:job:     prefix of job rows (for rows trimmed out of the retention)
-- KEYS[6]  emq:{q}:events   lifecycle events: sharded channel and bounded stream
-- KEYS[6+i] emq:{q}:job:<id_i> the row of job i, for i = 1..n
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  done retention: how many done rows to keep (0..1000000)
-- ARGV[3]  n, the number of jobs (1..1000)
-- ARGV[4+3(i-1) .. 6+3(i-1)] per job i: id, token, result (JSON text, "" for none)
-- Returns: an array of n integers: 1 = completed, 0 = refused (stale token or not active).
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG, EMQ_BAD_ID, EMQ_BATCH_TOO_LARGE.
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
local keep, n = tonumber(ARGV[2]), tonumber(ARGV[3])
if not keep or keep < 0 or keep > 1000000 or keep % 1 ~= 0 then return redis.error_reply('EMQ_BAD_ARG retention must be 0..1000000') end
if not n or n < 1 or n % 1 ~= 0 then return redis.error_reply('EMQ_BAD_ARG bad job count') end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 jobs per call') end
if #KEYS ~= 6 + n or #ARGV ~= 3 + 3 * n then return redis.error_reply('EMQ_BAD_ARG expected ' .. n .. ' rows and ' .. (3 * n) .. ' job arguments') end
for i = 1, n do
  local id = ARGV[4 + 3 * (i - 1)]
  if badId(id) then return redis.error_reply('EMQ_BAD_ID job ' .. i .. ' has a malformed id') end
  if KEYS[6 + i] ~= KEYS[5] .. id then return redis.error_reply('EMQ_BAD_ARG key ' .. (6 + i) .. ' is not the row of ' .. id) end
  if not string.match(ARGV[5 + 3 * (i - 1)], '^%d+$') then return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad token') end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out, ids, rows, zdone = {}, {}, {}, {}
for i = 1, n do
  local b = 3 * (i - 1)
  local id, token, result = ARGV[4 + b], ARGV[5 + b], ARGV[6 + b]
  local row = KEYS[6 + i]
  local cur = redis.call('HMGET', row, 'status', 'token')
  if cur[1] ~= 'active' or cur[2] ~= token then
    out[i] = 0
  else
    ids[#ids + 1] = id
    if keep == 0 then
      rows[#rows + 1] = row
    else
      redis.call('HSET', row, 'status', 'done', 'result', result, 'finished', now)
      zdone[#zdone + 1] = now
      zdone[#zdone + 1] = id
    end
    out[i] = 1
  end
end
-- Set operations are batched: one command for all the jobs of this call.
if #ids > 0 then
  redis.call('ZREM', KEYS[2], unpack(ids))
  emit(KEYS[6], elog, 'completed', ids, now)
end
if #rows > 0 then
  redis.call('DEL', unpack(rows))
  redis.call('HDEL', KEYS[4], unpack(ids))
end
if #zdone > 0 then
  redis.call('ZADD', KEYS[3], unpack(zdone))
  -- Bounded work per call: at most 1000 of the oldest done jobs leave the retention at once.
  local excess = math.min(redis.call('ZCARD', KEYS[3]) - keep, 1000)
  if excess > 0 then
    local old = redis.call('ZPOPMIN', KEYS[3], excess)
    local oldIds, oldRows = {}, {}
    for i = 1, #old, 2 do
      oldIds[#oldIds + 1] = old[i]
      oldRows[#oldRows + 1] = KEYS[5] .. old[i]
    end
    redis.call('DEL', unpack(oldRows))
    redis.call('HDEL', KEYS[4], unpack(oldIds))
  end
end
return out
