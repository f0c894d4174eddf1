-- node.lua: EchoMQ protocol v1. Claims or renews a node number (0..1023) for one process, as a
-- lease, so two live processes never mint snowflakes with the same node number.
--
-- KEYS[1]  {emq}:node-seq   counter that spreads claims over the node numbers
-- KEYS[2]  {emq}:node:      prefix of node leases (a lease is this prefix followed by the number)
-- ARGV[1]  protocol version ("1")
-- ARGV[2]  owner: a random token naming the process (1..64 bytes)
-- ARGV[3]  lease in ms (1000..3600000)
-- ARGV[4]  the number to renew ("" to claim any free number)
-- Returns: the node number held, or -1 when the number to renew is held by another owner or
--          every number is taken.
-- Errors:  EMQ_VERSION, EMQ_BAD_ARG.
local V = '1'
if ARGV[1] ~= V then
  return redis.error_reply('EMQ_VERSION script speaks protocol ' .. V .. ', caller speaks ' .. tostring(ARGV[1]))
end
local owner, ttl, want = ARGV[2], tonumber(ARGV[3]), ARGV[4]
if #owner < 1 or #owner > 64 then return redis.error_reply('EMQ_BAD_ARG owner must be 1..64 bytes') end
if not ttl or ttl < 1000 or ttl > 3600000 then return redis.error_reply('EMQ_BAD_ARG lease must be 1000..3600000 ms') end
if want ~= '' then
  local n = tonumber(want)
  if not n or n < 0 or n > 1023 or n % 1 ~= 0 then return redis.error_reply('EMQ_BAD_ARG node number must be 0..1023') end
  local key = KEYS[2] .. n
  local cur = redis.call('GET', key)
  if cur == owner then
    redis.call('PEXPIRE', key, ttl)
    return n
  end
  if cur then return -1 end
  redis.call('SET', key, owner, 'PX', ttl)
  return n
end
local start = redis.call('INCR', KEYS[1]) % 1024
for i = 0, 1023 do
  local n = (start + i) % 1024
  if redis.call('SET', KEYS[2] .. n, owner, 'NX', 'PX', ttl) then return n end
end
return -1
