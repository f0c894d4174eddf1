-- cache-lease.lua: EchoMQ protocol v1. The cross-process fill lease of one cache key: among the
-- nodes that miss the same cold key at once, the one that takes the lease loads; the others
-- poll the entry briefly (or serve stale) instead of stampeding the origin. The lease expires by
-- itself, so a crashed loader only delays the others by the lease time.
--
-- KEYS[1]  emq:{c:<ns>:<key>}:lease   string: the holder's token (same slot as the entry)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  operation: "take" (SET NX PX) or "drop" (delete only if held by this token)
-- ARGV[3]  the holder's token: 1..64 characters [0-9A-Za-z_-]
-- ARGV[4]  lease ms (1..600000; ignored by "drop", still validated)
-- Returns: 1 taken / dropped, 0 held by another token / not ours.
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG.
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
if #KEYS ~= 1 or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 1 key and 4 arguments') end
local op, token = ARGV[2], ARGV[3]
if op ~= 'take' and op ~= 'drop' then return redis.error_reply('EMQ_BAD_ARG operation must be take or drop') end
if #token < 1 or #token > 64 or not string.match(token, '^[0-9A-Za-z_-]+$') then
  return redis.error_reply('EMQ_BAD_ARG token must be 1..64 characters [0-9A-Za-z_-]')
end
if not string.match(ARGV[4], '^%d+$') or tonumber(ARGV[4]) < 1 or tonumber(ARGV[4]) > 600000 then
  return redis.error_reply('EMQ_BAD_ARG lease ms must be an integer in 1..600000')
end

if op == 'take' then
  if redis.call('SET', KEYS[1], token, 'NX', 'PX', tonumber(ARGV[4])) then return 1 end
  return 0
end
if redis.call('GET', KEYS[1]) == token then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
