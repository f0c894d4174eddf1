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
-- ARGV[4+2(i-1)], ARGV[5+2(i-1)] per job i: id, token (decimal digits)
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Returns: an array of n integers: 1 = extended (deadline = server now + lease), 0 = lease lost,
--          2 = extended, and a cancel was requested (row `cancel` = 1): the holder should stop
--          its handler and end the attempt through retry.lua or release.lua (which end it
--          `cancelled`), not complete.lua.
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a wrong key count or a key that is not
--          the one the key grammar spells for the queue of KEYS[1], a row key that is not
--          the row of its id), EMQ_VERSION, EMQ_WRONGTYPE (a key holds another type), EMQ_BAD_ID,
--          EMQ_BATCH_TOO_LARGE. Every check comes before the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
-- The reply of a command run through redis.pcall, when it failed: WRONGTYPE becomes
-- EMQ_WRONGTYPE naming the key, any other error passes as it is; nil when it succeeded.
local function refused(r, key)
  if type(r) ~= 'table' or not r.err then return nil end
  if string.sub(r.err, 1, 9) == 'WRONGTYPE' then
    return redis.error_reply('EMQ_WRONGTYPE ' .. key .. ' holds a value of another type than the protocol gives it')
  end
  return r
end
if #KEYS < 3 or #ARGV < 3 then return redis.error_reply('EMQ_BAD_ARG expected at least 3 keys and 3 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
-- Every fixed key is the one the key grammar spells for the queue of KEYS[1] (§2 of
-- docs/protocol.md), in this order: meta, active, job:.
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'active' or KEYS[3] ~= b .. 'job:' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, active, job: of one queue, in this order')
end
local stored = redis.pcall('HGET', KEYS[1], 'v')
local e = refused(stored, KEYS[1])
if e then return e end
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
local lease, n = int(ARGV[2], 1, 86400000), int(ARGV[3], 1, 1000000000)
if not lease then return redis.error_reply('EMQ_BAD_ARG lease must be 1..86400000 ms') end
if not n then return redis.error_reply('EMQ_BAD_ARG bad job count') end
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
local out, zargs = {}, {}
for i = 1, n do
  local id, token, row = ARGV[4 + 2 * (i - 1)], ARGV[5 + 2 * (i - 1)], KEYS[3 + i]
  local cur = redis.pcall('HMGET', row, 'status', 'token', 'cancel')
  e = refused(cur, row)
  if e then return e end
  if cur[1] == 'active' and cur[2] == token then
    zargs[#zargs + 1] = deadline
    zargs[#zargs + 1] = id
    out[i] = cur[3] == '1' and 2 or 1
  else
    out[i] = 0
  end
end
-- The only write, one command for the whole batch; refused with WRONGTYPE it changes nothing.
if #zargs > 0 then
  e = refused(redis.pcall('ZADD', KEYS[2], 'XX', unpack(zargs)), KEYS[2])
  if e then return e end
end
return out
