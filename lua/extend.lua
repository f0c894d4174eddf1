-- extend.lua: EchoMQ protocol v1. Extends the leases of one or many active jobs, each fenced by
-- its token: a job whose lease was lost (reaped, re-claimed, finished) is not extended.
--
-- KEYS[1]  emq:{q}:meta     queue meta hash
-- KEYS[2]  emq:{q}:active   zset id -> lease deadline
-- KEYS[3]  emq:{q}:job:     prefix of job rows
-- KEYS[3+i] emq:{q}:job:<id_i> the row of job i, for i = 1..n
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  new lease in ms from now (1..86400000)
-- ARGV[3]  n, the number of jobs (1..1000)
-- ARGV[4+2(i-1)], ARGV[5+2(i-1)] per job i: id, token
-- Returns: an array of n integers: 1 = extended, 0 = lease lost.
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG, EMQ_BAD_ID, EMQ_BATCH_TOO_LARGE.
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
local lease, n = tonumber(ARGV[2]), tonumber(ARGV[3])
if not lease or lease < 1 or lease > 86400000 then return redis.error_reply('EMQ_BAD_ARG lease must be 1..86400000 ms') end
if not n or n < 1 or n % 1 ~= 0 then return redis.error_reply('EMQ_BAD_ARG bad job count') end
if n > 1000 then return redis.error_reply('EMQ_BATCH_TOO_LARGE at most 1000 jobs per call') end
if #KEYS ~= 3 + n or #ARGV ~= 3 + 2 * n then return redis.error_reply('EMQ_BAD_ARG expected ' .. n .. ' rows and ' .. (2 * n) .. ' job arguments') end
for i = 1, n do
  local id = ARGV[4 + 2 * (i - 1)]
  if badId(id) then return redis.error_reply('EMQ_BAD_ID job ' .. i .. ' has a malformed id') end
  if KEYS[3 + i] ~= KEYS[3] .. id then return redis.error_reply('EMQ_BAD_ARG key ' .. (3 + i) .. ' is not the row of ' .. id) end
  if not string.match(ARGV[5 + 2 * (i - 1)], '^%d+$') then return redis.error_reply('EMQ_BAD_ARG job ' .. i .. ' has a bad token') end
end

local t = redis.call('TIME')
local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + lease
local out = {}
for i = 1, n do
  local id, token = ARGV[4 + 2 * (i - 1)], ARGV[5 + 2 * (i - 1)]
  local cur = redis.call('HMGET', KEYS[3 + i], 'status', 'token')
  if cur[1] == 'active' and cur[2] == token then
    redis.call('ZADD', KEYS[2], 'XX', deadline, id)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
