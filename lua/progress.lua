-- progress.lua: EchoMQ protocol v1. A running handler's checkpoint, progress or log line, fenced
-- by its claim token: a holder whose lease was lost (reaped, re-claimed, finished) is refused and
-- writes nothing. Each lands in the job's row, so it lives and goes with the row: `ckpt` (the
-- checkpoint: JSON text the next attempt starts with), `progress` (JSON text) and `log` (a JSON
-- array of the newest lines, at most the given count).
--
-- KEYS[1]  emq:{q}:meta       queue meta hash
-- KEYS[2]  emq:{q}:job:       prefix of job rows
-- KEYS[3]  emq:{q}:job:<id>   the job's row
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  id
-- ARGV[3]  fencing token (decimal digits)
-- ARGV[4]  what: "c" checkpoint, "p" progress, "l" log line
-- ARGV[5]  the value: for "c" JSON text of 1..ARGV[6] bytes; for "p" JSON text of 1..4096 bytes;
--          for "l" a line of 1..4096 bytes
-- ARGV[6]  for "c": the largest checkpoint in bytes (1..536870912); for "l": the most lines kept
--          (1..1000, the oldest go first); for "p": ignored (any decimal integer)
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Returns: 1 written; 0 refused (the row is not `active` under this token: stale holder).
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a fixed key that is not the one the key
--          grammar spells for the queue of KEYS[1], KEYS[3] not the row of the id, a value out of
--          its bounds), EMQ_VERSION, EMQ_BAD_ID, EMQ_WRONGTYPE. Every check comes before the
--          first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 3 or #ARGV ~= 6 then return redis.error_reply('EMQ_BAD_ARG expected 3 keys and 6 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'job:' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, job:, the row of one queue, in this order')
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
local id, token, what, value = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if badId(id) then return redis.error_reply('EMQ_BAD_ID malformed job id') end
if KEYS[3] ~= KEYS[2] .. id then return redis.error_reply('EMQ_BAD_ARG KEYS[3] is not the row of ' .. id) end
if #token > 20 or not string.match(token, '^%d+$') then return redis.error_reply('EMQ_BAD_ARG bad token') end
local limit
if what == 'c' then
  limit = int(ARGV[6], 1, 536870912)
  if not limit then return redis.error_reply('EMQ_BAD_ARG the checkpoint limit must be an integer in 1..536870912') end
elseif what == 'l' then
  limit = int(ARGV[6], 1, 1000)
  if not limit then return redis.error_reply('EMQ_BAD_ARG the log line count must be an integer in 1..1000') end
elseif what == 'p' then
  if not int(ARGV[6], 0, 9007199254740991) then return redis.error_reply('EMQ_BAD_ARG ARGV[6] must be a decimal integer') end
else
  return redis.error_reply('EMQ_BAD_ARG what must be c, p or l')
end
local max = what == 'c' and limit or 4096
if #value == 0 or #value > max then
  return redis.error_reply('EMQ_BAD_ARG the value must be 1..' .. max .. ' bytes, got ' .. #value)
end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' and meta.err then return redis.error_reply('EMQ_WRONGTYPE the queue meta key is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
local row = KEYS[3]
local cur = redis.pcall('HMGET', row, 'status', 'token', 'log')
if cur.err then return redis.error_reply('EMQ_WRONGTYPE the job row is not a hash') end
if cur[1] ~= 'active' or cur[2] ~= token then return 0 end
if what == 'c' then
  redis.call('HSET', row, 'ckpt', value)
elseif what == 'p' then
  redis.call('HSET', row, 'progress', value)
else
  -- A log written by another runtime that is not a JSON array starts over.
  local ok, lines = pcall(cjson.decode, cur[3] or '[]')
  if not ok or type(lines) ~= 'table' then lines = {} end
  lines[#lines + 1] = value
  local drop = #lines - limit
  if drop > 0 then
    local kept = {}
    for i = drop + 1, #lines do kept[#kept + 1] = lines[i] end
    lines = kept
  end
  redis.call('HSET', row, 'log', cjson.encode(lines))
end
return 1
