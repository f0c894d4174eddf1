-- cache-lease.lua: EchoMQ protocol v1. The cross-process fill lease of one cache key: among the
-- nodes that miss the same cold key at once, the one that takes the lease loads; the others
-- poll the entry briefly (or serve stale) instead of stampeding the origin. The lease expires by
-- itself, so a crashed loader only delays the others by the lease time.
--
-- KEYS[1]  emq:{c:<ns>:<key>}:lease   string: the holder's token (same slot as the entry)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  operation: "take" (set with PX when absent) or "drop" (delete only if held by this token)
-- ARGV[3]  the holder's token: 1..64 characters [0-9A-Za-z_-]
-- ARGV[4]  lease ms (1..600000; ignored by "drop", still validated)
-- Returns: 1 taken / dropped, 0 held by another token / not ours.
-- Errors:  EMQ_BAD_ARG (a wrong key or argument count, a bad operation or token, lease ms not a
--          decimal integer in range), EMQ_VERSION, EMQ_WRONGTYPE (the lease is not a string).
--          The lease is read before any write: a refusal writes nothing.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
local V = '1'
if #KEYS ~= 1 or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 1 key and 4 arguments') end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local op, token = ARGV[2], ARGV[3]
if op ~= 'take' and op ~= 'drop' then return redis.error_reply('EMQ_BAD_ARG operation must be take or drop') end
if #token < 1 or #token > 64 or not string.match(token, '^[0-9A-Za-z_-]+$') then
  return redis.error_reply('EMQ_BAD_ARG token must be 1..64 characters [0-9A-Za-z_-]')
end
local ms = int(ARGV[4], 1, 600000)
if not ms then return redis.error_reply('EMQ_BAD_ARG lease ms must be an integer in 1..600000') end
local held = redis.pcall('GET', KEYS[1])
if type(held) == 'table' and held.err then
  if string.find(held.err, 'WRONGTYPE', 1, true) then return redis.error_reply('EMQ_WRONGTYPE the fill lease is not a string') end
  return redis.error_reply(held.err)
end

if op == 'take' then
  if held then return 0 end
  redis.call('SET', KEYS[1], token, 'PX', ms)
  return 1
end
if held == token then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
