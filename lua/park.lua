-- park.lua: EchoMQ protocol v1. Registers an idle consumer as parked (docs/protocol.md §5,
-- "Parked consumers"): until the registration runs out, enqueue.lua may lease one plain job
-- straight to it, pushing the lease text to `inbox:<tag>` (the list the consumer blocks on, with
-- `wake`) instead of `pending`. A registration is used up by the lease it receives; the consumer removes
-- it (ZREM) when it wakes for any other reason. Registrations that ran out are dropped here.
--
-- KEYS[1]  emq:{q}:meta       queue meta hash (protocol version `v`)
-- KEYS[2]  emq:{q}:parked     zset "<lease ms>:<tag>" -> registration end (epoch ms, server clock)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  the lease in ms a job enqueue leases to it gets (1..86400000)
-- ARGV[3]  the consumer's tag (1..32 of A-Z a-z 0-9): its inbox is `emq:{q}:inbox:<tag>`
-- ARGV[4]  how long the registration holds, in ms (1..86400000)
-- Every number is a decimal integer: no sign, fraction, exponent or blank.
-- Returns: 1.
-- Errors:  EMQ_BAD_ARG (a wrong key or argument count, a key that is not the one the key grammar
--          spells for the queue of KEYS[1], a malformed argument), EMQ_VERSION, EMQ_WRONGTYPE.
--          Every check comes before the first write.
if #KEYS ~= 2 or #ARGV ~= 4 then return redis.error_reply('EMQ_BAD_ARG expected 2 keys and 4 arguments') end
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local b = string.sub(KEYS[1], 1, -5)
if string.sub(KEYS[1], -5) ~= ':meta' or KEYS[2] ~= b .. 'parked' then
  return redis.error_reply('EMQ_BAD_ARG KEYS must be the keys meta, parked of one queue, in this order')
end
local function ms(s)
  if type(s) ~= 'string' or #s > 8 or not string.match(s, '^%d+$') then return nil end
  local v = tonumber(s)
  return v >= 1 and v <= 86400000 and v or nil
end
local lease, ttl, tag = ms(ARGV[2]), ms(ARGV[4]), ARGV[3]
if not lease or not ttl then return redis.error_reply('EMQ_BAD_ARG the lease and the registration ms must be integers in 1..86400000') end
if #tag == 0 or #tag > 32 or not string.match(tag, '^[A-Za-z0-9]+$') then
  return redis.error_reply('EMQ_BAD_ARG the tag must be 1..32 of A-Z a-z 0-9')
end
local meta = redis.pcall('HGET', KEYS[1], 'v')
if type(meta) == 'table' then return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[1] .. ' is not a hash') end
if meta and meta ~= V then
  return redis.error_reply('EMQ_VERSION queue data is protocol ' .. meta .. ', script speaks ' .. V)
end
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'none' and kind ~= 'zset' then
  return redis.error_reply('EMQ_WRONGTYPE ' .. KEYS[2] .. ' is a ' .. kind .. ', not a zset')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if kind == 'zset' then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. now) end
redis.call('ZADD', KEYS[2], now + ttl, lease .. ':' .. tag)
return 1
