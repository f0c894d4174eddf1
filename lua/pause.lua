-- pause.lua: EchoMQ protocol v1. Pauses or resumes a queue fleet-wide. A paused queue's meta
-- holds `paused` = 1; claim.lua reads it in the meta HMGET it already makes and, while it is set,
-- claims and promotes nothing and answers { -2 }: every consumer blocks on `wake` from its next
-- claim on. Resume removes the field and pushes one wake marker (when `wake` is empty), so an
-- idle consumer claims at once and the chain wake-up reaches the others.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (`paused`)
-- KEYS[2]  emq:{q}:wake       list that idle consumers block on
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  `pause` or `resume`
-- Returns: 1 changed / 0 the queue already was in that state (nothing written).
-- Errors:  EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the key grammar
--          spells for the queue of KEYS[1], an unknown action), EMQ_VERSION, EMQ_WRONGTYPE.
--          Every check comes before the first write.
if #KEYS ~= 2 or #ARGV ~= 2 then return redis.error_reply('EMQ_BAD_ARG expected 2 keys and 2 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'wake' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, wake of one queue, in this order')
end
local action = ARGV[2]
if action ~= 'pause' and action ~= 'resume' then
  return redis.error_reply('EMQ_BAD_ARG the action must be pause or resume')
end
local meta = redis.pcall('HMGET', KEYS[1], 'v', 'paused')
if meta.err then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[1] .. ' is not a hash') end
if meta[1] and meta[1] ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta[1] .. ', script speaks ' .. V)
end
local wt = redis.call('TYPE', KEYS[2])['ok']
if wt ~= 'none' and wt ~= 'list' then
  return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[2] .. ' is a ' .. wt .. ', not a list')
end
local paused = meta[2] == '1'
if action == 'pause' then
  if paused then return 0 end
  redis.call('HSET', KEYS[1], 'paused', '1')
  return 1
end
if not paused then return 0 end
redis.call('HDEL', KEYS[1], 'paused')
if redis.call('LLEN', KEYS[2]) == 0 then redis.call('LPUSH', KEYS[2], '1') end
return 1
