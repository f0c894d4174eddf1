-- retention.lua: EchoMQ protocol v1. Sets a Bus topic's retention policy (replacing the old one)
-- in the topic's meta hash, where every node's trimmer reads it.
--
-- KEYS[1]  emq:{t}:bus:meta   topic meta hash (`v` version, policy fields)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  maxLen: entries to keep in the live log (decimal integer 1..1000000000, "" = no length bound)
-- ARGV[3]  maxAgeMs: age bound of the live log (1..3153600000000, "" = no age bound)
-- ARGV[4]  archiveMaxAgeMs: age bound of the archive (1..3153600000000, "" = keep forever)
-- Returns: 1
-- Errors:  EMQ_BAD_ARG (missing or malformed arguments, a key that is not a topic meta key),
--          EMQ_VERSION, EMQ_WRONGTYPE (the meta key is not a hash). Every check precedes the first write.
-- A decimal integer in [lo, hi], or nil: refuses NaN, inf, fractions, exponents and blanks.
local function int(s, lo, hi)
  if s == '0' then return (lo <= 0 and hi >= 0) and 0 or nil end -- the common value, without a pattern match
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^-?%d+$') then return nil end
  local v = tonumber(s)
  if v < lo or v > hi then return nil end
  return v
end
if #KEYS ~= 1 or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 1 key and 4 arguments') end
if not string.match(KEYS[1], '^emq:{[A-Za-z0-9_.-]+}:bus:meta$') then
  return redis.error_reply('EMQ_BAD_ARG the key must be a topic meta key')
end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local stored = redis.pcall('HGET', KEYS[1], 'v')
if type(stored) == 'table' and stored.err then return redis.error_reply('EMQ_WRONGTYPE the topic meta key is not a hash') end
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION topic data is protocol ' .. stored .. ', script speaks ' .. V)
end
local names = { 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs' }
local limits = { 1000000000, 3153600000000, 3153600000000 }
local set = {}
for i = 1, 3 do
  local v = ARGV[i + 1]
  if v ~= '' then
    local x = int(v, 1, limits[i])
    if not x then
      return redis.error_reply('EMQ_BAD_ARG ' .. names[i] .. ' must be an integer in 1..' .. limits[i])
    end
    set[#set + 1] = names[i]
    set[#set + 1] = string.format('%d', x)
  end
end

redis.call('HDEL', KEYS[1], 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs')
if not stored then redis.call('HSET', KEYS[1], 'v', V) end
if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
return 1
