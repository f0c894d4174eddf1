-- release.lua: EchoMQ protocol v1. Hands active jobs back unstarted or unfinished, each fenced by
-- its token: the job returns to the front of `pending` at once (instead of waiting for its lease
-- to expire) and the attempt its claim counted is given back. Used for prefetched jobs a
-- consumer never started and for handlers abandoned at shutdown.
--
-- KEYS[1]  emq:{q}:meta     queue meta hash
-- KEYS[2]  emq:{q}:active   zset id -> lease deadline
-- KEYS[3]  emq:{q}:pending  list of pending ids
-- KEYS[4]  emq:{q}:wake     list that idle consumers block on
-- KEYS[5]  emq:{q}:job:     prefix of job rows
-- KEYS[6]  emq:{q}:events   lifecycle events: sharded channel and bounded stream
-- KEYS[6+i] emq:{q}:job:<id_i> the row of job i, for i = 1..n
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  n, the number of jobs (1..1000)
-- ARGV[3+2(i-1)], ARGV[4+2(i-1)] per job i: id, token
-- Returns: an array of n integers: 1 = released, 0 = refused (stale token or not active).
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
local n = tonumber(ARGV[2])
if not n or n < 1 or n % 1 ~= 0 then return redis.error_reply('EMQ_BAD_ARG bad job count') end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 jobs per call') end
if #KEYS ~= 6 + n or #ARGV ~= 2 + 2 * n then return redis.error_reply('EMQ_BAD_ARG expected ' .. n .. ' rows and ' .. (2 * n) .. ' job arguments') end
for i = 1, n do
  local id = ARGV[3 + 2 * (i - 1)]
  if badId(id) then return redis.error_reply('EMQ_BAD_ID job ' .. i .. ' has a malformed id') end
  if KEYS[6 + i] ~= KEYS[5] .. id then return redis.error_reply('EMQ_BAD_ARG key ' .. (6 + i) .. ' is not the row of ' .. id) end
  if not string.match(ARGV[4 + 2 * (i - 1)], '^%d+$') then return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad token') end
end

local out, ids = {}, {}
local released = 0
-- Walk backwards so the first job given ends up first in line.
for i = n, 1, -1 do
  local id, token = ARGV[3 + 2 * (i - 1)], ARGV[4 + 2 * (i - 1)]
  local row = KEYS[6 + i]
  local cur = redis.call('HMGET', row, 'status', 'token')
  if cur[1] == 'active' and cur[2] == token then
    redis.call('ZREM', KEYS[2], id)
    redis.call('HSET', row, 'status', 'pending')
    redis.call('HINCRBY', row, 'attempts', -1)
    redis.call('RPUSH', KEYS[3], id)
    released = released + 1
    ids[#ids + 1] = id
    out[i] = 1
  else
    out[i] = 0
  end
end
if released > 0 and redis.call('LLEN', KEYS[4]) == 0 then redis.call('LPUSH', KEYS[4], '1') end
local t = redis.call('TIME')
emit(KEYS[6], elog, 'released', ids, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return out
