-- retention.lua: EchoMQ protocol v1. Sets a Bus topic's retention policy (replacing the old one)
-- in the topic's meta hash, where every node's trimmer reads it.
--
-- KEYS[1]  emq:{t}:bus:meta   topic meta hash (`v` version, policy fields)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  maxLen: entries to keep in the live log (1..1000000000, "" = no length bound)
-- ARGV[3]  maxAgeMs: age bound of the live log (1..3153600000000, "" = no age bound)
-- ARGV[4]  archiveMaxAgeMs: age bound of the archive (1..3153600000000, "" = keep forever)
-- Returns: 1
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG.
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local stored = redis.call('HGET', KEYS[1], 'v')
if stored and stored ~= V then
  return redis.error_reply('EMQ_VERSION topic data is protocol ' .. stored .. ', script speaks ' .. V)
end
if #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 4 arguments') end
local names = { 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs' }
local limits = { 1000000000, 3153600000000, 3153600000000 }
local set = {}
for i = 1, 3 do
  local v = ARGV[i + 1]
  if v ~= '' then
    if not string.match(v, '^[1-9]%d*$') or tonumber(v) > limits[i] then
      return redis.error_reply('EMQ_BAD_ARG ' .. names[i] .. ' must be an integer in 1..' .. limits[i])
    end
    set[#set + 1] = names[i]
    set[#set + 1] = v
  end
end

redis.call('HDEL', KEYS[1], 'maxLen', 'maxAgeMs', 'archiveMaxAgeMs')
if not stored then redis.call('HSET', KEYS[1], 'v', V) end
if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
return 1
