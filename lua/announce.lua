-- announce.lua: EchoMQ protocol v1. The registry of known queues, topics and cache namespaces:
-- a process announces a name as it starts using it (a producer at its first enqueue or publish,
-- a consumer as it starts), so operators list them without a SCAN of the keyspace. Each
-- registry is a zset of names, all at score 0, so it pages in name order (ZRANGE BYLEX).
--
-- KEYS[1]  `{emq}:queues`, `{emq}:topics` or `{emq}:caches`
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  `add` or `del`
-- ARGV[3..] 1..1000 names, each of the key grammar (`^[A-Za-z0-9_.-]{1,100}$`)
-- Returns: the number of names added (or removed) that were not (or were) there.
-- Errors:  EMQ_BAD_ARG (another key, an unknown action, no names or more than 1000),
--          EMQ_BAD_NAME, EMQ_VERSION, EMQ_WRONGTYPE. Every check comes before the first write.
local V = '1'
if #KEYS ~= 1 or #ARGV < 3 or #ARGV > 1002 then return redis.error_reply('EMQ_BAD_ARG expected 1 key and 3..1002 arguments') end
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local k = KEYS[1]
if k ~= '{emq}:queues' and k ~= '{emq}:topics' and k ~= '{emq}:caches' then
  return redis.error_reply('EMQ_BAD_ARG KEYS[1] must be {emq}:queues, {emq}:topics or {emq}:caches')
end
if ARGV[2] ~= 'add' and ARGV[2] ~= 'del' then return redis.error_reply('EMQ_BAD_ARG the action must be add or del') end
local args = {}
for i = 3, #ARGV do
  local n = ARGV[i]
  if #n < 1 or #n > 100 or not string.match(n, '^[A-Za-z0-9_.-]+$') then
    return redis.error_reply('EMQ_BAD_NAME a registered name must match ^[A-Za-z0-9_.-]{1,100}$')
  end
  if ARGV[2] == 'add' then args[#args + 1] = 0 end
  args[#args + 1] = n
end
local t = redis.call('TYPE', k)['ok']
if t ~= 'none' and t ~= 'zset' then return redis.error_reply('EMQ_WRONGTYPE ' .. k .. ' is a ' .. t .. ', not a zset') end
if ARGV[2] == 'add' then return redis.call('ZADD', k, unpack(args)) end
return redis.call('ZREM', k, unpack(args))
